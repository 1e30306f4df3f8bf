/**
 * A merged decoder's shape in small, built by the real `onnx` Python package: two MatMulNBits (4 bits,
 * blocks of 32, no accuracy_level) inside the two branches of an `If`, both reading the same weights,
 * which lie in the main graph. Input X [2, 64] float and C (bool scalar, the branch); output Y [2, 48]:
 * X·W on the then-branch, −X·W on the else-branch.
 */
import { execFileSync } from 'node:child_process';

const BUILD = `
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
rng = np.random.default_rng(7)
K, N, blk = 64, 48, 32
B = numpy_helper.from_array(rng.integers(0, 256, (N, K // blk, blk // 2), dtype=np.uint8), 'B')
S = numpy_helper.from_array(rng.random(N * K // blk, dtype=np.float32) * 0.1 + 0.01, 'S')
def matmul(out):
    return helper.make_node('MatMulNBits', ['X', 'B', 'S'], [out], domain='com.microsoft', K=K, N=N, bits=4, block_size=blk)
out = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, N])
then_g = helper.make_graph([matmul('Yt')], 'then', [], [out('Yt')])
else_g = helper.make_graph([matmul('T'), helper.make_node('Neg', ['T'], ['Ye'])], 'else', [], [out('Ye')])
g = helper.make_graph([helper.make_node('If', ['C'], ['Y'], then_branch=then_g, else_branch=else_g)], 'merged',
    [helper.make_tensor_value_info('X', TensorProto.FLOAT, [2, K]), helper.make_tensor_value_info('C', TensorProto.BOOL, [])],
    [out('Y')], [B, S])
m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('com.microsoft', 1)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
`;

export const MERGED_K = 64;
export const MERGED_N = 48;

/** Writes the model to `path`. */
export function writeMergedNbitsModel(path: string): void {
  execFileSync('/usr/bin/python3', ['-c', BUILD, path]);
}

/** An input for it: X, deterministic. */
export const mergedInput = (): Float32Array => Float32Array.from({ length: 2 * MERGED_K }, (_, i) => Math.sin(i * 0.37) * 2);
