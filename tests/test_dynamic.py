"""Dynamic shapes: `dynamic=True` / mark_dynamic give `?` dims and one compiled artifact that
serves every size (Dynamo specializes sizes 0 and 1, so sizes start at 2)."""

import time

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.frontend.sizes import python_evaluator
from dynamo_mlir.tools.models import transformer_block
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


@pytest.mark.parametrize("mode", ["mark_dynamic", "dynamic=True"])
def test_transformer_block_over_sequence_lengths_compiles_once_with_no_eager_op(mode, tmp_path):
    """Reshapes of [B*T, C] back to [B, T, C], expands, bmm and the softmax guard's fill all
    get their `?` sizes as values: SymInt inputs routed into the region as `index` arguments.
    With dynamic=True the batch is 3: Dynamo's duck sizing would give B=2 and T=2 one symbol."""
    torch.manual_seed(0)
    model = transformer_block().eval()
    batch = 2 if mode == "mark_dynamic" else 3
    kwargs = {"dynamic": True} if mode == "dynamic=True" else {}
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)}, **kwargs)
    for t in SIZES:
        x = torch.randn(batch, t, 64)
        if mode == "mark_dynamic":
            torch._dynamo.mark_dynamic(x, 1)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    # The linears and the attention's bmm call sgemm_ with their `?` sizes (and bmm's strides)
    # read at run time.
    s = assert_all_compiled(min_ops=70, library={"aten.mm.default": 4, "aten.bmm.default": 2})
    assert s["graphs"] == 1 and s["ops_fallback"] == 0, dynamo_mlir.explain()
    ir_text = read_stage(str(tmp_path), "dynamo")
    assert '"dynamo.reshape"' in ir_text and "index" in ir_text


@pytest.mark.parametrize("dim", [1, 2], ids=["along_the_dynamic_dim", "off_it"])
def test_cat_with_a_dynamic_dim_compiles_once(dim):
    """A KV cache's append: cat([past, new], dim=1) with the past's length dynamic; and a cat
    along a static dim of tensors that share the dynamic one."""
    def f(past, new):
        return torch.cat([past * 2, new], dim=dim).sum(dim=-1)

    compiled = torch.compile(f, backend="mlir", dynamic=True)
    for n in SIZES:
        past = torch.randn(3, n, 4)
        new = torch.randn(3, 1 if dim == 1 else n, 5 if dim == 2 else 4)
        torch.testing.assert_close(compiled(past, new), f(past, new), rtol=1e-5, atol=1e-5)
    s = assert_all_compiled()
    assert s["graphs"] == 1 and "aten.cat.default" in s["compiled_ops"], dynamo_mlir.explain()


def test_float_size_expression_is_unsupported():
    """F.interpolate(scale_factor=2.3) on a dynamic size: trunc(2.3 * s0) has no integer form
    here; the region falls back with the expression named, not an IndexError."""
    import sympy
    from torch.utils._sympy.functions import TruncToInt

    from dynamo_mlir.frontend.registry import Unsupported

    s0 = sympy.symbols("s0", integer=True, positive=True)
    with pytest.raises(Unsupported, match="size expression 2.3"):
        python_evaluator([s0], [[TruncToInt(sympy.Float(2.3) * s0)]])


