"""How many elements a thread of a block-per-row kernel takes per trip (codegen/gpu/row_reduce.py
UNROLL), measured: the symbolic-size row cases of bench_cuda.py (softmax, layer norm,
log-softmax, RMS norm over 16384 x 4096, `dynamic=True`) and the flat elementwise chain (its
chunks CHUNK_UNROLL: set to the same value), compiled once per value, against a device-to-device copy and inductor's dynamic kernels in the
same run: the kernels' GPU time (bench_cuda.kernel_ms), not the call's.

Usage (GPU machine):  python benchmarks/row_unroll.py [--unroll 4,8,16] [--out results.md]
"""

import argparse
import os
import sys

import torch

import dynamo_mlir
import dynamo_mlir.codegen.cuda  # noqa: F401  (before codegen.gpu, which the cuda target imports)
from dynamo_mlir.codegen.gpu import row_reduce

sys.path.insert(0, os.path.dirname(__file__))
from bench_cuda import CASES, N, kernel_ms, median_ms  # noqa: E402


def time_case(name, unroll):
    _, eager, shapes, nbytes = CASES[name]
    inputs = [torch.randn(s, device="cuda") for s in shapes]
    row_reduce.UNROLL = row_reduce.CHUNK_UNROLL = unroll
    dynamo_mlir.reset()
    torch._dynamo.reset()
    ours = torch.compile(eager, backend="mlir", dynamic=True, options={"cache": False})
    err = ((ours(*inputs) - eager(*inputs)).norm() / eager(*inputs).norm()).item()
    return kernel_ms(lambda: ours(*inputs)), nbytes, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unroll", default="4,8,16")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    unrolls = [int(u) for u in args.unroll.split(",")]
    src, dst = torch.randn(N, device="cuda"), torch.empty(N, device="cuda")
    copy_gbs = 2 * N * 4 / median_ms(lambda: dst.copy_(src)) / 1e6
    lines = [f"{torch.cuda.get_device_name()}, torch {torch.__version__}; copy {copy_gbs:.0f} GB/s; kernel time "
             "(torch.profiler) per call", "",
             "| case | inductor ms | " + " | ".join(f"UNROLL {u}: ms (vs copy)" for u in unrolls) + " |",
             "|---|---|" + "---|" * len(unrolls)]
    for name in CASES:
        _, eager, shapes, _ = CASES[name]
        inputs = [torch.randn(s, device="cuda") for s in shapes]
        torch._dynamo.reset()
        inductor = torch.compile(eager, dynamic=True)
        inductor(*inputs)
        t_ind = kernel_ms(lambda: inductor(*inputs))
        cells = []
        for u in unrolls:
            ms, nbytes, err = time_case(name, u)
            assert err < 1e-5, (name, u, err)
            cells.append(f"{ms:.3f} ({nbytes / ms / 1e6 / copy_gbs:.2f})")
        lines.append(f"| {name} | {t_ind:.3f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
