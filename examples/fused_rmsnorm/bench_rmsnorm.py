"""CPU speed of fused.rms_norm: the cpu target's own rule (linalg_rule.py) against the generic
expansion into core ops (generic.py), and eager PyTorch, on rows x hidden float32 (and bf16).

    .venv/bin/python examples/fused_rmsnorm/bench_rmsnorm.py [--rows 4096] [--hidden 4096]

Not a test: figures depend on the machine. Each variant is compiled once, warmed up, then timed
as the median of --repeat runs."""

import argparse
import statistics
import time

import torch

import dynamo_mlir
import dynamo_mlir_rmsnorm as rmsnorm
from dynamo_mlir import plugin


def _fn(x, w):
    return rmsnorm.rms_norm(x, w, 1e-6)


def _median_ms(fn, args, repeat):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _compiled(args, repeat, generic: bool):
    torch._dynamo.reset()
    dynamo_mlir.reset()
    rule = plugin.remove_lowering(rmsnorm.RMSNormOp, target="cpu") if generic else None
    try:
        ms = _median_ms(torch.compile(_fn, backend="mlir", options={"strict": True}), args, repeat)
    finally:
        if rule is not None:
            plugin.register_lowering(rmsnorm.RMSNormOp, rule, target="cpu")
    assert dynamo_mlir.stats()["compiled_ops"] == {"fused.rms_norm.default": 1}, dynamo_mlir.stats()
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args()
    print(f"fused.rms_norm on cpu, {a.rows}x{a.hidden}, {torch.get_num_threads()} torch threads, median ms")
    print(f"{'dtype':10} {'eager':>9} {'generic':>9} {'cpu rule':>9} {'speedup':>8}")
    for dtype in (torch.float32, torch.bfloat16):
        args = (torch.randn(a.rows, a.hidden, dtype=dtype), torch.randn(a.hidden, dtype=dtype))
        eager = _median_ms(_fn, args, a.repeat)
        generic = _compiled(args, a.repeat, generic=True)
        target = _compiled(args, a.repeat, generic=False)
        print(f"{str(dtype)[6:]:10} {eager:9.2f} {generic:9.2f} {target:9.2f} {generic / target:7.2f}x")


if __name__ == "__main__":
    main()
