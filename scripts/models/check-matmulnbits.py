"""Independent check of a q4 ONNX graph against the fp32 graph it was made from.

Written from the com.microsoft MatMulNBits definition (ONNX Runtime's ContribOperators.md), not from the
quantizer under test:
  B      uint8 [N, k_blocks, blob_size], blob_size = block_size * bits / 8; element k of column n sits in
         block k // block_size, byte (k % block_size) // 2, the low nibble holding the even element;
  scales float [N * k_blocks] (or [N, k_blocks]);
  zero_points absent -> 2^(bits - 1) = 8;   W[k, n] = (q - 8) * scale[n, k // block_size].
Embedding tables quantized as Gather(int8 table) -> DequantizeLinear(scale, zero point) are checked the same way.

Usage: /usr/bin/python3 scripts/models/check-matmulnbits.py FP32.onnx Q4.onnx [FAKE.onnx]  -> one JSON object on stdout
With FAKE.onnx: also writes the fp32 graph with every quantized weight replaced by its numpy dequantization
("fake quantization"): what the q4 graph must compute, up to its int8 activations.
"""
import json
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def dequant_nbits(B, scales, K, N, bits, block):
    assert bits == 4
    k_blocks = (K + block - 1) // block
    B = B.reshape(N, k_blocks, block * bits // 8)
    lo = (B & 0x0F).astype(np.int32)
    hi = (B >> 4).astype(np.int32)
    q = np.empty((N, k_blocks, block), np.int32)
    q[..., 0::2] = lo
    q[..., 1::2] = hi
    s = scales.reshape(N, k_blocks).astype(np.float32)
    W = (q - 8).astype(np.float32) * s[..., None]  # [N, k_blocks, block]
    return W.reshape(N, k_blocks * block)[:, :K].T, q.reshape(N, -1)[:, :K].T  # [K, N]


def reference_q4(W, block):
    """llama.cpp's Q4_0 rounding (ggml's quantize_row_q4_0_ref): per block, d = (the value of largest
    magnitude) / -8 in fp32, code = min(15, trunc(w / d + 8.5)) with w / d taken as w * (1 / d), zero point 8,
    and d stored as a half (GGML_FP32_TO_FP16: nearest, ties to even). Returns the codes, the stored scale and
    the fp32 d."""
    K, N = W.shape
    k_blocks = (K + block - 1) // block
    Wt = np.zeros((N, k_blocks * block), np.float32)
    Wt[:, :K] = W.T
    b = Wt.reshape(N, k_blocks, block)
    idx = np.abs(b).argmax(-1)
    amax = np.take_along_axis(b, idx[..., None], -1)[..., 0]
    d = (amax / np.float32(-8)).astype(np.float32)
    inv = np.zeros_like(d)
    np.divide(np.float32(1), d, out=inv, where=d != 0)
    r = b.astype(np.float64) * inv[..., None].astype(np.float64) + 8.5
    q = np.minimum(15, np.trunc(r)).astype(np.int32)
    return q.reshape(N, -1)[:, :K].T, d.astype(np.float16).astype(np.float32), d


def absmax7_q4(W, block):
    """transformers.js' q4 recipe, for comparison: scale = max|w| / 7, codes rounded to nearest, zero point 8."""
    K, N = W.shape
    k_blocks = (K + block - 1) // block
    Wt = np.zeros((N, k_blocks * block), np.float32)
    Wt[:, :K] = W.T
    b = Wt.reshape(N, k_blocks, block)
    s = (np.maximum(np.abs(b).max(-1), 1e-8) / np.float32(7)).astype(np.float32)
    q = np.clip(np.floor(b / s[..., None] + 0.5), -8, 7)
    return (q * s[..., None]).reshape(N, -1)[:, :K].T


def main(fp32_path, q4_path, fake_path=None):
    f = onnx.load(fp32_path)
    q = onnx.load(q4_path)
    f_inits = {t.name: numpy_helper.to_array(t) for t in f.graph.initializer}
    q_inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    f_by_out = {n.output[0]: n for n in f.graph.node}
    out = {"matmulnbits": [], "gathers": [], "fp32_matmuls_left": 0}
    fake = {}
    for n in q.graph.node:
        if n.op_type == "MatMulNBits":
            a = attrs(n)
            orig = f_by_out[n.output[0]]
            W = f_inits[orig.input[1]].astype(np.float32)
            K, N = W.shape
            Wd, q_ours = dequant_nbits(q_inits[n.input[1]], q_inits[n.input[2]], a["K"], a["N"], a["bits"], a["block_size"])
            q_ref, s_ref, d_ref = reference_q4(W, a["block_size"])
            s_ours = q_inits[n.input[2]].reshape(s_ref.shape)
            Wref = ((q_ref - 8).astype(np.float32).T.reshape(N, -1, a["block_size"]) * s_ref[..., None]).reshape(N, -1)[:, :K].T \
                if K % a["block_size"] == 0 else None
            fake[orig.input[1]] = Wd.astype(np.float32)
            # rounding error per element: half a step of d, and a code of at most 8 steps times the scale's own
            # rounding to a half
            per_block = lambda v: np.repeat(v, a["block_size"], axis=1)[:, :K].T  # noqa: E731
            half_step = np.abs(per_block(d_ref)) / 2
            bound = half_step * (1 + 1e-4) + 8 * np.abs(per_block(s_ours) - per_block(d_ref))
            over = np.abs(Wd - W) > bound
            out["matmulnbits"].append({
                "weight": orig.input[1], "K": K, "N": N, "attrs": {k: a[k] for k in a},
                "domain": n.domain, "inputs": len(n.input),
                "max_err_over_half_scale": float((np.abs(Wd - W) / np.maximum(half_step, 1e-12)).max()),
                "scale_max_rel_diff": float((np.abs(s_ours - s_ref) / np.maximum(np.abs(s_ref), 1e-30)).max()),
                "codes_differing": int((q_ours != q_ref).sum()),
                "dequant_max_abs_diff_vs_reference": float(np.abs(Wd - Wref).max()) if Wref is not None else None,
                "rel_fro_err": float(np.linalg.norm(Wd - W) / np.linalg.norm(W)),
                "rel_fro_err_absmax7": float(np.linalg.norm(absmax7_q4(W, a["block_size"]) - W) / np.linalg.norm(W)),
                # beyond half a step: only the values clamped at +7 (code 15), i.e. of the other sign at full magnitude
                "over_half_step_not_clamped": int((over & (q_ours != 15)).sum()),
            })
        elif n.op_type == "DequantizeLinear" and n.input[0] not in q_inits:
            g = next((m for m in q.graph.node if n.input[0] in m.output and m.op_type == "Gather"), None)
            if g is None or g.input[0] not in q_inits:
                continue
            orig = f_by_out[n.output[0]]
            W = f_inits[orig.input[0]].astype(np.float32)
            table = q_inits[g.input[0]].astype(np.float32)
            scale = float(q_inits[n.input[1]])
            zp = float(q_inits[n.input[2]]) if len(n.input) > 2 else 0.0
            Wd = (table - zp) * scale
            fake[orig.input[0]] = Wd.astype(np.float32)
            out["gathers"].append({"table": orig.input[0], "dtype": str(q_inits[g.input[0]].dtype),
                                   "max_err_over_half_scale": float(np.abs(Wd - W).max() / (scale / 2)),
                                   "scale_vs_absmax_over_127": float(scale / (np.abs(W).max() / 127))})
        elif n.op_type == "MatMul" and len(n.input) > 1 and n.input[1] in q_inits and q_inits[n.input[1]].ndim == 2:
            out["fp32_matmuls_left"] += 1
    out["opsets"] = {o.domain: o.version for o in q.opset_import}
    if fake_path:
        for t in f.graph.initializer:
            if t.name in fake:
                t.CopyFrom(numpy_helper.from_array(fake[t.name], t.name))
        onnx.save(f, fake_path)
        # the q4 graph with accuracy_level 0 (fp32 activations): must match the fake graph to float rounding
        for n in q.graph.node:
            for a in n.attribute:
                if n.op_type == "MatMulNBits" and a.name == "accuracy_level":
                    a.i = 0
        onnx.save(q, fake_path + ".level0.onnx")
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
