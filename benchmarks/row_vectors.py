"""Row groups of symbolic sizes read and written in lane groups of 16-byte vectors
(`cuda_row_vectors`, codegen/gpu/row_reduce.py `row_vectors`) against one element a lane, measured: the
symbolic-size row cases of bench_cuda.py (softmax, layer norm, log-softmax, RMS norm over
16384 x 4096, `dynamic=True`) compiled both ways, and inductor's dynamic kernels, in the same run:
the kernels' GPU time (bench_cuda.kernel_ms) against a device-to-device copy's bandwidth.

Usage (GPU machine):  python benchmarks/row_vectors.py [--out results.md]
"""

import argparse
import os
import sys

import torch

import dynamo_mlir

sys.path.insert(0, os.path.dirname(__file__))
from bench_cuda import CASES, ROW_CASES, copy_speeds, kernel_ms  # noqa: E402


def time_ours(eager, inputs, vectors: bool):
    dynamo_mlir.reset()
    torch._dynamo.reset()
    ours = torch.compile(eager, backend="mlir", dynamic=True, options={"cache": False, "cuda_row_vectors": vectors})
    want = eager(*inputs)
    err = ((ours(*inputs) - want).norm() / want.norm()).item()
    assert dynamo_mlir.stats()["ops_fallback"] == 0, dynamo_mlir.explain()
    return kernel_ms(lambda: ours(*inputs)), err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    copy_gbs = copy_speeds()[2]  # the copy's kernel time, as ours
    lines = [f"{torch.cuda.get_device_name()}, torch {torch.__version__}; copy {copy_gbs:.0f} GB/s (its kernel time); kernel time "
             "(torch.profiler) per call, `dynamic=True`; (vs copy) the fraction of the copy's bandwidth", "",
             "| case | inductor ms (vs copy) | one element a lane ms (vs copy) | vectors ms (vs copy) | speed-up |",
             "|---|---|---|---|---|"]
    for name in ROW_CASES:
        _, eager, shapes, nbytes = CASES[name]
        inputs = [torch.randn(s, device="cuda") for s in shapes]
        torch._dynamo.reset()
        inductor = torch.compile(eager, dynamic=True)
        inductor(*inputs)
        cells = [kernel_ms(lambda: inductor(*inputs))]
        for vectors in (False, True):
            ms, err = time_ours(eager, inputs, vectors)
            assert err < 1e-5, (name, vectors, err)
            cells.append(ms)
        frac = lambda ms: f"{ms:.3f} ({nbytes / ms / 1e6 / copy_gbs:.2f})"
        lines.append(f"| {name} | " + " | ".join(frac(ms) for ms in cells) + f" | {cells[1] / cells[2]:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