def test_output_shapes_are_precompiled_python():
    """FloorDiv/Mod size expressions become one Python lambda at compile time."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, PythonMod

    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    evaluate, source = python_evaluator([s0, s1], [[s0 * s1, 64], [FloorDiv(s0 * s1, 4), PythonMod(s0, 3) + 1]])
    assert "sympy" not in source and "//" in source and "%" in source
    assert evaluate(7, 5) == [(35, 64), (8, 2)]
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        evaluate(7, 5)
    assert (time.perf_counter() - t0) / n < 20e-6  # microseconds, not sympy's milliseconds


def test_a_target_without_dynamic_shapes_leaves_symbolic_nodes_eager_with_the_reason():
    """A target whose capabilities lack dynamic_shapes (here the cuda target without it): the
    partitioner refuses nodes with symbolic sizes up front, instead of admitting them and failing
    at the gpu stage (the fuzzer's cuda run: 'region(s) failed to compile')."""
    import dataclasses

    from dynamo_mlir.codegen.target import get_target, register_target

    cuda = get_target("cuda")
    zeros = lambda artifact, sig, options: lambda *inputs: [torch.zeros(o.shape, dtype=o.dtype) for o in sig.outputs]
    register_target(dataclasses.replace(cuda, load=zeros, capabilities=cuda.capabilities - {"dynamic_shapes"}),
                    override=True)
    try:
        f = lambda x: torch.softmax(x * 2, dim=-1) + 1
        torch.compile(f, backend="mlir", dynamic=True, options={"target": "cuda", "cuda_arch": "sm_90"})(torch.randn(3, 5))
    finally:
        register_target(cuda, override=True)
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["ops_compiled"] == 0, dynamo_mlir.explain()
    assert s["fallback_reasons"] and all("cuda target compiles static shapes only" in why
                                         for _, why in s["fallback_reasons"]), s["fallback_reasons"]


def test_python_float_math_under_dynamic_true_compiles():
    """With dynamic=True Dynamo passes a Python float (math.pi in GPT-2's NewGELU) as a 0-d float64
    input, so `math.sqrt(2.0 / math.pi)` reaches the graph as aten.true_divide.Tensor on 0-d
    tensors: it compiles as division (it ran eagerly, and split the graph)."""
    import math

    f = lambda x: torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0)))  # noqa: E731
    compiled = torch.compile(f, backend="mlir", dynamic=True)
    for n in SIZES[:2]:
        x = torch.randn(3, n)
        torch.testing.assert_close(compiled(x), f(x))
    s = assert_all_compiled()
    assert s["compiled_ops"].get("aten.true_divide.Tensor") == 1, dynamo_mlir.explain()


# ----------------------------------------------------------------------------- a language model's inputs

TABLE = torch.randn(100, 8, generator=torch.Generator().manual_seed(0))
TOKEN_OPS = {  # name -> fn(ids [3, n]), what each must compile to with `?` sequence lengths
    "embedding": lambda ids: torch.nn.functional.embedding(ids, TABLE) * 2,
    "positions": lambda ids: ids + torch.arange(ids.shape[1]),
    "shifted": lambda ids: ids[:, 1:] * 2,
    # A causal mask: [n, 1] <= [1, n] broadcast to [n, n], the sizes read off the symbols.
    "causal_mask": lambda ids: (torch.arange(ids.shape[1])[:, None] <= torch.arange(ids.shape[1])[None, :]) * ids[:, None, :],
    # GPT-2's qkv split: along the static hidden dim, the sequence dim `?`.
    "qkv_split": lambda ids: [t * 2 for t in torch.nn.functional.embedding(ids, TABLE).split([2, 2, 4], dim=-1)],
}


@pytest.mark.parametrize("name", list(TOKEN_OPS))
def test_token_ops_over_sequence_lengths_compile_once_with_no_eager_op(name):
    fn = TOKEN_OPS[name]
    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for n in SIZES[1:]:  # from 7: x[:, 1:] of 2 would be a size-1 result, which Dynamo specializes
        ids = torch.randint(0, 100, (3, n), generator=torch.Generator().manual_seed(n))  # 3: no duck-sized dims
        got, want = compiled(ids), fn(ids)
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
            assert g.shape == w.shape
            torch.testing.assert_close(g, w)
    assert_all_compiled()
    assert dynamo_mlir.stats()["graphs"] == 1, dynamo_mlir.explain()


DYNAMIC_LEFT_EAGER = {  # forms whose result sizes the rules cannot build yet: eager, never wrong
    "split_along_the_dynamic_dim": (lambda x: [t * 2 for t in torch.cat([x, x], 1).split([x.shape[1]] * 2, 1)],
                                    "aten.split_with_sizes.default"),
}


@pytest.mark.parametrize("name", list(DYNAMIC_LEFT_EAGER))
def test_dynamic_forms_without_a_rule_run_eagerly_and_match(name):
    fn, op = DYNAMIC_LEFT_EAGER[name]
    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for n in SIZES:
        x = torch.randn(2, n)
        got, want = compiled(x), fn(x)
        for g, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
            torch.testing.assert_close(g, w)
    s = dynamo_mlir.stats()
    assert op in s["fallback_ops"] and s["ops_compiled"] > 0, dynamo_mlir.explain()
