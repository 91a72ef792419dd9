"""Scatters (index_put, put, scatter/scatter_reduce, index_reduce, masked_scatter, the view
scatters): compiled with no eager fallback, bit-equal to eager, duplicates and negative indices
included; gradients through them; the IR is the serial loop nest the design says."""

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.lowering.registry import lowered_ops
from helpers import assert_all_compiled, assert_close_to_float32, assert_fallbacks, read_stage

r = torch.randn


def _idx(*values):
    return torch.tensor(values)


def _compiled(fn, *inputs):
    """fn compiled, called on the inputs themselves (a test can then check they are not written)."""
    return torch.compile(fn, backend="mlir", dynamic=False)(*inputs)


def _equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual, expected) or torch.allclose(actual, expected, rtol=0, atol=0, equal_nan=True), \
        f"\n{actual}\n!=\n{expected}"


def _set_columns(x, i, v):
    """x[:, i] = v: index_put with a leading None index."""
    y = x.clone()
    y[:, i] = v
    return y


# id, function, inputs
CASES = [
    ("index_put_dup_last_wins", lambda x, i, v: torch.index_put(x, (i,), v),
     lambda: (r(5, 4), _idx(0, 3, 0, 3), r(4, 4))),
    ("index_put_accumulate_dup_neg", lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True),
     lambda: (r(5, 4), _idx(0, -1, 0, 4, -5), r(5, 4))),
    ("index_put_two_broadcast_indices", lambda x, i, j, v: torch.index_put(x, (i, j), v, accumulate=True),
     lambda: (r(5, 5), _idx(0, 1, 1, -1).reshape(4, 1), _idx(3, -2, 3), r(4, 3))),
    ("index_put_sliced_first_dim", _set_columns,
     lambda: (r(3, 6, 2), _idx(5, -6, 2), r(3, 3, 2))),
    ("index_put_bool_mask_scalar", lambda x, m: torch.index_put(x, (m,), torch.tensor(2.5)),
     lambda: (r(4, 3), torch.tensor([True, False, True, True]))),
    ("index_put_bool_mask_rows", lambda x, m, v: torch.index_put(x, (m,), v, accumulate=True),
     lambda: (r(4, 3), torch.tensor([True, False, True, False]), r(2, 3))),
    ("index_add_dup", lambda x, i, s: x.index_add(1, i, s, alpha=2.0), lambda: (r(3, 5), _idx(4, 0, 4, 4), r(3, 4))),
    ("index_copy", lambda x, i, s: x.index_copy(0, i, s), lambda: (r(6, 2), _idx(5, 1, 0), r(3, 2))),
    ("index_fill_neg", lambda x, i: x.index_fill(1, i, -7.0), lambda: (r(3, 5), _idx(-1, 2))),
    ("put_accumulate", lambda x, i, s: x.put(i, s, accumulate=True), lambda: (r(3, 4), _idx(0, -1, 0, 11, 5), r(5))),
    ("put", lambda x, i, s: x.put(i, s), lambda: (r(2, 3), _idx(5, -6, 2), r(3))),
    ("scatter_src_dup", lambda x, i, s: torch.scatter(x, 0, i, s), lambda: (r(4, 3), _idx(1, 1, 3, 1, 1, 0).reshape(2, 3), r(3, 3))),
    ("scatter_value_dim1", lambda x, i: torch.scatter(x, 1, i, 1.5), lambda: (r(3, 5), _idx(4, 0, 2).reshape(3, 1))),
    ("scatter_add", lambda x, i, s: torch.scatter_add(x, 1, i, s), lambda: (r(3, 4), torch.randint(0, 4, (3, 6)), r(3, 7))),
    ("scatter_reduce_multiply", lambda x, i, s: torch.scatter(x, 0, i, s, reduce="multiply"),
     lambda: (r(4, 2), torch.randint(0, 4, (6, 2)), r(6, 2))),
    ("masked_scatter_broadcast_mask", lambda x, m, s: x.masked_scatter(m, s),
     lambda: (r(4, 5), torch.tensor([True, False, False, True, True]), r(25))),
    ("slice_scatter_step", lambda x, s: torch.slice_scatter(x, s, 1, -8, None, 3), lambda: (r(3, 10), r(3, 3))),
    ("slice_scatter_dim0", lambda x, s: torch.slice_scatter(x, s, 0, 1, 3), lambda: (r(5, 2), r(2, 2))),
    ("diagonal_scatter_offset", lambda x, s: torch.diagonal_scatter(x, s, 1), lambda: (r(4, 5), r(4))),
    ("diagonal_scatter_dims", lambda x, s: torch.diagonal_scatter(x, s, -1, 2, 0), lambda: (r(5, 3, 4), r(3, 3))),
    ("as_strided_scatter", lambda x, s: torch.as_strided_scatter(x, s, (2, 3), (1, 4), 2), lambda: (r(4, 5), r(2, 3))),
    ("max_unpool2d", lambda x, i: F.max_unpool2d(x, i, 2), lambda: F.max_pool2d(r(2, 3, 6, 4), 2, return_indices=True)),
]

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_scatter_matches_eager(case):
    _, fn, make = case
    inputs = make()
    before = [x.clone() for x in inputs]
    expected = fn(*before)
    _equal(_compiled(fn, *inputs), expected)
    assert_all_compiled()
    assert all(torch.equal(a, b) for a, b in zip(inputs, before)), "the compiled scatter wrote its input"


