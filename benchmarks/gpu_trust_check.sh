#!/usr/bin/env bash
# One device call for issue 22's GPU lines: install the bundle, run the CUDA test tier (optionally
# under compute-sanitizer memcheck), and the OpInfo sweep on cuda (inputs compared after the call).
#   PART=tests     the CUDA test tier, plain (PART may name several parts, run in turn;
#                  TESTS: some of its files, K: a pytest -k expression)
#   PART=sanitize  the CUDA test tier under `compute-sanitizer --tool memcheck`
#   PART=opinfo    OpInfo: float32, float16, bfloat16, float32 gradients (DTYPES to choose)
#   PART=fuzz      the differential fuzzer on the cuda target: SHARDS processes of EXAMPLES programs
#   PART=checks    benchmarks/cuda_trust_checks.py (conv_transpose3d and TF32, flash attention's rng_state)
#   PART=scale     bench_models.py --device cuda --scale (ONLY: workload names, REPEATS)
#   PART=profile   profile_scale.py for each of PROFILE (workload names; PROFILE_ARGS: its options)
#   PART=kernels   bench_cuda.py: the kernel cases against the copy's bandwidth (static and symbolic sizes)
#   PART=models    bench_models.py --device cuda: the small models, default and reduce-overhead (ONLY)
#   PART=rowvectors  cuda_row_vectors: row_vectors.py (the row cases with it off and on, inductor's
#                  beside), then the dynamic sweeps with it on (ONLY, REPEATS)
# Results and logs in $OUT.
set -o pipefail
# Installed once per machine: a second call running beside the first must not rewrite its files.
if [ ! -d .gpu-bundle/site/torch_mlir ]; then
  mkdir -p .gpu-bundle/site && tar xJf .gpu-bundle/torch_mlir-cp312.tar.xz -C .gpu-bundle/site \
    && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . || exit 1
  # pytest-xdist and expecttest (OpInfo) travel as wheels (.whl, git-ignored: the host has no package registry).
  [ -d .whl ] && python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl 2>/dev/null
  for e in examples/*/; do python3 -m pip install -q --no-deps --no-build-isolation --no-index -e "$e" >/dev/null 2>&1; done
fi
export PYTHONPATH=$PWD/.gpu-bundle/site:/tmp/site
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
CUDA_TESTS=${TESTS:-"tests/test_cuda_attention.py tests/test_cuda_library_calls.py tests/test_cuda_models.py \
  tests/test_cuda_runtime.py tests/test_cuda_replay_bookkeeping.py tests/test_input_mutations.py \
  tests/test_real_models.py tests/test_read_only_inputs.py tests/test_padded_matmuls.py tests/test_cuda_split_reductions.py"}  # TESTS: a part of the tier
for part in ${PART:-tests}; do  # several parts, one after the other: PART="checks fuzz"
case "$part" in
  tests)
    timeout ${TEST_TIMEOUT:-540} python3 -m pytest -q -p no:cacheprovider -n ${JOBS:-8} $CUDA_TESTS ${K:+-k "$K"} ${PYTEST_ARGS} \
      2>&1 | tee $OUT/pytest_cuda.log | tail -25 ;;
  sanitize)
    # Only the tests that run on the GPU, in pytest-xdist workers (the sanitizer follows child
    # processes). API errors are not reported: cuda-bindings probes driver entry points the
    # driver lacks (cuGetProcAddress -> CUDA_ERROR_INVALID_VALUE) when it loads, which is no
    # memory error of ours.
    timeout ${TEST_TIMEOUT:-560} compute-sanitizer --tool memcheck --report-api-errors no --print-limit 50 ${SANITIZER_ARGS} \
      --error-exitcode 99 python3 -m pytest -q -p no:cacheprovider -n ${JOBS:-6} -m cuda $CUDA_TESTS ${K:+-k "$K"} ${PYTEST_ARGS} \
      2>&1 | tee $OUT/sanitizer.log | tail -30
    echo "sanitizer exit: $?" | tee -a $OUT/sanitizer.log ;;
  opinfo)
    for d in ${DTYPES:-float32 float16 bfloat16 float32-train}; do
      dtype=${d%-train}; train=""; [ "$d" != "$dtype" ] && train="--train"
      timeout ${OPINFO_TIMEOUT:-280} python3 benchmarks/op_coverage.py --device cuda --dtype $dtype $train --samples 2 \
        --jobs ${JOBS:-15} --timeout 60 --out $OUT/coverage_cuda_$d.md 2>&1 | tail -3
      grep -E '^\*\*' $OUT/coverage_cuda_$d.md | head -1
    done ;;
  fuzz)  # program i of a seed is the same on every machine: shard k runs k*EXAMPLES .. (k+1)*EXAMPLES-1
    for k in $(seq 0 $((${SHARDS:-10} - 1))); do
      timeout ${FUZZ_TIMEOUT:-420} python3 -m tests.fuzz.run --device cuda --seed ${SEED:-1} --start $((k * ${EXAMPLES:-200})) \
        --examples ${EXAMPLES:-200} --current /tmp/fuzz_current_$k.py > $OUT/fuzz_cuda_$k.log 2>&1 &
    done
    wait
    for k in $(seq 0 $((${SHARDS:-10} - 1))); do echo "### shard $k"; cat $OUT/fuzz_cuda_$k.log; done > $OUT/fuzz_cuda.log
    rm -f $OUT/fuzz_cuda_[0-9]*.log  # one file: a device call returns at most 8
    grep "programs in" $OUT/fuzz_cuda.log
    grep -A3 "=== FAILURE\|=== CRASH\|context is gone" $OUT/fuzz_cuda.log | head -60 ;;
  checks)
    timeout ${CHECKS_TIMEOUT:-240} python3 benchmarks/cuda_trust_checks.py ${CHECKS} 2>&1 | grep -v Warning | tee $OUT/cuda_trust_checks.log | tail -40 ;;
  scale)
    timeout ${SCALE_TIMEOUT:-570} python3 benchmarks/bench_models.py --device cuda --scale ${ONLY:+--only $ONLY} \
      --repeats ${REPEATS:-10} --out $OUT/scale_cuda.md 2>&1 | grep -v Warning | tail -40 ;;
  profile)
    for w in ${PROFILE}; do
      timeout ${PROFILE_TIMEOUT:-240} python3 benchmarks/profile_scale.py $w ${PROFILE_ARGS} 2>&1 | grep -v Warning | tee -a $OUT/profile_scale.log | tail -40
    done ;;
  kernels)
    timeout ${KERNELS_TIMEOUT:-300} python3 benchmarks/bench_cuda.py --device cuda --out $OUT/bench_cuda.md 2>&1 | grep -v Warning | tail -30 ;;
  models)
    timeout ${MODELS_TIMEOUT:-400} python3 benchmarks/bench_models.py --device cuda --only ${ONLY:-mlp,cnn,gpt2,bert,llama} \
      --reduce-overhead --repeats ${REPEATS:-20} --out $OUT/models_cuda.md 2>&1 | grep -v Warning | tail -30 ;;
  rowvectors)
    timeout ${ROW_TIMEOUT:-240} python3 benchmarks/row_vectors.py --out $OUT/row_vectors.md 2>&1 | grep -v Warning | tail -12
    DYNAMO_MLIR_CUDA_ROW_VECTORS=1 timeout ${SCALE_TIMEOUT:-570} python3 benchmarks/bench_models.py --device cuda --scale \
      --only ${ONLY:-gpt2_small_sweep,bert_base_sweep} --repeats ${REPEATS:-5} --out $OUT/scale_cuda_row_vectors.md \
      2>&1 | grep -v Warning | tail -20 ;;
  opinfo-all)  # the entries of issue 22 with every sample (OPS: a regex over OpInfo names)
    for d in float32 float32-train float16 bfloat16; do
      dtype=${d%-train}; train=""; [ "$d" != "$dtype" ] && train="--train"
      timeout ${OPINFO_TIMEOUT:-120} python3 benchmarks/op_coverage.py --device cuda --dtype $dtype $train --samples 1000 \
        --ops "${OPS}" --jobs ${JOBS:-15} --timeout 120 --out $OUT/coverage_cuda_all_$d.md 2>&1 | grep -E "mismatch|error|^\*\*|tested" | head -20
    done ;;
esac
done
