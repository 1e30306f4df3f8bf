"""Rewrite every MatMulNBits node's accuracy_level with the onnx package: 'unset' removes the attribute (as
transformers.js' quantizer, which made the hub's q4 files, leaves it), a number sets it.

  /usr/bin/python3 scripts/models/nbits-accuracy-level.py SRC OUT unset|LEVEL [--external]

--external saves every initializer into OUT_data beside OUT (as exports over 2 GB come). Prints the number
of MatMulNBits nodes.
"""
import os
import sys

import onnx

src, out, level = sys.argv[1:4]
m = onnx.load(src)
count = 0


def edit(graph):
    """Every MatMulNBits of the graph and of the subgraphs its nodes carry (If, Loop, Scan branches)."""
    global count
    for n in graph.node:
        if n.op_type == "MatMulNBits":
            keep = [a for a in n.attribute if a.name != "accuracy_level"]
            del n.attribute[:]
            n.attribute.extend(keep)
            if level != "unset":
                n.attribute.append(onnx.helper.make_attribute("accuracy_level", int(level)))
            count += 1
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                edit(g)


edit(m.graph)
if "--external" in sys.argv[4:]:
    onnx.save_model(m, out, save_as_external_data=True, location=os.path.basename(out) + "_data", size_threshold=0)
else:
    onnx.save(m, out)
print(count)
