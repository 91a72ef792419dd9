"""Models and micro-kernels: eager vs inductor vs mlir, measured in one run, on CPU or CUDA.

For each workload: median time per call of each backend (after warm-up; CUDA times with device
events), the ratios against eager and inductor, and each backend's compile time (first call minus
a steady call), plus whether mlir matched eager and how many ops it left to eager.
With --train: whole training steps instead (forward, loss, backward, Adam step; train_workloads.py),
each backend on its own copy of the model and optimizer, losses compared step by step.

    python benchmarks/bench_models.py [--device cpu|cuda] [--train] [--repeats 30] [--only mlp_b256,softmax_4096x1024] [--out results.md]
"""

import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.tools.models import TinyGPT, cnn, mlp, randomize_batchnorm, transformer_block
from train_workloads import losses_match, make_step, train_workloads


def _elementwise_chain(x):
    return torch.tanh(torch.exp(x * 0.5) + 1.0) * x


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def workloads(device: str):
    """name -> (callable, inputs) on `device`. Models in eval mode; everything runs under no_grad."""
    torch.manual_seed(0)
    table = {
        "mlp_b256": (mlp().eval(), (torch.randn(256, 10),)),
        "cnn_b8": (randomize_batchnorm(cnn()).eval(), (torch.randn(8, 3, 32, 32),)),
        "transformer_block": (transformer_block().eval(), (torch.randn(8, 16, 64),)),
        "elementwise_4M": (_elementwise_chain, (torch.randn(4 * 1024 * 1024),)),
        "softmax_4096x1024": (_softmax, (torch.randn(4096, 1024),)),
        "layernorm_4096x1024": (_layernorm, (torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024))),
        "matmul_512": (torch.mm, (torch.randn(512, 512), torch.randn(512, 512))),
        "gpt2_like_b8": (TinyGPT().eval(), (torch.randint(0, 256, (8, 32)),)),
    }
    return {name: (_to(fn, device), tuple(x.to(device) for x in xs)) for name, (fn, xs) in table.items()}


def _to(fn, device):
    return fn.to(device) if isinstance(fn, torch.nn.Module) else fn


def _sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn, inputs, repeats: int, device: str) -> tuple[float, float]:
    """(first call seconds, median steady call seconds)."""
    t0 = time.perf_counter()
    fn(*inputs)
    _sync(device)
    first = time.perf_counter() - t0
    for _ in range(3):
        fn(*inputs)
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def measure(name, fn, inputs, repeats, device):
    row = {"name": name}
    backends = {"eager": fn, "inductor": torch.compile(fn, backend="inductor"),
                "mlir": torch.compile(fn, backend="mlir")}
    with torch.no_grad():
        reference = fn(*inputs)
        for backend, f in backends.items():
            torch._dynamo.reset()
            dynamo_mlir.reset()
            first, steady = time_calls(f, inputs, repeats, device)
            row[backend] = steady
            row[f"{backend}_compile"] = max(first - steady, 0.0)
            if backend == "mlir":
                s = dynamo_mlir.stats()
                row["mlir_fallbacks"] = where_ops_ran(s)
                row["mlir_ok"] = torch.allclose(f(*inputs), reference, rtol=1e-4, atol=1e-4)
    return row


def measure_training(name, model, make_optimizer, x, y, repeats, device):
    """Like measure, for a training step: one model/optimizer copy per backend, same steps."""
    row, losses = {"name": name}, {}
    for backend in ("eager", "inductor", "mlir"):
        torch._dynamo.reset()
        dynamo_mlir.reset()
        step = make_step(model, make_optimizer)
        fn = step if backend == "eager" else torch.compile(step, backend=backend)
        recorded = losses[backend] = []
        first, steady = time_calls(lambda *a: recorded.append(fn(*a)), (x, y), repeats, device)
        row[backend], row[f"{backend}_compile"] = steady, max(first - steady, 0.0)
        if backend == "mlir":
            s = dynamo_mlir.stats()
            row["mlir_fallbacks"], row["mlir_graphs"] = where_ops_ran(s), s["graphs_by_kind"]
    row["mlir_ok"] = losses_match(losses["mlir"], losses["eager"])
    return row


def where_ops_ran(s: dict) -> str:
    """What did not run in our generated code: eager ops / calls a region ran eagerly / library calls."""
    return f"{s['ops_fallback']} / {s['runtime_fallback_calls']} / {s['ops_library']}"


def table(rows) -> str:
    head = ("| workload | eager ms | inductor ms | mlir ms | eager/mlir | inductor/mlir | "
            "compile s (inductor / mlir) | mlir eager ops / run-time fallback calls / library calls | matches |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['eager'] * 1e3:.3f} | {r['inductor'] * 1e3:.3f} | {r['mlir'] * 1e3:.3f} | "
            f"{r['eager'] / r['mlir']:.2f} | {r['inductor'] / r['mlir']:.2f} | "
            f"{r['inductor_compile']:.1f} / {r['mlir_compile']:.1f} | {r['mlir_fallbacks']} | {r['mlir_ok']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to run (default cpu)")
    parser.add_argument("--repeats", type=int, default=30, help="timed calls per backend (median reported)")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--train", action="store_true", help="time training steps (train_workloads.py)")
    parser.add_argument("--out", default="", help="also write the table (markdown) to this file")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:  # on a shared machine, an oversubscribed OpenMP pool makes eager times noise
        torch.set_num_threads(args.threads)
    chosen = train_workloads(args.device) if args.train else workloads(args.device)
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k in args.only.split(",")}
    rows = []
    for name, work in chosen.items():
        run = measure_training if args.train else measure
        rows.append(run(name, *work, args.repeats, args.device))
        print(f"measured {name}", file=sys.stderr, flush=True)
    where = torch.cuda.get_device_name() if args.device == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    what = "training steps" if args.train else "calls"
    text = (f"torch {torch.__version__}, {where}, median of {args.repeats} {what}; "
            f"ratios > 1 mean mlir is faster\n\n{table(rows)}\n")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
