/**
 * A model as ONNX Runtime computes it exactly on every x64 CPU, for tests that take its outputs as the
 * reference: each `MatMulInteger`'s int8 weight and zero point stored as uint8, moved up by 128 (the same
 * differences, so the same integer products), by scripts/models/q8-unsigned.py (the onnx Python package, not
 * svc's own graph code). On x64 without VNNI, ONNX Runtime multiplies uint8 activations by int8 weights with a
 * 16-bit pairwise step that saturates (two products of 255 * 127 give 32767, not 64770); uint8 by uint8 it
 * computes exactly everywhere.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `model` with its int8 `MatMulInteger` weights made uint8 (a model without any comes back as it was). */
export function unsignedJudge(model: Uint8Array): Uint8Array {
  const dir = mkdtempSync(join(tmpdir(), 'unsigned-judge-'));
  try {
    const [src, out] = [join(dir, 'in.onnx'), join(dir, 'out.onnx')];
    writeFileSync(src, model);
    execFileSync('/usr/bin/python3', ['scripts/models/q8-unsigned.py', src, out]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
