"""Matmuls whose rows are not 16-byte aligned (a 50257-token vocabulary: GPT-2's lm_head and its
two gradients): cuBLAS picks slow align-1 kernels for them. Median ms of eager (torch.mm on the
unaligned tensors), inductor (which pads) and mlir (default mode), one run, per float type.

    python benchmarks/gemm_alignment.py [--vocab 50257] [--tokens 4096] [--width 768] [--dtypes bfloat16,float32]
"""

import argparse
import statistics

import torch

import dynamo_mlir

CASES = {  # name -> (function, operand shapes from (tokens, vocab, width))
    "logits = h @ W^T": (lambda h, w: h @ w.t(), lambda t, v, d: ((t, d), (v, d))),
    "grad h = g @ W": (lambda g, w: g @ w, lambda t, v, d: ((t, v), (v, d))),
    "grad W = g^T @ h": (lambda g, h: g.t() @ h, lambda t, v, d: ((t, v), (t, d))),
}


def median_ms(fn, args, reps: int = 30) -> float:
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    args = parser.parse_args(argv)
    print(f"# GEMMs with a {args.vocab} dim ({torch.cuda.get_device_name()}); median ms of 30 calls\n")
    print("| case | dtype | eager ms | inductor ms | mlir ms | eager/mlir | inductor/mlir | mlir max rel. error vs eager |")
    print("|---|---|---|---|---|---|---|---|")
    g = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        for name, (fn, shapes) in CASES.items():
            xs = [torch.randn(s, generator=g, device="cuda", dtype=dtype) for s in shapes(args.tokens, args.vocab, args.width)]
            times = {}
            for backend in ("eager", "inductor", "mlir"):
                torch._dynamo.reset()
                f = fn if backend == "eager" else torch.compile(fn, backend=backend)
                times[backend] = median_ms(f, xs)
                if backend == "mlir":
                    got = f(*xs).float()
            want = fn(*xs).float()
            err = ((got - want).abs().max() / want.abs().max()).item()
            print(f"| {name} | {str(dtype)[6:]} | {times['eager']:.3f} | {times['inductor']:.3f} | {times['mlir']:.3f} "
                  f"| {times['eager'] / times['mlir']:.2f} | {times['inductor'] / times['mlir']:.2f} | {err:.1e} |")
    print(f"\nmlir: {dynamo_mlir.stats()}")


if __name__ == "__main__":
    main()
