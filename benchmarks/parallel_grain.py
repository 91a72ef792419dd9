"""How many innermost iterations a thread's chunk of a parallel loop nest must have at least
(codegen/cpu/parallel.py MIN_CHUNK_WORK), measured: one cpu inference workload of bench_models.py
--scale compiled once per value in one process (the value is read at compile time; each compile
gets its own options, so Dynamo keeps each graph), then timed round-robin with inductor, batches
of calls, medians. Round-robin in one process: on this project's 2-core machine two separate
runs of the same compiled workload once differed by 1.6x (a one-off wrapper around
loop_workload.py, not kept), while one run's interleaved values differ by a few percent.

Usage:  python benchmarks/parallel_grain.py [--workload llama_2l_128] [--values 32768,16384,8192,4096]
"""

import argparse
import copy
import os
import statistics
import sys
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")
from dynamo_mlir.codegen.cpu import parallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402

# Options that change no code, one per value: a different options dict is a different backend
# to Dynamo, so each value's compile keeps its own graph.
DISTINCT = ({}, {"parallel": True}, {"strict": False}, {"parallel": True, "strict": False}, {"cache": False})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="llama_2l_128")
    ap.add_argument("--values", default="32768,16384,8192,4096")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    values = [int(v) for v in args.values.split(",")]
    w = scale.scale_workloads("cpu")[args.workload]
    fns = {}
    with torch.no_grad():
        for value, options in zip(values, DISTINCT):
            parallel.MIN_CHUNK_WORK = value
            fns[f"mlir, MIN_CHUNK_WORK {value}"] = f = torch.compile(copy.deepcopy(w.fn), backend="mlir",
                                                                   options={"cache": False, **options})
            for _ in range(5):
                f(*w.inputs)
        fns["inductor"] = f = torch.compile(copy.deepcopy(w.fn))
        for _ in range(5):
            f(*w.inputs)
        times = {k: [] for k in fns}
        for _ in range(args.rounds):
            for name, f in fns.items():
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    f(*w.inputs)
                times[name].append((time.perf_counter() - t0) / args.calls * 1e3)
    print(f"{args.workload}, {torch.get_num_threads()} threads, median ms a call ({args.rounds} rounds of {args.calls} calls):")
    for name, t in times.items():
        print(f"  {name}: {statistics.median(t):.3f}")


if __name__ == "__main__":
    main()