def _both_include_self(op, reduce):
    """One graph computing the reduce with include_self True and False (one compile)."""
    return lambda x, i, s: torch.stack([op(x, i, s, reduce, include_self=flag) for flag in (True, False)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce(reduce, dtype):
    """Duplicates and never-written positions; a NaN update wins amax/amin, as in eager. bf16:
    the float32 result of the same values rounded once, within bf16 precision."""
    src = r(6, 3)
    src[2, 1] = float("nan")
    index = torch.tensor([[0, 2, 2], [2, 2, 0], [0, 0, 0], [5, 2, 2], [2, 5, 2], [0, 2, 5]])
    fn = _both_include_self(lambda *a, **k: torch.scatter_reduce(a[0], 0, *a[1:], **k), reduce)
    x = torch.linspace(-3, 3, 21).reshape(7, 3)
    x, src = x.to(dtype), src.to(dtype)
    got = _compiled(fn, x, index, src)
    if dtype == torch.bfloat16:
        assert_close_to_float32(got, fn(x.float(), index, src.float()))
    else:
        _equal(got, fn(x, index, src))
    assert_all_compiled()


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce):
    fn = _both_include_self(lambda x, i, s, reduce, include_self: x.index_reduce(1, i, s, reduce, include_self=include_self), reduce)
    x, index, src = r(3, 6), torch.tensor([0, 5, 0, 1, 0]), r(3, 5)
    _equal(_compiled(fn, x, index, src), fn(x, index, src))
    assert_all_compiled()


def test_scatter_reduce_mean_int_floors():
    fn = lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "mean", include_self=False)
    x, index, src = torch.randint(-9, 9, (4,)), torch.tensor([1, 1, 3, 1]), torch.tensor([-7, 2, 5, 1])
    _equal(_compiled(fn, x, index, src), fn(x, index, src))
    assert_all_compiled()


def test_bf16_accumulate():
    """bf16 index_put (accumulate) and scatter_add with duplicate indices: the float32 result of
    the same values rounded once, within bf16 precision (our index_put rounds after each add,
    as eager's serial kernel does; scatter_add sums in float32)."""
    fn = lambda x, i, v, y, j, s: (torch.index_put(x, (i,), v, accumulate=True), torch.scatter_add(y, 0, j, s))
    b = torch.bfloat16
    inputs = (r(4, 3).to(b), _idx(1, 1, 1, 2, 1, 1, 1), r(7, 3).to(b), r(3, 4).to(b), torch.randint(0, 3, (9, 4)), r(9, 4).to(b))
    as_float = [t.float() if t.dtype == b else t for t in inputs]
    for actual, expected in zip(_compiled(fn, *inputs), fn(*as_float)):
        assert actual.dtype == b
        assert_close_to_float32(actual, expected)
    assert_all_compiled()


def test_bf16_index_add_stays_eager():
    """index_add decomposes to index_put, but eager's index_add kernel may sum bf16 in float32."""
    fn = lambda x, i, s: x.index_add(1, i, s)
    x, i, s = r(3, 5).bfloat16(), torch.randint(0, 5, (9,)), r(3, 9).bfloat16()
    _compiled(fn, x, i, s)
    reasons = [why for _, why in dynamo_mlir.stats()["fallback_reasons"]]
    assert any("half-precision accumulate" in why for why in reasons), reasons


# Backward ops without an import rule yet: they run eagerly, the rest compiles.
EAGER_BACKWARD = {"masked_scatter": {"aten.masked_scatter_backward.default": 1}}


