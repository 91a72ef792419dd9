"""Where a workload of bench_models.py --scale spends its GPU time: torch.profiler over a few
calls of each backend asked for, the kernels (and library calls) by total CUDA time.

    python benchmarks/profile_scale.py WORKLOAD [--backends eager,mlir] [--calls 3] [--top 15] [--trace DIR]

--trace writes each backend's Chrome trace (DIR/WORKLOAD_BACKEND.json): every kernel in launch
order with its grid and block, to be matched with the host schedules of a DYNAMO_MLIR_DUMP_DIR
dump (which kernel of which region took the time).
"""

import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402
from train_workloads import make_step  # noqa: E402


def _callable(w, backend: str):
    fn = make_step(w) if isinstance(w, scale.ScaleTraining) else w.fn
    args = (w.inputs, w.target) if isinstance(w, scale.ScaleTraining) else w.inputs
    if backend != "eager":
        fn = torch.compile(fn, backend=backend)
    if isinstance(w, scale.ScaleSweep):  # one call is the sweep over its lengths
        fn = scale.sweep(fn)
    return fn, args


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--backends", default="eager,mlir")
    parser.add_argument("--calls", type=int, default=3, help="profiled calls (after 3 warm-up calls)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--trace", help="a folder for each backend's Chrome trace")
    args = parser.parse_args(argv)
    w = scale.scale_workloads("cuda")[args.workload]
    for backend in args.backends.split(","):
        torch._dynamo.reset()
        dynamo_mlir.reset()
        fn, inputs = _callable(w, backend)
        with torch.set_grad_enabled(isinstance(w, scale.ScaleTraining)):
            for _ in range(3):
                fn(*inputs)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(args.calls):
                    fn(*inputs)
                torch.cuda.synchronize()
        if args.trace:
            os.makedirs(args.trace, exist_ok=True)
            prof.export_chrome_trace(os.path.join(args.trace, f"{args.workload}_{backend}.json"))
        events = [e for e in prof.key_averages() if e.device_time_total > 0]
        total = sum(e.device_time_total for e in events) / args.calls / 1e3
        print(f"## {args.workload}, {backend}: {total:.2f} ms of kernels per call")
        for e in sorted(events, key=lambda e: -e.device_time_total)[:args.top]:
            print(f"{e.device_time_total / args.calls / 1e3:8.3f} ms  {e.count // args.calls:4d}x  {e.key[:110]}")
        if backend == "mlir":
            s = dynamo_mlir.stats()
            print("mlir:", {k: s[k] for k in ("ops_compiled", "ops_library", "ops_fallback", "fallback_ops",
                                           "inputs_written_in_place", "inputs_written_back")})


if __name__ == "__main__":
    main()
