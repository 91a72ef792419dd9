"""Where a CUDA first call's time goes once the compile cache is warm: Dynamo and the backend,
loading the PTX (cuModuleLoadData: the driver compiles it for the GPU), the first run (CUDA
graph capture in the default mode included), the second run.

    python benchmarks/cuda_first_call.py MODEL [--profile N] [--backend B]   (a model of
    benchmarks/compile_cache.py; run it twice with the same DYNAMO_MLIR_CACHE_DIR: the second is
    the warm start; --profile: the first call under cProfile, its N costliest functions by
    cumulative time printed to stderr; --backend: inductor or eager (Dynamo's floor) instead)
"""

import argparse
import cProfile
import json
import pstats
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import compile_cache  # noqa: E402

from dynamo_mlir.codegen.cuda import runtime  # noqa: E402

spent = {"module_load": 0.0}
_load = runtime.LoadedModule.__init__


def _timed_load(self, *args, **kwargs):
    t0 = time.perf_counter()
    _load(self, *args, **kwargs)
    spent["module_load"] += time.perf_counter() - t0


runtime.LoadedModule.__init__ = _timed_load

if __name__ == "__main__":
    import dynamo_mlir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--backend", default="mlir")
    args = parser.parse_args()
    fn, model, inputs = compile_cache._models("cuda")[args.model]()
    model.eval().cuda()
    inputs = [t.cuda() for t in inputs]
    compiled = torch.compile(fn, backend=args.backend)
    times = []
    profiler = cProfile.Profile() if args.profile else None
    with torch.no_grad():
        for i in range(3):
            t0 = time.perf_counter()
            if profiler and i == 0:
                profiler.runcall(compiled, *inputs)
            else:
                compiled(*inputs)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    if profiler:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
    out = {"backend": args.backend, "calls_s": times, **spent}
    if args.backend == "mlir":
        s = dynamo_mlir.stats()
        out.update(compile_s=s["compile_seconds"], cache=s["cache"]["hits"])
    print(json.dumps(out))
