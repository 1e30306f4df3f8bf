"""Weight quantizers for exported ONNX graphs, in numpy (no onnxruntime python package on this machine).

q8: every MatMul with a 2-D constant weight becomes DynamicQuantizeLinear + MatMulInteger (uint8 activations,
    int8 weights with one scale per output column), the same graph shape onnxruntime's `quantize_dynamic` produces
    (transformers.js names it model_quantized.onnx).
q4: every such MatMul becomes com.microsoft MatMulNBits (4 bits, block 32, per-block scale as Q4_0's, default zero
    point 8, accuracy_level 4: int8 activation kernels), as in transformers.js' model_q4.onnx.
"""
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def _weights(model):
    return {t.name: t for t in model.graph.initializer}


def _matmul_targets(model, min_elems):
    inits = _weights(model)
    for idx, node in enumerate(model.graph.node):
        if node.op_type == "MatMul" and node.input[1] in inits:
            w = inits[node.input[1]]
            if len(w.dims) == 2 and w.data_type == TensorProto.FLOAT and w.dims[0] * w.dims[1] >= min_elems:
                yield idx, node, w


def _rebuild(model, replace, new_inits, drop, extra_opsets=()):
    # keyed by node index: protobuf wrappers are recreated per access, so id() is not stable
    nodes = []
    for i, n in enumerate(model.graph.node):
        nodes.extend(replace.get(i, [n]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    keep = [t for t in model.graph.initializer if t.name not in drop]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep + new_inits)
    for dom, ver in extra_opsets:
        if not any(o.domain == dom for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(dom, ver))
    return model


def quantize_q8(model, min_elems=0):
    replace, new_inits, drop = {}, [], set()
    for i, (idx, node, w) in enumerate(_matmul_targets(model, min_elems)):
        W = numpy_helper.to_array(w).astype(np.float32)
        scale = (np.maximum(np.abs(W).max(0), 1e-8) / 127.0).astype(np.float32)  # one per output column
        Wq = np.clip(np.round(W / scale), -127, 127).astype(np.int8)
        p = f"q8_{i}"
        new_inits += [numpy_helper.from_array(Wq, w.name + "_quantized"),
                      numpy_helper.from_array(scale, w.name + "_scale"),
                      numpy_helper.from_array(np.array(0, np.int8), w.name + "_zero_point")]
        drop.add(w.name)
        a, y = node.input[0], node.output[0]
        replace[idx] = [
            helper.make_node("DynamicQuantizeLinear", [a], [f"{p}_a", f"{p}_as", f"{p}_az"], name=f"{p}_dql"),
            helper.make_node("MatMulInteger", [f"{p}_a", w.name + "_quantized", f"{p}_az", w.name + "_zero_point"],
                             [f"{p}_i32"], name=f"{p}_mmi"),
            helper.make_node("Cast", [f"{p}_i32"], [f"{p}_f"], to=TensorProto.FLOAT, name=f"{p}_cast"),
            helper.make_node("Mul", [f"{p}_as", w.name + "_scale"], [f"{p}_s"], name=f"{p}_smul"),
            helper.make_node("Mul", [f"{p}_f", f"{p}_s"], [y], name=f"{p}_out"),
        ]
    # a weight shared by two MatMuls must only be dropped once both are rewritten: dedupe initializers
    seen, uniq = set(), []
    for t in new_inits:
        if t.name not in seen:
            seen.add(t.name)
            uniq.append(t)
    return _rebuild(model, replace, uniq, drop)


def quantize_q4(model, block=32, min_elems=0, rule="q4_0"):
    """rule "q4_0": scales as llama.cpp's Q4_0 (svc's quantizer); "absmax7": max|w| / 7, rounded to nearest,
    as transformers.js' quantizer makes the hub's q4 files."""
    replace, new_inits, drop = {}, [], set()
    for i, (idx, node, w) in enumerate(_matmul_targets(model, min_elems)):
        W = numpy_helper.to_array(w).astype(np.float32)  # [K, N]
        K, N = W.shape
        nb = (K + block - 1) // block
        Wt = np.zeros((N, nb * block), np.float32)
        Wt[:, :K] = W.T
        blocks = Wt.reshape(N, nb, block)
        if rule == "absmax7":
            scale = np.maximum(np.abs(blocks).max(-1), 1e-8) / 7.0  # [N, nb]
            q = np.clip(np.round(blocks / scale[..., None]) + 8, 0, 15).astype(np.uint8)
        else:
            # as llama.cpp's Q4_0: the value of largest magnitude / -8 (it lands on code 0), codes rounded half up
            signed_max = np.take_along_axis(blocks, np.abs(blocks).argmax(-1)[..., None], -1)[..., 0]
            scale = (signed_max / -8.0).astype(np.float32)  # [N, nb]
            inv = np.where(scale != 0, 1.0 / np.where(scale != 0, scale, 1), 0).astype(np.float32)
            q = np.minimum(15, np.floor(blocks.astype(np.float64) * inv[..., None].astype(np.float64) + 8.5)).astype(np.uint8)
            scale = scale.astype(np.float16).astype(np.float32)  # stored as a half, as Q4_0 stores it
        packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # low nibble first
        name = w.name + "_q4"
        if name not in {t.name for t in new_inits}:
            new_inits += [numpy_helper.from_array(packed, name),
                          numpy_helper.from_array(scale.astype(np.float32).reshape(-1), w.name + "_q4_scales")]
        drop.add(w.name)
        replace[idx] = [helper.make_node(
            "MatMulNBits", [node.input[0], name, w.name + "_q4_scales"], [node.output[0]],
            name=f"q4_{i}", domain="com.microsoft", K=K, N=N, bits=4, block_size=block, accuracy_level=4)]
    return _rebuild(model, replace, new_inits, drop, extra_opsets=[("com.microsoft", 1)])


def quantize_gather_q8(model):
    """Embedding tables (Gather on a 2-D constant): int8 rows + DequantizeLinear after the Gather."""
    inits = _weights(model)
    replace, new_inits, drop = {}, [], set()
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Gather" or node.input[0] not in inits:
            continue
        w = inits[node.input[0]]
        if len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            continue
        W = numpy_helper.to_array(w)
        scale = np.float32(max(np.abs(W).max(), 1e-8) / 127.0)
        new_inits += [numpy_helper.from_array(np.clip(np.round(W / scale), -127, 127).astype(np.int8), w.name + "_g8"),
                      numpy_helper.from_array(np.array(scale, np.float32), w.name + "_g8_scale"),
                      numpy_helper.from_array(np.array(0, np.int8), w.name + "_g8_zp")]
        drop.add(w.name)
        replace[i] = [
            helper.make_node("Gather", [w.name + "_g8", node.input[1]], [f"g8_{i}_q"], name=f"g8_{i}", axis=0),
            helper.make_node("DequantizeLinear", [f"g8_{i}_q", w.name + "_g8_scale", w.name + "_g8_zp"],
                             [node.output[0]], name=f"g8_{i}_dq"),
        ]
    still_used = {x for j, n in enumerate(model.graph.node) if j not in replace for x in n.input}
    drop -= still_used  # e.g. a tied embedding also feeding an unquantized MatMul
    return _rebuild(model, replace, new_inits, drop)
