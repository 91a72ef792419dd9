"""The cpu target's convolution results read in place (codegen/cpu/adopted_results.py) against the
same graphs copying every result into a buffer of their own (the code before it), ResNet-50
inference, eager and inductor in the same process; each variant compiled once (distinct options,
so Dynamo keeps each graph), then timed round-robin (bench_models.time_backends), medians.

Usage:  python benchmarks/conv_results_in_place.py [--batch 2] [--repeats 9] [--out FILE]
"""

import argparse
import copy
import datetime
import os
import sys

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")
from dynamo_mlir.codegen.cpu import adopted_results

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402
import scale_workloads as scale  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    model = scale.Logits(scale._resnet50(), "pixel_values").eval()
    x = torch.randn(args.batch, 3, 224, 224, generator=g)
    fns = {"eager": model, "inductor": torch.compile(copy.deepcopy(model))}
    with torch.no_grad():
        fns["mlir, results read in place"] = f = torch.compile(copy.deepcopy(model), backend="mlir",
                                                               options={"cache": False})
        f(x)  # compiled now, with the rewrite as it is
        returned = adopted_results.may_be_returned
        adopted_results.may_be_returned = lambda value: True  # no result adopted: every one copied
        try:
            fns["mlir, results copied"] = f = torch.compile(copy.deepcopy(model), backend="mlir",
                                                            options={"cache": False, "strict": False})
            f(x)
        finally:
            adopted_results.may_be_returned = returned
        timings = bench_models.time_backends(fns, (x,), args.repeats, "cpu")
    ms = {k: t[1] * 1e3 for k, t in timings.items()}
    lines = [f"# ResNet-50 inference, convolution results read in place or copied ({datetime.date.today()}, "
             f"{torch.get_num_threads()} CPU threads, batch {args.batch}, torch {torch.__version__}, "
             f"tree {bench_models._commit()})", "",
             f"`python benchmarks/conv_results_in_place.py --batch {args.batch} --repeats {args.repeats}`: "
             f"median ms a call, {args.repeats} round-robin samples.", "",
             "| variant | ms | vs eager | vs inductor |", "|---|---|---|---|"]
    lines += [f"| {k} | {v:.2f} | {ms['eager'] / v:.2f}x | {ms['inductor'] / v:.2f}x |" for k, v in ms.items()]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