@pytest.mark.parametrize("fn,make", [
    (lambda x, v, i: torch.index_put(x, (i,), v, accumulate=True), lambda: (r(5, 3), r(4, 3), _idx(0, 4, 0, -1))),
    (lambda x, s, i: torch.scatter_reduce(x, 1, i, s, "amax", include_self=False), lambda: (r(3, 5), r(3, 4), torch.randint(0, 5, (3, 4)))),
    (lambda x, s: torch.slice_scatter(x, s, 1, 1, 7, 2), lambda: (r(3, 8), r(3, 3))),
    (lambda x, s: torch.diagonal_scatter(x, s, -1), lambda: (r(4, 4), r(3))),
    (lambda x, m, s: x.masked_scatter(m, s), lambda: (r(3, 4), torch.rand(3, 4) > 0.5, r(12))),
], ids=["index_put", "scatter_amax", "slice_scatter", "diagonal_scatter", "masked_scatter"])
def test_gradients_match_eager(fn, make, request):
    inputs = make()
    leaves = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    twins = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    out = torch.compile(fn, backend="mlir", dynamic=False)(*leaves)
    weights = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    (fn(*twins) * weights).sum().backward()
    _equal(out.detach(), fn(*inputs))
    for a, b in zip(leaves, twins):
        if a.requires_grad:
            _equal(a.grad, b.grad)
    assert_fallbacks(EAGER_BACKWARD.get(request.node.callspec.id, {}))


def test_ir_is_a_serial_loop_nest(tmp_path):
    fn = lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "mean")
    _compiled_with_dump = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)}, dynamic=False)
    _compiled_with_dump(r(4, 3), torch.randint(0, 4, (2, 3)), r(2, 3))
    assert '"dynamo.scatter"' in read_stage(str(tmp_path), "dynamo")
    linalg = read_stage(str(tmp_path), "linalg")
    assert "scf.for" in linalg and "tensor.insert" in linalg and "arith.divf" in linalg


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_one_value_per_slice_is_a_select_not_a_scatter(dim, tmp_path):
    """scatter of one value at one index per slice (cross-entropy's backward: a one-hot row per
    token) compiles to an elementwise select that fuses with what reads it; bit-equal to eager,
    on a non-zero dest and with the indices repeating."""
    x, y = r(6, 7), r(6, 7)
    index = torch.randint(0, x.shape[dim], [1 if d == dim % 2 else n for d, n in enumerate(x.shape)])
    fn = lambda x, i, y: x.scatter(dim, i, -2.5) * y  # noqa: E731
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path), "strict": True}, dynamic=False)(x, index, y)
    _equal(got, fn(x, index, y))
    dynamo = read_stage(str(tmp_path), "dynamo")
    assert '"dynamo.scatter"' not in dynamo and '"dynamo.select"' in dynamo and '"dynamo.iota"' in dynamo, dynamo
    assert_all_compiled()


def test_loop_ops_are_cpu_only():
    """Loops outside a linalg.generic are not for the CUDA pipeline: it leaves masked_scatter to
    eager, and has rules of its own for index_put and scatter (torch calls, not these loops)."""
    from dynamo_mlir.codegen.cuda import library_calls
    from dynamo_mlir.lowering import registry

    for name in ("dynamo.index_put", "dynamo.scatter", "dynamo.masked_scatter"):
        assert name in lowered_ops("cpu")
    assert "dynamo.masked_scatter" not in lowered_ops("cuda")
    assert registry.lookup("dynamo.index_put", "cuda") is library_calls.index_put
    assert registry.lookup("dynamo.scatter", "cuda") is library_calls.scatter


@pytest.mark.parametrize("reduce", ["max", "min", "sum", "mean", "prod"])
def test_segment_reduce(reduce):
    """Empty segments, a NaN, data outside every offset segment, with and without `initial`."""
    data = torch.tensor([1.0, 2.0, float("nan"), 4.0, 5.0, -1.0])
    lengths, offsets, rows = torch.tensor([0, 1, 3, 2]), torch.tensor([1, 1, 3, 5]), torch.tensor([2, 0, 1])
    fn = lambda x, n, o, m: (torch.segment_reduce(x, reduce, lengths=n), torch.segment_reduce(x, reduce, offsets=o, initial=2.0),
                             torch.segment_reduce(x.reshape(3, 2), reduce, lengths=m))
    for actual, expected in zip(_compiled(fn, data, lengths, offsets, rows), fn(data, lengths, offsets, rows)):
        _equal(actual, expected)
    assert_all_compiled()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_embedding_bag(dtype):
    """sum with per-sample weights, mean with an empty bag and padding_idx, sum with the last
    offset included (positions past it dropped), max, 2-d bags."""
    weight, idx = r(10, 4).to(dtype), torch.tensor([1, 7, 7, 3, 0, 9, 2])
    offsets, psw = torch.tensor([0, 2, 2, 5]), r(7).to(dtype)
    fn = lambda w, i, o, p: (F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                             F.embedding_bag(i, w, o, mode="mean", padding_idx=3),
                             F.embedding_bag(i, w, o[:3], mode="sum", include_last_offset=True),
                             F.embedding_bag(i, w, o, mode="max"),
                             F.embedding_bag(i[:6].reshape(2, 3), w, mode="mean"))
    for actual, expected in zip(_compiled(fn, weight, idx, offsets, psw), fn(weight, idx, offsets, psw)):
        torch.testing.assert_close(actual, expected)
    assert_all_compiled()
