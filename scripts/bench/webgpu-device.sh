#!/usr/bin/env bash
# WebGPU on a real GPU, on a bare machine reached with a small working tree (this workplace's device tool sends
# 64 MiB at most): scripts/bench/generate-webgpu.ts with Deno, the node_modules files that path opens, and the
# benchmark models as weight skeletons (scripts/models/weights-skeleton.py), compressed into .gpu/carry.
#
#   scripts/bench/webgpu-device.sh pack   # here: needs .models-cache/qwen2.5-{0.5b,1.5b} (scripts/bench/generate.ts)
#   scripts/bench/webgpu-device.sh run    # there, in the repository root with .gpu/carry beside it; $OUT gets the results
#   scripts/bench/webgpu-device.sh setup  # there: only unpack and check the adapter (for other measurements)
set -euo pipefail
CARRY=.gpu/carry

pack() {
  rm -rf .gpu && mkdir -p "$CARRY" .gpu/models
  py=/usr/bin/python3
  $py scripts/models/weights-skeleton.py pack .models-cache/qwen2.5-0.5b .gpu/models/qwen2.5-0.5b model_q4.onnx model.onnx
  $py scripts/models/weights-skeleton.py pack .models-cache/qwen2.5-1.5b .gpu/models/qwen2.5-1.5b model_q4.onnx
  ln -f .gpu/models/qwen2.5-0.5b/tokenizer.json .gpu/models/qwen2.5-1.5b/tokenizer.json # the same file: stored once
  (cd .gpu && tar -cf - models | xz -T0 -9e >carry/models.tar.xz)
  # the node_modules files the benchmark opens (both WebGPU paths), found by tracing a run on a small model
  if [ ! -s .gpu/nm-files.txt ]; then
    mkdir -p .gpu/small
    $py scripts/models/gen-tiny-models.py --shape qwen2.5-0.5b .gpu/small/qwen --layers 1 --dtypes q4
    cp BENCHMARKS.md .gpu/BENCHMARKS.md.keep
    XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} BENCH_MODELS=.gpu/small/qwen BENCH_DTYPES=q4 BENCH_TOKENS=2 BENCH_RUNS=1 \
      strace -f -qq -e trace=openat,open,stat,statx,newfstatat,lstat,access,readlink -o .gpu/trace.txt \
      node_modules/.bin/deno run -A scripts/bench/generate-webgpu.ts >/dev/null 2>&1 || true
    mv .gpu/BENCHMARKS.md.keep BENCHMARKS.md
    grep -v ENOENT .gpu/trace.txt | grep -o "\"$PWD/node_modules/[^\"]*\"" | tr -d '"' | sort -u |
      while read -r f; do [ -f "$f" ] && realpath --relative-to=. "$f"; done | grep -v '^node_modules/deno/' | sort -u >.gpu/nm-files.txt
  fi
  tar -cf - -T .gpu/nm-files.txt | xz -T0 -9e >"$CARRY/nm.tar.xz"
  xz -T0 -9e -c node_modules/deno/deno >"$CARRY/deno.xz"
  # Vulkan's loader and libglvnd, for a machine image that lacks them: the driver's Vulkan ICD (libGLX_nvidia)
  # needs libGLdispatch from libglvnd
  (cd "$CARRY" && apt-get download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0)
  du -ab "$CARRY"
}

setup() {
  if ! ldconfig -p | grep -q 'libvulkan.so.1' || ! ldconfig -p | grep -q 'libGLdispatch.so.0'; then
    for f in "$CARRY"/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} NO_COLOR=1
  python3 - <<'EOF'
import lzma, os, shutil, tarfile
c = ".gpu/carry"
os.makedirs("node_modules/deno", exist_ok=True)
with lzma.open(f"{c}/deno.xz") as src, open("node_modules/deno/deno", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod("node_modules/deno/deno", 0o755)
tarfile.open(f"{c}/nm.tar.xz").extractall(".")
tarfile.open(f"{c}/models.tar.xz").extractall(".models-cache")
for d in os.listdir(".models-cache/models"):
    shutil.rmtree(f".models-cache/{d}", ignore_errors=True)
    os.rename(f".models-cache/models/{d}", f".models-cache/{d}")
EOF
  for d in ${SETUP_MODELS:-.models-cache/qwen2.5-0.5b .models-cache/qwen2.5-1.5b}; do python3 scripts/models/weights-skeleton.py fill "$d"; done
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv || true
  local probe='const a = await navigator.gpu.requestAdapter(); console.log(a ? JSON.stringify(a.info) : "no adapter"); if (!a) Deno.exit(1)'
  if ! node_modules/deno/deno eval "$probe"; then
    VK_LOADER_DEBUG=error,warn,info node_modules/deno/deno eval "$probe" 2>&1 | tail -40
    exit 1
  fi
}

run() {
  setup
  node_modules/deno/deno run -A scripts/bench/generate-webgpu.ts
}

"${1:?pack or run}"
