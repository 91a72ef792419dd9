"""Where a replayed call's host time goes before and around its CUDA graph, for the GPT-2 small
sweep of bench_models.py --scale (batch 8, lengths 128..320, automatic dynamic shapes, mlir
default mode): the time from the sweep's start (GPU idle) to each call entering the runtime
(Dynamo's guards and the frontend before it), the runtime's own time to the replay (key, input
copies), and the host time of CUDAGraph.replay() itself; medians over the sweeps.

Usage (GPU machine):  python benchmarks/replay_latency.py [--sweeps 10]
"""

import argparse
import os
import statistics
import sys
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")
from dynamo_mlir.codegen.cuda import runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402

EVENTS = []


def _timed(name, fn):
    def wrapper(*args, **kwargs):
        EVENTS.append((name + " enter", time.perf_counter()))
        try:
            return fn(*args, **kwargs)
        finally:
            EVENTS.append((name + " exit", time.perf_counter()))
    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweeps", type=int, default=10)
    args = ap.parse_args()
    w = scale.length_sweep("gpt2", 12, 768, (128, 192, 256, 320), batch=8, device="cuda")
    fn = scale.sweep(torch.compile(w.fn, backend="mlir"))
    with torch.no_grad():
        for _ in range(3):
            fn(*w.inputs)
        runtime.GraphedFunction.__call__ = _timed("call", runtime.GraphedFunction.__call__)
        torch.cuda.CUDAGraph.replay = _timed("replay", torch.cuda.CUDAGraph.replay)
        rows = []
        for _ in range(args.sweeps):
            out = None
            torch.cuda.synchronize()
            EVENTS.clear()
            t0 = time.perf_counter()
            out = fn(*w.inputs)
            t_host = time.perf_counter()
            torch.cuda.synchronize()
            t_end = time.perf_counter()
            calls = [t for name, t in EVENTS if name == "call enter"]
            replays = [(a, b) for (na, a), (nb, b) in zip(EVENTS, EVENTS[1:]) if na == "replay enter" and nb == "replay exit"]
            rows.append(dict(first_call=calls[0] - t0, to_replay=replays[0][0] - calls[0],
                             replay_host=[b - a for a, b in replays], host=t_host - t0, total=t_end - t0))
        del out
    med = lambda key: statistics.median(r[key] for r in rows) * 1e3  # noqa: E731
    print(f"{torch.cuda.get_device_name()}: GPT-2 small sweep (4 calls), mlir default mode, medians of {len(rows)} sweeps, ms")
    print(f"  sweep start -> first call enters the runtime (Dynamo, frontend): {med('first_call'):.3f}")
    print(f"  runtime -> first replay() (key, input copies):                   {med('to_replay'):.3f}")
    for k in range(len(rows[0]['replay_host'])):
        print(f"  replay() host time, call {k}: {statistics.median(r['replay_host'][k] for r in rows) * 1e3:.3f}")
    print(f"  host returns: {med('host'):.3f}; GPU done: {med('total'):.3f}")


if __name__ == "__main__":
    main()
