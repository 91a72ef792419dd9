#!/usr/bin/env bash
# One device call: install the bundle, run the CUDA tests, the kernel benchmark (bench_cuda.py)
# and the model benchmark (bench_models.py --device cuda). Results and logs in $OUT.
set -o pipefail
mkdir -p .gpu-bundle/site && tar xJf .gpu-bundle/torch_mlir-cp312.tar.xz -C .gpu-bundle/site \
  && export PYTHONPATH=$PWD/.gpu-bundle/site \
  && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . || exit 1
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
python3 -c "import cuda.bindings, llvmlite, torch; print('cuda-bindings', cuda.bindings.__version__, 'llvmlite', llvmlite.__version__, 'torch', torch.__version__)" | tee -a $OUT/gpu.txt
timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider tests/test_cuda_ptx.py tests/test_cuda_runtime.py tests/test_cuda_models.py ${PYTEST_ARGS} 2>&1 | tee $OUT/pytest.log | tail -25
[ -n "$SKIP_BENCH" ] || timeout ${BENCH_TIMEOUT:-240} python3 benchmarks/bench_cuda.py --device cuda --out $OUT/bench_cuda.md 2>&1 | tee $OUT/bench_cuda.log | tail -30
[ -n "$SKIP_MODELS" ] || timeout ${MODELS_TIMEOUT:-600} python3 benchmarks/bench_models.py --device cuda --out $OUT/bench_models.md 2>&1 | tee $OUT/bench_models.log | tail -30
