#!/usr/bin/python3
"""Move a generated benchmark model to another machine without its weights.

`pack` keeps each ONNX graph, the configs and the tokenizer, and turns every large initializer into a recipe
(its type, size and the statistics of its values) with its data moved to an external file that is not written.
`fill` writes that file on the other machine: new random values drawn from each recipe (normal with the
original mean and standard deviation, clipped to the original range, for floats; uniform over the original
range for integers). The values differ from the original; shapes, types, sizes and value ranges do not, which
is all a speed benchmark reads. Used by scripts/bench/webgpu-device.sh, since a GPU machine is reached with a
64 MiB working tree and the models are gigabytes.

    /usr/bin/python3 scripts/models/weights-skeleton.py pack SRC_DIR OUT_DIR [FILE.onnx ...]   # numpy, onnx
    python3 scripts/models/weights-skeleton.py fill DIR                                          # numpy only
"""
import json
import os
import shutil
import sys

import numpy as np

SMALL = 4096  # initializers under this many bytes stay in the graph with their real values
ALIGN = 4096
SIDE_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def pack(src, out, names):
    import onnx
    from onnx import numpy_helper
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    for f in SIDE_FILES:
        if os.path.exists(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), os.path.join(out, f))
    names = names or sorted(n for n in os.listdir(os.path.join(src, "onnx")) if n.endswith(".onnx"))
    external = {}
    for name in names:
        m = onnx.load(os.path.join(src, "onnx", name))  # external data, if any, is read in
        recipes, offset = [], 0
        for t in m.graph.initializer:
            a = numpy_helper.to_array(t)
            if a.nbytes < SMALL:
                continue
            r = {"name": t.name, "dtype": a.dtype.str, "offset": offset, "length": a.nbytes,
                 "min": float(a.min()), "max": float(a.max())}
            if a.dtype.kind == "f":
                r["mean"], r["std"] = float(a.mean(dtype=np.float64)), float(a.std(dtype=np.float64))
            recipes.append(r)
            for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            for k, v in (("location", name + "_data"), ("offset", str(offset)), ("length", str(a.nbytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            offset = -(-(offset + a.nbytes) // ALIGN) * ALIGN
        onnx.save(m, os.path.join(out, "onnx", name))
        with open(os.path.join(out, "onnx", name + "_data.recipe.json"), "w") as f:
            json.dump({"size": offset, "tensors": recipes}, f, indent=1)
        external[name] = 1
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["transformers.js_config"] = {"use_external_data_format": external}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def fill(d):
    rng = np.random.default_rng(2025)
    onnx_dir = os.path.join(d, "onnx")
    for recipe_file in sorted(n for n in os.listdir(onnx_dir) if n.endswith("_data.recipe.json")):
        with open(os.path.join(onnx_dir, recipe_file)) as f:
            recipe = json.load(f)
        data = os.path.join(onnx_dir, recipe_file[: -len(".recipe.json")])
        with open(data + ".part", "wb") as out:
            out.truncate(recipe["size"])
            for r in recipe["tensors"]:
                dt = np.dtype(r["dtype"])
                n = r["length"] // dt.itemsize
                if dt.kind == "f":
                    a = rng.normal(r["mean"], r["std"], n).clip(r["min"], r["max"]).astype(dt)
                else:
                    a = rng.integers(int(r["min"]), int(r["max"]), n, endpoint=True, dtype=dt)
                out.seek(r["offset"])
                out.write(a.tobytes())
        os.replace(data + ".part", data)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == "fill":
        fill(sys.argv[2])
    else:
        sys.exit(__doc__)
