/**
 * What this CPU's int8 dot products are. ONNX Runtime's x64 kernels multiply unsigned activations by signed
 * weights in one instruction, accumulating in 32 bits, where the CPU has VNNI (AVX-512 or AVX); without it
 * their 16-bit pairwise step can saturate on signed weights. Read from /proc/cpuinfo (Linux); false where
 * that cannot be read.
 */
import { readFileSync } from 'node:fs';

let vnni: boolean | undefined;

export function hasVnni(): boolean {
  if (vnni === undefined) {
    try {
      vnni = /^flags\s*:.*\b(avx512_vnni|avx_vnni)\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
    } catch {
      vnni = false;
    }
  }
  return vnni;
}
