"""Dynamic shapes, op by op: slices by symbolic bounds, scans, advanced indexing and gathers
along `?` dims (what GPT-2 and BERT called at several sequence lengths left eager: issue 27).
Each form runs at several sizes through one compiled graph, matches eager, and is compiled
(no eager op, the op among the compiled ones)."""

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.dialects import dynamo as dy
from helpers import assert_all_compiled, read_stage, zeros_runtime

SIZES = (7, 9, 20, 33)  # from 7: Dynamo specializes sizes 0 and 1, which short slices could make
BIAS = torch.randn(1, 1, 64, 64, generator=torch.Generator().manual_seed(0))


def _run_sizes(fn, make, op: str, sizes=SIZES, **compile_kwargs) -> dict:
    compiled = torch.compile(fn, backend="mlir", dynamic=True, **compile_kwargs)
    for n in sizes:
        inputs = make(n)
        got, want = compiled(*inputs), fn(*inputs)
        for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
            assert g.shape == w.shape
            torch.testing.assert_close(g, w)
    s = assert_all_compiled()
    assert s["graphs"] == 1 and op in s["compiled_ops"], dynamo_mlir.explain()
    return s


def _row(n):
    return (torch.randn(2, n, generator=torch.Generator().manual_seed(n)),)


# ----------------------------------------------------------------------------- variance


VARIANCES = {  # correction -> fn(x [3, n, 4]) (literals: a closure's int would be a symbolic input)
    0: lambda x: torch.var_mean(x, dim=(1,), correction=0),
    1: lambda x: torch.var_mean(x, dim=(1,), correction=1),
    2: lambda x: torch.var_mean(x, dim=(1,), correction=2),
}


@pytest.mark.parametrize("correction", list(VARIANCES))
def test_variance_over_a_dynamic_dim_divides_by_the_count_read_per_call(correction):
    """var_mean over a symbolic dim: the mean divides by the dim's size and the variance by
    max(size - correction, 0), both read at run time (a layer norm of symbolic width)."""
    _run_sizes(VARIANCES[correction], lambda n: (torch.randn(3, n, 4, generator=torch.Generator().manual_seed(n)),),
               "aten.var_mean.correction")


# ----------------------------------------------------------------------------- slices

SLICES = {  # name -> fn(x [2, n])
    "short_of_the_end": lambda x: x[:, : x.shape[1] - 1] * 2,
    "negative_end": lambda x: x[:, :-3] * 2,
    "negative_start": lambda x: x[:, -3:] * 2,
    "step": lambda x: x[:, 1::3] * 2,
    "strided_window": lambda x: x[:, 2 : x.shape[1] - 1 : 2] * 2,
    # GPT-2's packed-sequence test: position diffs of a shifted cat, x[:, 0:n] and x[:, 1:n + 1].
    "shifted_pair": lambda x: (lambda c: c[:, 1 : x.shape[1] + 1] - c[:, 0 : x.shape[1]])(torch.cat([x[:, :1] - 1, x], -1)),
}


@pytest.mark.parametrize("name", list(SLICES))
def test_slice_by_symbolic_bounds_compiles_once(name):
    _run_sizes(SLICES[name], _row, "aten.slice.Tensor")


