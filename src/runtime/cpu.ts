/**
 * What this CPU's int8 dot products are. ONNX Runtime's x64 kernels multiply unsigned activations by signed
 * weights in one instruction, accumulating in 32 bits, where the CPU has VNNI (AVX-512 or AVX); without it
 * their 16-bit pairwise step can saturate on signed weights. Read from /proc/cpuinfo (Linux); false where
 * that cannot be read.
 */
import { readFileSync } from 'node:fs';

let info: { vnni: boolean; x86: boolean } | undefined;

function cpu(): { vnni: boolean; x86: boolean } {
  if (!info) {
    try {
      const text = readFileSync('/proc/cpuinfo', 'utf8');
      info = { vnni: /^flags\s*:.*\b(avx512_vnni|avx_vnni)\b/m.test(text), x86: /^flags\s*:/m.test(text) };
    } catch {
      info = { vnni: false, x86: false };
    }
  }
  return info;
}

export const hasVnni = (): boolean => cpu().vnni;

/** x64 without VNNI: where ONNX Runtime's uint8-by-int8 products can saturate (../services/inference/int8-weights.ts). */
export const int8ProductsSaturate = (): boolean => cpu().x86 && !cpu().vnni;
