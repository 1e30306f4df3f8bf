"""Rewrite a q8 graph's int8 MatMulInteger weights as uint8 with the onnx package, as transformers.js' quantizer
stores them in graphs that have a Conv or one of ONNX Runtime's attention operators: every weight and its
zero point moved up by 128 (the same products).

  /usr/bin/python3 scripts/models/q8-unsigned.py SRC OUT [--int32-zero-points | --no-zero-points]

--int32-zero-points stores each zero point in the tensor's int32_data field instead of raw bytes (as
onnx.helper.make_tensor does for small tensors); --no-zero-points drops them (uint8's default zero point is
0, so that graph computes other numbers than SRC). Prints the number of weights rewritten.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

src, out = sys.argv[1:3]
flags = sys.argv[3:]
m = onnx.load(src)
inits = {t.name: t for t in m.graph.initializer}
done = set()
for n in m.graph.node:
    if n.op_type != "MatMulInteger" or len(n.input) < 2 or n.input[1] not in inits:
        continue
    b = n.input[1]
    zp = n.input[3] if len(n.input) > 3 else ""
    if b not in done:
        W = numpy_helper.to_array(inits[b])
        if W.dtype != np.int8:
            continue
        inits[b].CopyFrom(numpy_helper.from_array((W.astype(np.int16) + 128).astype(np.uint8), b))
        if not zp and "--no-zero-points" not in flags:
            # int8's absent zero point is 0: uint8's must be 128, so one is added
            zp = b + "_zero_point"
            inits[zp] = m.graph.initializer.add()
            inits[zp].CopyFrom(numpy_helper.from_array(np.array(0, dtype=np.int8), zp))
        if zp:
            Z = (numpy_helper.to_array(inits[zp]).astype(np.int16) + 128).astype(np.uint8)
            if "--int32-zero-points" in flags:
                inits[zp].CopyFrom(helper.make_tensor(zp, onnx.TensorProto.UINT8, Z.shape, Z.flatten().tolist()))
            else:
                inits[zp].CopyFrom(numpy_helper.from_array(Z, zp))
        done.add(b)
    if "--no-zero-points" in flags and zp:
        n.input[3] = ""
    elif not zp and b + "_zero_point" in inits:
        n.input.extend([""] * (4 - len(n.input)))
        n.input[3] = b + "_zero_point"
onnx.save(m, out)
print(len(done))
