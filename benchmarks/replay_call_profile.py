"""cProfile of the host side of one replayed call of the GPT-2 small sweep model (mlir default
mode) at each length, after warm-up: which Python functions a call spends its host time in, from
Dynamo's frame evaluation to the CUDA graph's replay.

Usage (GPU machine):  python benchmarks/replay_call_profile.py [--calls 20] [--top 30]
"""

import argparse
import cProfile
import io
import os
import pstats
import sys

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    w = scale.length_sweep("gpt2", 12, 768, (128, 192, 256, 320), batch=8, device="cuda")
    fn = torch.compile(w.fn, backend="mlir")
    with torch.no_grad():
        for _ in range(3):
            for x in w.inputs:
                fn(x)
        for x in (w.inputs[0], w.inputs[1]):
            prof = cProfile.Profile()
            torch.cuda.synchronize()
            prof.enable()
            for _ in range(args.calls):
                out = fn(x)
                del out
            prof.disable()
            torch.cuda.synchronize()
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(args.top)
            print(f"## length {x.shape[1]}: {args.calls} calls")
            print("\n".join(line[:160] for line in text.getvalue().splitlines()[:args.top + 12]))


if __name__ == "__main__":
    main()
