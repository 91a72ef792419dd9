"""Run under `qemu-x86_64 -cpu Haswell` by tests/test_cpu_emulated_avx2.py: the half-type cases
of issue 22 compiled on a CPU without AVX-512 (nor AVX-512-BF16), compared with eager there.
Prints one JSON object: the CPU torch saw, and per case (error vs eager, ops compiled, eager)."""

import json
import sys

import torch

import dynamo_mlir

bf, f16 = torch.bfloat16, torch.float16


def _index_reduce(reduce):
    return lambda x, i, s: x.index_reduce(0, i, s, reduce, include_self=True) * 1


CASES = {
    "std_bf16": (lambda x: torch.std(x, dim=1) * 2, lambda: [torch.randn(4, 33, dtype=bf)]),
    "var_bf16": (lambda x: torch.var(x, dim=0), lambda: [torch.randn(5, 7, dtype=bf)]),
    "std_mean_bf16": (lambda x: torch.std_mean(x, dim=1), lambda: [torch.randn(3, 20, dtype=bf)]),
    "var_mean_bf16": (lambda x: torch.var_mean(x, dim=1), lambda: [torch.randn(3, 20, dtype=bf)]),
    "index_reduce_amax_bf16": (_index_reduce("amax"), lambda: [torch.randn(5, 3, dtype=bf), torch.tensor([0, 4, 0, 2]),
                                                              torch.randn(4, 3, dtype=bf)]),
    "index_reduce_amin_bf16": (_index_reduce("amin"), lambda: [torch.randn(5, 3, dtype=bf), torch.tensor([1, 1, 3, 2]),
                                                              torch.randn(4, 3, dtype=bf)]),
    "cummax_bf16": (lambda x: torch.cummax(x, dim=1)[0] + 1, lambda: [torch.randn(4, 64, dtype=bf)]),
    "softmax_f16": (lambda x: torch.softmax(x * 3, dim=-1), lambda: [torch.randn(4, 40, dtype=f16)]),
}


def run(name: str) -> dict:
    fn, make = CASES[name]
    torch.manual_seed(0)
    inputs = make()
    torch._dynamo.reset()
    dynamo_mlir.reset()
    got = torch.compile(fn, backend="mlir")(*inputs)
    want = fn(*inputs)
    pairs = zip(got, want) if isinstance(got, tuple) else [(got, want)]
    error = max((g.double() - w.double()).abs().max().item() for g, w in pairs)
    s = dynamo_mlir.stats()
    return {"error": error, "compiled": s["ops_compiled"], "eager": s["fallback_ops"]}


if __name__ == "__main__":
    names = sys.argv[1:] or sorted(CASES)
    print(json.dumps({"cpu": torch.backends.cpu.get_cpu_capability(), "cases": {n: run(n) for n in names}}))
