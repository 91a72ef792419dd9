"""Minor page faults and time per call of one cpu workload of bench_models.py --scale (inference,
or a training step: train_resnet50_b2_sgd) when eager, inductor and mlir calls alternate in one
process, as bench_models' table takes them (round-robin, each round starting one backend later,
after three warm-up calls each). A page fault is a fresh page the call touched: glibc hands out
new pages when the calls before (another backend's, or the same call's) gave memory back
(codegen/cpu/heap.py). Median over the rounds.

Usage:  python benchmarks/page_faults_interleaved.py [--workload bert_base_4l] [--rounds 8]
            [--options '{"retain_freed_memory": true}']   (mlir's options, JSON)
            [--backends mlir]   (some of eager,inductor,mlir: one alone sees only its own frees)
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402
import scale_workloads as scale  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="bert_base_4l")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--options", default="{}")
    ap.add_argument("--backends", default="eager,inductor,mlir")
    args = ap.parse_args()
    w = scale.scale_workloads("cpu")[args.workload]
    called = {name: scale.called(w, name, json.loads(args.options) if name == "mlir" else None)
              for name in args.backends.split(",")}
    fns = {name: f for name, (f, _, _) in called.items()}
    _, inputs, grad = next(iter(called.values()))
    with torch.set_grad_enabled(grad):
        for f in fns.values():
            for _ in range(3):
                f(*inputs)
        ms, faults = {k: [] for k in fns}, {k: [] for k in fns}
        names = list(fns)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                before, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
                fns[name](*inputs)
                ms[name].append((time.perf_counter() - t0) * 1e3)
                faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(f"{args.workload}, {torch.get_num_threads()} threads, mlir options {args.options}, median of {args.rounds} rounds "
          f"(dynamo-mlir {bench_models._commit()}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC):")
    for name in fns:
        print(f"  {name}: {statistics.median(ms[name]):.1f} ms, {statistics.median(faults[name]):.0f} minor page faults a call")


if __name__ == "__main__":
    main()
