"""Dynamic shapes: `dynamic=True` / mark_dynamic give `?` dims and one compiled artifact that
serves every size (Dynamo specializes sizes 0 and 1, so sizes start at 2)."""

import torch

import dynamo_mlir
from helpers import assert_all_compiled, read_stage

SIZES = (2, 7, 64, 1000)


def _run_sizes(fn, make, **compile_kwargs):
    compiled = torch.compile(fn, backend="mlir", **compile_kwargs)
    for n in SIZES:
        x = make(n)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-5)


def test_mean_over_a_dynamic_dim_compiles_once(tmp_path):
    _run_sizes(lambda x: x.mean(dim=1), lambda n: torch.randn(3, n), dynamic=True,
               options={"dump_dir": str(tmp_path)})
    s = assert_all_compiled()
    assert s["graphs"] == 1, dynamo_mlir.explain()
    assert "?" in read_stage(str(tmp_path), "dynamo")


def test_softmax_and_broadcast_bias_with_mark_dynamic():
    bias = torch.randn(16)

    def f(x):
        return torch.softmax(torch.relu(x + bias) * 2.0, dim=-1).sum(dim=0)

    compiled = torch.compile(f, backend="mlir")
    for n in SIZES:
        x = torch.randn(n, 16)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-5, atol=1e-5)
    assert_all_compiled()
    assert dynamo_mlir.stats()["graphs"] == 1, dynamo_mlir.explain()


def test_automatic_dynamic_after_a_recompile():
    f = lambda x: (x * x).mean(dim=0)  # noqa: E731
    compiled = torch.compile(f, backend="mlir")
    for n in SIZES:
        x = torch.randn(n, 5)
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-5, atol=1e-5)
    # a static graph for the first size, then one dynamic graph for all the others
    assert dynamo_mlir.stats()["graphs"] == 2, dynamo_mlir.explain()
    assert_all_compiled()
