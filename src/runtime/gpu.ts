/**
 * WebGPU adapter probe (runtime questions live in src/runtime/ only).
 * Deno and browsers expose `navigator.gpu`; Node and Bun do not (there onnxruntime-node's own WebGPU
 * provider, Dawn, finds its adapter at session creation, so only trying tells).
 */
export interface WebGpuProbe {
  /** `navigator.gpu` exists in this runtime. */
  api: boolean;
  /** An adapter was granted. */
  adapter: boolean;
  /** A software adapter (lavapipe, SwiftShader, a fallback adapter): works, but slower than the CPU path. */
  software: boolean;
  /** Vendor/architecture/description as reported, for logs. */
  description: string;
}

interface GpuLike {
  requestAdapter(): Promise<
    null | { isFallbackAdapter?: boolean; info?: { vendor?: string; architecture?: string; description?: string } }
  >;
}

let cached: Promise<WebGpuProbe> | undefined;

export function probeWebGpu(): Promise<WebGpuProbe> {
  cached ??= (async () => {
    const gpu = (globalThis as { navigator?: { gpu?: GpuLike } }).navigator?.gpu;
    if (!gpu) return { api: false, adapter: false, software: false, description: 'no navigator.gpu in this runtime' };
    try {
      const a = await gpu.requestAdapter();
      if (!a) return { api: true, adapter: false, software: false, description: 'no WebGPU adapter' };
      const info = a.info ?? {};
      const description = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unknown adapter';
      const software = !!a.isFallbackAdapter || /llvmpipe|lavapipe|swiftshader|software/i.test(description);
      return { api: true, adapter: true, software, description };
    } catch (e) {
      return { api: true, adapter: false, software: false, description: `requestAdapter failed: ${(e as Error).message}` };
    }
  })();
  return cached;
}
