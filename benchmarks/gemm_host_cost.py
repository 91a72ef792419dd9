"""The host's part of one call of a compiled GEMM (bench_models.py --scale's gemm rows): how long
issuing a call takes with no wait for the GPU (a 64x64 GEMM, whose kernel takes a few
microseconds: the issue rate is the host's), for torch.mm, inductor and mlir, medians of
round-robin samples; then cProfile's top functions of mlir's calls. Where the host takes longer
than the 4096^3 kernel (0.17 ms on an H200), back-to-back calls leave the GPU idle.

Usage (GPU machine):  python benchmarks/gemm_host_cost.py [--size 64] [--calls 200] [--rounds 15]
"""

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")


def issue_us(fn, a, b, calls: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(a, b)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    a, b = (torch.randn(args.size, args.size, device="cuda").bfloat16() for _ in range(2))
    fns = {"torch.mm": torch.mm, "inductor": torch.compile(lambda x, y: torch.mm(x, y)),
           "mlir": torch.compile(lambda x, y: torch.mm(x, y), backend="mlir")}
    for fn in fns.values():
        for _ in range(5):
            fn(a, b)
    samples = {k: [] for k in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            samples[name].append(issue_us(fn, a, b, args.calls))
    print(f"bf16 GEMM {args.size}^3, host time to issue one call (us, median of {args.rounds} x {args.calls} calls):")
    for name, s in samples.items():
        print(f"  {name:10s} {statistics.median(s):8.1f}")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.calls):
        fns["mlir"](a, b)
    profiler.disable()
    torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue())


if __name__ == "__main__":
    main()
