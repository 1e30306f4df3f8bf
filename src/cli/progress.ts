/**
 * Pull progress as `ollama pull` draws it: one line per layer (digest) with a bar, bytes, speed and time
 * left, redrawn in place on a terminal; elsewhere one line per step and per layer when it completes.
 */
import { stderrIsTTY, terminalColumns, writeErr } from '../runtime/process.ts';
import { humanBytes, humanDuration } from './output.ts';

export interface Progress {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

interface Layer {
  status: string;
  digest?: string;
  total: number;
  completed: number;
  startedAt: number;
  startBytes: number;
  speed: number;
  lastAt: number;
  lastBytes: number;
  done: boolean;
}

export class ProgressView {
  readonly #layers: Layer[] = [];
  #drawn = 0;
  readonly #tty: boolean;

  constructor(tty = stderrIsTTY(), private readonly now = () => performance.now()) {
    this.#tty = tty;
  }

  update(p: Progress): void {
    const key = p.digest ? `${p.digest}` : p.status;
    let layer = this.#layers.find((l) => (l.digest ?? l.status) === key);
    const t = this.now();
    if (!layer) {
      layer = {
        status: p.status,
        digest: p.digest,
        total: p.total ?? 0,
        completed: p.completed ?? 0,
        startedAt: t,
        startBytes: p.completed ?? 0,
        speed: 0,
        lastAt: t,
        lastBytes: p.completed ?? 0,
        done: false,
      };
      this.#layers.push(layer);
      if (!this.#tty && !p.digest) writeErr(`${p.status}\n`);
    }
    layer.status = p.status;
    if (p.total !== undefined) layer.total = p.total;
    if (p.completed !== undefined) {
      const dt = (t - layer.lastAt) / 1000;
      if (dt > 0.25) {
        const inst = (p.completed - layer.lastBytes) / dt;
        layer.speed = layer.speed ? layer.speed * 0.7 + inst * 0.3 : inst; // smoothed, as a human reads it
        layer.lastAt = t;
        layer.lastBytes = p.completed;
      }
      layer.completed = p.completed;
    }
    const finished = layer.total > 0 && layer.completed >= layer.total;
    if (!this.#tty && p.digest && finished && !layer.done) writeErr(`${this.line(layer)}\n`);
    layer.done ||= finished;
    if (this.#tty) this.draw();
  }

  /** One layer's line: `pulling 3f2a…  45% ▕████      ▏ 12 MB/27 MB  3.1 MB/s  5s`. */
  line(l: Layer): string {
    if (!l.digest || !l.total) return l.status;
    const pct = Math.min(100, Math.floor((l.completed / l.total) * 100));
    const name = `${l.status.replace(/\s+[0-9a-f:]{12,}.*$/i, '')} ${l.digest.replace(/^sha256[:-]/, '').slice(0, 12)}`;
    const sizes = `${humanBytes(l.completed)}/${humanBytes(l.total)}`;
    const avg = (l.completed - l.startBytes) / Math.max(1e-3, (l.lastAt - l.startedAt) / 1000);
    const speed = l.speed > 0 ? l.speed : avg;
    const tail = l.completed >= l.total
      ? ''
      : speed > 0
      ? `  ${humanBytes(speed)}/s  ${humanDuration((l.total - l.completed) / speed)}`
      : '';
    const width = Math.max(10, Math.min(30, terminalColumns() - name.length - sizes.length - tail.length - 14));
    const fill = Math.round((pct / 100) * width);
    return `${name} ${String(pct).padStart(3)}% ▕${'█'.repeat(fill)}${' '.repeat(width - fill)}▏ ${sizes}${tail}`;
  }

  draw(): void {
    const up = this.#drawn ? `\x1b[${this.#drawn}A` : '';
    writeErr(up + this.#layers.map((l) => `\r\x1b[2K${this.line(l)}\n`).join(''));
    this.#drawn = this.#layers.length;
  }
}
