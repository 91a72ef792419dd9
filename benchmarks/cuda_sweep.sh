#!/usr/bin/env bash
# OpInfo sweep on a CUDA machine, one device call: install the bundle, then one
# benchmarks/op_coverage.py run per config ("float32", "bfloat16", "float32:train", ...), each
# under its own time limit. Tables in $OUT/cov_cuda_<config>.md, logs beside them.
#   benchmarks/cuda_sweep.sh float32 float16 bfloat16 float32:train
set -o pipefail
mkdir -p .gpu-bundle/site && tar xJf .gpu-bundle/torch_mlir-cp312.tar.xz -C .gpu-bundle/site \
  && export PYTHONPATH=$PWD/.gpu-bundle/site \
  && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . || exit 1
# torch's OpInfo database imports expecttest, which GPU hosts may lack: carry it in .whl/.
[ -d .whl ] && python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for config in "$@"; do
  dtype=${config%%:*}; train=""; [ "$config" != "${config%:train}" ] && train="--train"
  tag=${config/:/_}
  timeout ${SWEEP_TIMEOUT:-280} python3 benchmarks/op_coverage.py --device cuda --dtype $dtype $train \
    --samples ${SAMPLES:-2} --jobs ${JOBS:-14} --timeout 60 --out $OUT/cov_cuda_$tag.md > $OUT/cov_cuda_$tag.log 2>&1
  echo "$config: exit $?"; grep -E "ops tested|without the" $OUT/cov_cuda_$tag.log
  grep -E " (mismatch|error) " $OUT/cov_cuda_$tag.log | cut -c1-220 | head -40
done
