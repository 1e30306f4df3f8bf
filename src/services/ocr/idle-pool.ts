/**
 * A heavy engine (tesseract workers, ONNX sessions) loaded lazily on first use, shared by every request,
 * and released after it has been idle for `idleMs` (no user holding it).
 */
export class IdleResource<T> {
  private loading: Promise<T> | undefined;
  private users = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly load: () => Promise<T>,
    private readonly dispose: (value: T) => Promise<void> | void,
    private readonly idleMs = 120_000,
  ) {}

  /** Runs fn with the engine, loading it first if needed; the idle clock restarts when the last user ends. */
  async use<R>(fn: (value: T) => Promise<R>): Promise<R> {
    this.users++;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    try {
      if (!this.loading) {
        this.loading = this.load();
        this.loading.catch(() => {
          this.loading = undefined;
        });
      }
      return await fn(await this.loading);
    } finally {
      if (--this.users === 0) this.arm();
    }
  }

  get loaded(): boolean {
    return this.loading !== undefined;
  }

  /** Releases now (when no one uses it). */
  async release(): Promise<void> {
    if (this.users > 0 || !this.loading) return;
    const p = this.loading;
    this.loading = undefined;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    try {
      await this.dispose(await p);
    } catch { /* a failed load has nothing to release */ }
  }

  private arm() {
    if (this.idleMs <= 0) return;
    this.timer = setTimeout(() => {
      void this.release();
    }, this.idleMs);
    (this.timer as { unref?: () => void }).unref?.();
  }
}
