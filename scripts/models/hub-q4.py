"""A q4 graph made as transformers.js' quantizer makes the hub's model_q4.onnx: every MatMul with a 2-D fp32
weight becomes MatMulNBits (4 bits, blocks of 32, symmetric, scale max|w| / 7) without accuracy_level, and the embedding
tables stay fp32 (its quantizer leaves Gather alone).

  /usr/bin/python3 scripts/models/hub-q4.py FP32_SRC OUT
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quantize import quantize_q4  # noqa: E402

src, out = sys.argv[1:3]
m = quantize_q4(onnx.load(src), rule="absmax7")
for n in m.graph.node:
    if n.op_type == "MatMulNBits":
        keep = [a for a in n.attribute if a.name != "accuracy_level"]
        del n.attribute[:]
        n.attribute.extend(keep)
onnx.save(m, out)
