"""CPU benchmark: eager vs inductor vs mlir, measured in one run.

For each workload: median time per call of each backend (after warm-up), the ratios against eager
and inductor, and each backend's compile time (first call minus a steady call).

    python benchmarks/bench_cpu.py [--repeats 30] [--only mlp,softmax] [--out results.md]
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.tools.models import cnn, mlp, randomize_batchnorm, transformer_block


def _elementwise_chain(x):
    return torch.tanh(torch.exp(x * 0.5) + 1.0) * x


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def workloads():
    """name -> (callable, inputs). Models in eval mode; everything runs under no_grad."""
    torch.manual_seed(0)
    return {
        "mlp_b256": (mlp().eval(), (torch.randn(256, 10),)),
        "cnn_b8": (randomize_batchnorm(cnn()).eval(), (torch.randn(8, 3, 32, 32),)),
        "transformer_block": (transformer_block().eval(), (torch.randn(8, 16, 64),)),
        "elementwise_4M": (_elementwise_chain, (torch.randn(4 * 1024 * 1024),)),
        "softmax_4096x1024": (_softmax, (torch.randn(4096, 1024),)),
        "layernorm_4096x1024": (_layernorm, (torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024))),
        "matmul_512": (torch.mm, (torch.randn(512, 512), torch.randn(512, 512))),
    }


def time_calls(fn, inputs, repeats: int) -> tuple[float, float]:
    """(first call seconds, median steady call seconds)."""
    t0 = time.perf_counter()
    fn(*inputs)
    first = time.perf_counter() - t0
    for _ in range(2):
        fn(*inputs)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*inputs)
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def measure(name, fn, inputs, repeats):
    row = {"name": name}
    backends = {"eager": fn, "inductor": torch.compile(fn, backend="inductor"),
                "mlir": torch.compile(fn, backend="mlir")}
    with torch.no_grad():
        reference = fn(*inputs)
        for backend, f in backends.items():
            torch._dynamo.reset()
            dynamo_mlir.reset()
            first, steady = time_calls(f, inputs, repeats)
            row[backend] = steady
            row[f"{backend}_compile"] = max(first - steady, 0.0)
            if backend == "mlir":
                s = dynamo_mlir.stats()
                row["mlir_fallbacks"] = s["ops_fallback"]
                row["mlir_ok"] = torch.allclose(f(*inputs), reference, rtol=1e-4, atol=1e-4)
    return row


def table(rows) -> str:
    head = ("| workload | eager ms | inductor ms | mlir ms | eager/mlir | inductor/mlir | "
            "compile s (inductor / mlir) | mlir eager ops | matches |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['eager'] * 1e3:.3f} | {r['inductor'] * 1e3:.3f} | {r['mlir'] * 1e3:.3f} | "
            f"{r['eager'] / r['mlir']:.2f} | {r['inductor'] / r['mlir']:.2f} | "
            f"{r['inductor_compile']:.1f} / {r['mlir_compile']:.1f} | {r['mlir_fallbacks']} | {r['mlir_ok']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per backend (median reported)")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--out", default="", help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    chosen = workloads()
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    rows = []
    for name, (fn, inputs) in chosen.items():
        rows.append(measure(name, fn, inputs, args.repeats))
        print(f"measured {name}", file=sys.stderr, flush=True)
    text = (f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeats} calls; "
            f"ratios > 1 mean mlir is faster\n\n{table(rows)}\n")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
