"""Minor page faults and time per call of one cpu inference workload of bench_models.py --scale
when eager, inductor and mlir calls alternate in one process, as bench_models' table takes them
(round-robin, after three warm-up calls each). A page fault is a fresh page the call touched:
glibc hands out new pages when the calls before (another backend's) gave memory back
(codegen/cpu/heap.py). Median over the rounds.

Usage:  python benchmarks/page_faults_interleaved.py [--workload bert_base_4l] [--rounds 8]
            [--options '{"retain_freed_memory": true}']   (mlir's options, JSON)
"""

import argparse
import copy
import json
import os
import resource
import statistics
import sys
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="bert_base_4l")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--options", default="{}")
    args = ap.parse_args()
    w = scale.scale_workloads("cpu")[args.workload]
    fns = {"eager": w.fn, "inductor": torch.compile(copy.deepcopy(w.fn)),
           "mlir": torch.compile(copy.deepcopy(w.fn), backend="mlir", options=json.loads(args.options))}
    with torch.no_grad():
        for f in fns.values():
            for _ in range(3):
                f(*w.inputs)
        ms, faults = {k: [] for k in fns}, {k: [] for k in fns}
        for _ in range(args.rounds):
            for name, f in fns.items():
                before, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
                f(*w.inputs)
                ms[name].append((time.perf_counter() - t0) * 1e3)
                faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(f"{args.workload}, {torch.get_num_threads()} threads, mlir options {args.options}, median of {args.rounds} rounds:")
    for name in fns:
        print(f"  {name}: {statistics.median(ms[name]):.1f} ms, {statistics.median(faults[name]):.0f} minor page faults a call")


if __name__ == "__main__":
    main()
