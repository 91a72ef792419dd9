"""Where a CUDA first call's time goes once the compile cache is warm: Dynamo and the backend,
loading the PTX (cuModuleLoadData: the driver compiles it for the GPU), the first run (CUDA
graph capture in the default mode included), the second run.

    python benchmarks/cuda_first_call.py MODEL   (a model of benchmarks/compile_cache.py; run it
    twice with the same DYNAMO_MLIR_CACHE_DIR: the second is the warm start)
"""

import json
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

    fn, model, inputs = compile_cache._models("cuda")[sys.argv[1]]()
    model.eval().cuda()
    inputs = [t.cuda() for t in inputs]
    compiled = torch.compile(fn, backend="mlir")
    times = []
    with torch.no_grad():
        for _ in range(3):
            t0 = time.perf_counter()
            compiled(*inputs)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    s = dynamo_mlir.stats()
    print(json.dumps({"calls_s": times, "compile_s": s["compile_seconds"], "cache": s["cache"]["hits"], **spent}))