def test_causal_mask_of_a_static_buffer_slices_with_size_values(tmp_path):
    """bias[:, :, k - q : k, :k] (GPT-2's causal mask with a past of length p): a static operand
    sliced at a symbolic offset to symbolic sizes, the bounds as dynamo.slice's index operands.
    (mark_dynamic, not dynamic=True, which would make the global buffer's dims `?` too.)"""
    def f(x, past):
        k = past.shape[1] + x.shape[1]
        return BIAS[:, :, k - x.shape[1] : k, :k] * x.sum()

    compiled = torch.compile(f, backend="mlir", options={"dump_dir": str(tmp_path)})
    for n in SIZES:
        x, past = torch.randn(2, n), torch.randn(2, n // 2 + 3)
        torch._dynamo.mark_dynamic(x, 1)
        torch._dynamo.mark_dynamic(past, 1)
        torch.testing.assert_close(compiled(x, past), f(x, past))
    s = assert_all_compiled()
    assert s["graphs"] == 1 and "aten.slice.Tensor" in s["compiled_ops"], dynamo_mlir.explain()
    text = read_stage(str(tmp_path), "dynamo")
    assert '"dynamo.slice"(%arg' in text and "operandSegmentSizes = array<i32: 1, 1, 1>" in text, text
    assert "tensor<1x1x64x64xf32>" in text, text


def _run_slice_ir(text: str, step: int, x: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
    from torch_mlir import ir

    from dynamo_mlir.codegen import resolve, run_stages
    from dynamo_mlir.codegen.cpu import runtime
    from dynamo_mlir.codegen.signature import Signature, SizeSpec, TensorSpec
    from dynamo_mlir.codegen.target import get_target
    from dynamo_mlir.dialects import new_context

    options = resolve({"target": "cpu"})
    shape = lambda inputs: [(len(range(inputs[0].shape[0])[inputs[1]:inputs[2]:step]),)]  # noqa: E731
    signature = Signature("main", (TensorSpec((-1,), torch.float32), SizeSpec("lo"), SizeSpec("hi")),
                          (TensorSpec((-1,), torch.float32),), shape)
    with new_context(), ir.Location.unknown():
        run = run_stages(ir.Module.parse(text), get_target("cpu"), options, graph_name="main")
        return runtime.load(run.artifact, signature, options)(x, lo, hi)[0]


def _slice_of_unknown_signs(step: int) -> str:
    """func @main(x: tensor<?xf32>, lo: index, hi: index) = x[lo:hi:step], imported with bounds
    whose signs no range decides (unbacked symbols: no guard ever chose a branch)."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch_mlir import ir
    from torch_mlir.dialects import func

    from dynamo_mlir.dialects import new_context
    from dynamo_mlir.frontend.aten.movement import slice_symbolic
    from dynamo_mlir.frontend.importer import ImportContext
    from dynamo_mlir.frontend.sizes import expr_of

    env = ShapeEnv()
    n, lo, hi, length = (env.create_unbacked_symint() for _ in range(4))
    with new_context(), ir.Location.unknown():
        module = ir.Module.create()
        t, index = ir.RankedTensorType.get([dy.DYN], ir.F32Type.get()), ir.IndexType.get()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("main", ([t, index, index], [t]))
        block = fn.add_entry_block()
        ctx = ImportContext()
        ctx.sizes.bind_tensor(block.arguments[0], [n])
        ctx.sizes.bind_value(expr_of(lo), block.arguments[1])
        ctx.sizes.bind_value(expr_of(hi), block.arguments[2])
        with ir.InsertionPoint(block):
            func.ReturnOp([slice_symbolic(ctx, block.arguments[0], 0, lo, hi, step, n, [length])])
        module.operation.verify()
        return str(module)


@pytest.mark.parametrize("step", [1, 3])
def test_slice_bounds_of_unknown_sign_follow_python_at_run_time(step):
    """Where the symbols' ranges leave a bound's sign open, the bound is normalized at run time
    (negative: from the end; then clamped to [0, n]) and the length is ceil(max(hi - lo, 0) /
    step): every bound, in range or not, gives Python's slice."""
    text = _slice_of_unknown_signs(step)
    assert "arith.select" in text and "arith.maxsi" in text, text
    x = torch.arange(10, dtype=torch.float32)
    for lo in range(-13, 14, 2):
        for hi in range(-14, 14, 3):
            torch.testing.assert_close(_run_slice_ir(text, step, x, lo, hi), x[lo:hi:step], msg=f"x[{lo}:{hi}:{step}]")


def test_a_static_tensor_beside_a_size_argument_on_the_cpu():
    """bias[k : k + 4] * 2 + x with x static and k a dynamic int: the region's tensors are all
    static and k is an `index` argument. The code was compiled for bare pointers (static
    memrefs) and called with memref descriptors (a size argument makes the runtime's function
    one of symbolic sizes): it read its buffers from the wrong slots and crashed the process
    (codegen/zero_size.uses_bare_pointers)."""
    def f(x, k):
        return BIAS[0, 0, k : k + 4] * 2 + x

    x = torch.randn(4, 64)
    torch._dynamo.mark_static(x)
    compiled = torch.compile(f, backend="mlir", dynamic=True)
    for k in (3, 5, 9, 20):
        torch.testing.assert_close(compiled(x, k), f(x, k))
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {} and s["ops_compiled"] >= 3 and s["graphs"] == 1, dynamo_mlir.explain()


def test_a_symbolic_slice_bound_compiles_on_the_cuda_target(tmp_path):
    """bias[k : k + 4] has static tensors but a SymInt bound, which makes index values in the IR:
    the cuda target takes k as an `index` argument of the host schedule, the slice's offset an
    expression of it (the PTX is generated here; tests/test_cuda_dynamic.py runs such graphs)."""
    def f(x, k):
        return BIAS[0, 0, k : k + 4] * 2 + x

    x = torch.randn(4, 64)
    torch._dynamo.mark_static(x)
    with zeros_runtime("cuda"):
        compiled = torch.compile(f, backend="mlir", dynamic=True,
                                 options={"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path)})
        compiled(x, 3)
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["fallback_ops"] == {} and s["ops_compiled"] >= 3, dynamo_mlir.explain()
    host = "\n".join(p.read_text() for p in tmp_path.glob("*.host.txt"))
    assert "%1: index" in host and "muli(%1, 64):index" in host, host  # k, and the slice's offset k * 64


@pytest.mark.parametrize("name, fn", [
    ("float", lambda x: (x / (x.shape[0] * 2)).exp()),
    ("int", lambda x: (x.int() * (x.shape[0] + 1)) - 3),
    ("reversed", lambda x: (x.shape[1] - x) * 2),
])
def test_a_size_as_an_elementwise_operand_is_compiled(name, fn):
    """A SymInt operand of an elementwise op (`x / (2 * s0)`, a hand-written mean) was 'no
    imported value' and ran eagerly: it is dynamo.size_tensor of the size the region builds
    from its inputs' dims, converted as torch converts the Python int."""
    _run_sizes(fn, lambda n: (torch.randn(n, n + 2),), "aten.mul.Tensor" if name == "int" else
               "aten.div.Tensor" if name == "float" else "aten.sub.Tensor")


def test_a_size_as_an_elementwise_operand_compiles_on_the_cuda_target(tmp_path):
    """The same on the cuda target, every stage generated here (strict: a stage failing raises;
    with no GPU the run raises at the end): the size's conversion is a host step."""
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    with pytest.raises(Exception, match="not a CUDA device"):
        torch.compile(lambda x: (x.int() * (x.shape[0] + 1)) - 3, backend="mlir", dynamic=True,
                      options=options)(torch.randn(5, 4))
    assert dynamo_mlir.stats()["fallback_ops"] == {}, dynamo_mlir.explain()
    assert "size_tensor" in "\n".join(p.read_text() for p in tmp_path.glob("*.dynamo.mlir"))


def test_padding_by_a_symbolic_amount_is_fills_concatenated_around_the_tensor(tmp_path):
    """A mask padded up to a multiple of 8 along its symbolic length (what SDPA's memory-efficient
    kernel asks of its bias on CUDA): the amount is a size expression, so constant_pad_nd becomes
    a fill of that size concatenated after the tensor; one graph serves every length."""
    import torch.nn.functional as F

    def f(x):
        return F.pad(x, (0, (8 - x.shape[-1] % 8) % 8), value=-1.0) * 2

    dynamo_mlir.reset()
    compiled = torch.compile(f, backend="mlir", dynamic=True, options={"dump_dir": str(tmp_path)})
    for n in (5, 13, 16, 21):
        x = torch.randn(3, n)
        torch.testing.assert_close(compiled(x), f(x))
    s = assert_all_compiled(min_ops=2)
    assert s["graphs"] == 1, dynamo_mlir.explain()
    assert "dynamo.concat" in read_stage(str(tmp_path), "dynamo")


# ----------------------------------------------------------------------------- scans

SCANS = {  # name -> fn(x [2, n])
    "packed_sequence_mask": lambda x: (x > 0).cumsum(-1),  # GPT-2's mask: a bool cumsum to int64
    "cumsum": lambda x: x.cumsum(1) * 2,
    "cumprod": lambda x: (x * 0.1 + 1).cumprod(-1),
}


@pytest.mark.parametrize("name", list(SCANS))
def test_scan_along_a_dynamic_dim_compiles_once(name):
    op = "aten.cumprod.default" if name == "cumprod" else "aten.cumsum.default"
    _run_sizes(SCANS[name], _row, op)


def test_a_scan_longer_than_compiled_for_runs_eagerly_per_call():
    """The scan's pairwise mask grows as n * n: a call whose `?` length is over MAX_SCAN runs the
    region eagerly (a run-time fallback, said why); the other calls stay compiled."""
    from dynamo_mlir.frontend.aten.scan import MAX_SCAN

    fn = SCANS["packed_sequence_mask"]
    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for n in (7, MAX_SCAN + 5, 9):
        x = torch.randn(2, n)
        torch.testing.assert_close(compiled(x), fn(x))
    s = dynamo_mlir.stats()
    assert s["graphs"] == 1 and s["ops_fallback"] == 0 and s["runtime_fallback_calls"] == 1, dynamo_mlir.explain()
    (reasons,) = [r["reasons"] for r in s["runtime_fallbacks"].values()]
    assert list(reasons) == [f"scan over {MAX_SCAN + 5} elements (compiled for at most {MAX_SCAN})"]


# ----------------------------------------------------------------------------- indexing and gathers


def _gpt2_mask(x):
    """transformers' sdpa_mask: a [1, n] tensor indexed by a batch arange [1, 1, 1, 1] and a
    query (or key) arange [1, 1, n, 1] (or [1, 1, 1, n]), as GPT-2 builds its causal mask."""
    e, batch, q = x.sum(1)[None], torch.arange(1)[:, None, None, None], torch.arange(x.shape[0])
    return e[batch, q[None, None, :, None]] <= e[batch, q[None, None, None, :]]


INDEXING = {  # name -> fn(x [n, 4])
    "gpt2_mask": _gpt2_mask,
    "rows": lambda x: x[torch.arange(x.shape[0]) % 3],
    "negative_rows": lambda x: x[-torch.arange(1, x.shape[0] + 1)],
    "a_static_index_into_a_dynamic_tensor": lambda x: x[:, torch.tensor([0, 2, -1])],
    "non_adjacent": lambda x: x[None][torch.tensor([0]), :, torch.arange(4) % 2],
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_index_with_dynamic_dims_compiles_once(name):
    make = lambda n: (torch.randn(n, 4, generator=torch.Generator().manual_seed(n)).cumsum(0),)  # noqa: E731
    _run_sizes(INDEXING[name], make, "aten.index.Tensor")


def test_gather_of_a_static_buffer_along_a_dynamic_length_compiles_once():
    """BERT's token type ids: a registered buffer expanded to the batch and gathered at
    arange(n) (the `?` sequence length)."""
    buffer = torch.arange(64)[None] * 3
    fn = lambda x: torch.gather(buffer.expand(x.shape[0], -1), 1, torch.arange(x.shape[1]).expand(x.shape[0], -1)) + x.long()  # noqa: E731
    _run_sizes(fn, lambda n: (torch.randn(3, n),), "aten.gather.default")


# ----------------------------------------------------------------------------- models


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_language_model_over_sequence_lengths_runs_no_op_eagerly(name):
    """Automatic dynamic shapes (the second length recompiles with symbolic sizes): two graphs,
    no eager op, outputs as eager's at every length."""
    from dynamo_mlir.tools.models import hf_model

    torch.manual_seed(0)
    model = hf_model(name, width=64, layers=1, positions=128).eval()
    eager = lambda ids: model(input_ids=ids).logits  # noqa: E731
    compiled = torch.compile(eager, backend="mlir")
    with torch.no_grad():
        for n in (32, 48, 64, 80):
            ids = torch.randint(0, 1000, (1, n), generator=torch.Generator().manual_seed(n))
            torch.testing.assert_close(compiled(ids), eager(ids), rtol=1e-4, atol=1e-4)
    s = dynamo_mlir.stats()
    assert s["graphs"] == 2 and s["ops_fallback"] == 0 and s["partitions_failed"] == 0, dynamo_mlir.explain()
    assert s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
