"""dynamo.sort and the ops built on it or next to it (frontend/aten/sort.py, scan.py), against eager:
values and indices, ties, NaN, descending, 1-d and n-d, every dim."""

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, compile_and_run

NAN = float("nan")


def _ties(shape, seed=0, nan=0.0, dtype=torch.float32):
    """Small integers (many ties), with a fraction `nan` of NaNs."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan:
        x[torch.rand(shape, generator=g) < nan] = NAN
    return x


def _same(actual, expected, exact=True):
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        tol = dict(rtol=0, atol=0) if exact else {}
        torch.testing.assert_close(a, e, equal_nan=True, **tol)


def _check(fn, *inputs, min_ops=1, exact=True):
    actual = compile_and_run(fn, *inputs, dynamic=False)
    expected = fn(*inputs)
    if isinstance(expected, torch.Tensor):
        actual, expected = (actual,), (expected,)
    _same(actual, expected, exact)
    assert_all_compiled(min_ops)


@pytest.mark.parametrize("shape,dim", [((37,), 0), ((4, 33, 3), 1), ((1, 3), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_ties_and_nan(shape, dim, descending):
    x = _ties(shape, nan=0.15)
    _check(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.int64, torch.bool])
def test_stable_sort_dtypes(dtype):
    x = _ties((6, 50), dtype=dtype) if dtype != torch.bool else _ties((6, 50)) > 0
    _check(lambda t: torch.sort(t, dim=1, descending=True, stable=True), x)


def test_unstable_sort_short_lines_give_indices():
    """std::sort is an insertion sort up to 16 elements: its tie order is the stable one."""
    _check(lambda t: torch.sort(t, dim=0, descending=True), _ties((16, 7), nan=0.1))


def test_unstable_sort_long_line_keeps_indices_eager():
    x = _ties((100,))
    v, i = compile_and_run(lambda t: torch.sort(t), x, dynamic=False)
    assert torch.equal(v, torch.sort(x)[0]) and torch.equal(i, torch.sort(x)[1])
    assert dynamo_mlir.stats()["fallback_ops"] == {"aten.sort.default": 1}  # the indices are eager's own


def test_sort_values_of_long_line_compile():
    _check(lambda t: torch.msort(t), _ties((300, 3), nan=0.05))


def test_topk_kthvalue_values():
    x = torch.randn(4, 40)
    _check(lambda t: torch.topk(t, 5, dim=1).values, x)
    _check(lambda t: torch.topk(t, 3, dim=0, largest=False).values, x)
    _check(lambda t: torch.kthvalue(t, 7, dim=1, keepdim=True).values, x)


@pytest.mark.parametrize("op", [torch.median, torch.nanmedian])
@pytest.mark.parametrize("n", [4, 17])
def test_median_indices_with_ties_and_nan(op, n):
    x = _ties((30, n), seed=n, nan=0.2)
    x[0] = NAN  # a line of NaNs only
    _check(lambda t: tuple(op(t, dim=1)), x)
    _check(lambda t: op(t), x)


def test_quantile_and_isin():
    x = torch.randn(6, 9)
    _check(lambda t: torch.quantile(t, 0.3, dim=1), x, exact=False)  # the interpolation rounds
    _check(lambda t: torch.nanquantile(t, 0.7), x, exact=False)
    _check(lambda a, b: torch.isin(a, b), _ties((20,)), _ties((5,), seed=2))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    edges = torch.tensor([-2.0, -1.0, -1.0, 0.5, 3.0])
    values = torch.tensor([[-3.0, -1.0, 0.5, NAN], [3.0, 4.0, -2.0, 0.0]])
    _check(lambda b, v: torch.searchsorted(b, v, right=right), edges, values)
    _check(lambda v, b: torch.bucketize(v, b, right=right, out_int32=True), values, edges)
    rows = torch.sort(_ties((2, 6)), dim=1).values
    _check(lambda b, v: torch.searchsorted(b, v, side="right" if right else "left"), rows, values)
    shuffled, order = torch.tensor([3.0, -1.0, 0.5, -2.0]), torch.tensor([3, 1, 2, 0])
    _check(lambda b, v, s: torch.searchsorted(b, v, right=right, sorter=s), shuffled, values, order)


def test_histc_edges():
    x = torch.tensor([[-1.0, 0.0, 2.5, 10.0], [9.99, 10.5, NAN, 5.0]])
    _check(lambda t: torch.histc(t, bins=4, min=0, max=10), x)
    _check(lambda t: torch.histc(t, bins=3), torch.tensor([[2.0, 2.0], [2.0, 2.0]]))  # min == max: data range
    _check(lambda t: torch.histc(t, bins=7), torch.randn(30).bfloat16())


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin_ties_and_nan(op, dim):
    x = _ties((9, 11), nan=0.1)
    x[3, 4] = -0.0
    _check(lambda t: tuple(op(t, dim)), x)


def test_logcumsumexp():
    x = torch.randn(5, 7) * 10
    x[1, 2], x[2, 0], x[3, 3] = float("inf"), float("-inf"), NAN
    x[4] = float("-inf")
    actual = compile_and_run(lambda t: torch.logcumsumexp(t, 1), x, dynamic=False)
    torch.testing.assert_close(actual, torch.logcumsumexp(x, 1), equal_nan=True)
    assert_all_compiled()


def test_sort_is_a_loop_nest_on_cpu_only():
    from dynamo_mlir.lowering.registry import lookup, NoLoweringRule

    assert lookup("dynamo.sort", "cpu")
    with pytest.raises(NoLoweringRule):
        lookup("dynamo.sort", "cuda")
