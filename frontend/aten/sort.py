"""Sorting and order statistics (sort, topk, kthvalue, median, ...) on dynamo.sort, and the
searches next to them (searchsorted, bucketize, histc), built from existing ops. (Running
extremes, cummax/cummin, are scans: scan.py.)

Where eager's tie order is not a stable sort's, indices are only produced where they cannot
differ: eager's unstable sort is libstdc++ std::sort, which is a (stable) insertion sort for at
most 16 elements and reorders ties beyond that; topk and kthvalue use selection algorithms whose
tie order is their own. Those rules raise Unsupported when the indices are used and could differ.
Values never depend on the tie order.
"""

import functools

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ...dialects import dynamo as dy
from ..registry import Unsupported, import_rule
from .args import bind, norm_dim, output_live
from .builders import (compare, compute_dtype, emit_like, gather_along, i64, iota, isnan, like, numel, reduce,
                       require_static, select, slice_along)

aten = torch.ops.aten
STD_SORT_STABLE_UP_TO = 16  # std::sort is a plain insertion sort up to this many elements


def sort(ctx, x, dim: int, descending: bool):
    """(values, i64 indices) of a stable sort of x along dim (NaN largest)."""
    if not ctx.shape_of(x):
        return x, ctx.full(0, [], torch.int64)
    op = dy.SortOp(x, i64(dim), i64(descending), values=ctx.type_like(x),
                   indices=ctx.type_like(x, torch.int64))
    return op.values, op.indices


def _dim(ctx, x, dim) -> int:
    return norm_dim(dim, len(ctx.shape_of(x)))


def _line(ctx, x, dim) -> int:
    shape = ctx.shape_of(x)
    return shape[dim] if shape else 1


# ----------------------------------------------------------------------------- sort, argsort, msort


@import_rule(aten.sort.default, aten.sort.stable)
def _sort(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "sort")
    stable, dim = bool(a.get("stable")), _dim(ctx, x, a.dim)
    if not stable and _line(ctx, x, dim) > STD_SORT_STABLE_UP_TO and output_live(node, 1):
        raise Unsupported("indices of an unstable sort over more than 16 elements (std::sort's tie order)")
    return sort(ctx, x, dim, bool(a.descending))


# ----------------------------------------------------------------------------- helpers


def _squeeze(ctx, x, dim: int, keepdim: bool):
    shape = ctx.shape_of(x)
    return x if keepdim else ctx.reshape(x, shape[:dim] + shape[dim + 1:])


def _no_indices(node, index: int, why: str, line: int):
    if line > 1 and output_live(node, index):
        raise Unsupported(why)


# ----------------------------------------------------------------------------- topk, kthvalue


@import_rule(aten.topk.default)
def _topk(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "sort")
    k, dim, largest, ordered = a.k, _dim(ctx, x, a.dim), bool(a.largest), bool(a.sorted)
    n = _line(ctx, x, dim)
    if not ordered and k > 1:
        raise Unsupported("topk(sorted=False): eager's order of the k values is its selection's")
    _no_indices(node, 1, "topk indices: eager's tie order is its selection algorithm's", n)
    values, indices = sort(ctx, x, dim, largest)
    if not ctx.shape_of(x):
        return values, indices
    return slice_along(ctx, values, dim, 0, k), slice_along(ctx, indices, dim, 0, k)


@import_rule(aten.kthvalue.default)
def _kthvalue(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "sort")
    k, dim, keep = a.k, _dim(ctx, x, a.dim), bool(a.keepdim)
    n = _line(ctx, x, dim)
    _no_indices(node, 1, "kthvalue indices: eager's tie order is its quickselect's", n)
    values, indices = sort(ctx, x, dim, False)
    if not ctx.shape_of(x):
        return values, indices
    pick = lambda t: _squeeze(ctx, slice_along(ctx, t, dim, k - 1, 1), dim, keep)  # noqa: E731
    return pick(values), pick(indices)


# ----------------------------------------------------------------------------- median, nanmedian
# Eager's median is the lower middle value; its nth_element compares (value, index) pairs, so the
# index it reports is the stable sort's. median returns NaN (and the first NaN's index) when a
# line holds a NaN; nanmedian takes the lower middle of the non-NaN values (the first NaN when all
# are NaN). With NaN sorted last, both are a position in the stable ascending sort.


def _median_position(ctx, x, dim: int, ignore_nan: bool):
    """The sort position of the median along dim, shape x's with dim of size 1 (i64)."""
    shape = ctx.shape_of(x)
    n = shape[dim]
    numbers = ctx.cast(emit_like(ctx, "not", isnan(ctx, x)), torch.int64)
    count = reduce(ctx, numbers, "sum", [dim], True)
    one, two = like(ctx, 1, count), like(ctx, 2, count)
    if ignore_nan:  # the lower middle number; a line of NaNs only takes eager's own pick
        below = emit_like(ctx, "max", emit_like(ctx, "sub", count, one), like(ctx, 0, count))
        middle = emit_like(ctx, "floordiv", below, two)
        return select(ctx, compare(ctx, count, like(ctx, 0, count), "eq"), like(ctx, _all_nan_pick(n), count), middle)
    has_nan = compare(ctx, count, like(ctx, n, count), "lt")
    return select(ctx, has_nan, count, like(ctx, (n - 1) // 2, count))


@functools.cache
def _all_nan_pick(n: int) -> int:
    """The index eager's nanmedian reports for a line of n NaNs. Its nth_element then sees every
    pair as equivalent, so the pick depends on n alone (0 up to 3 elements, then the partition
    steps decide): ask eager once."""
    with unset_fake_temporarily():  # import runs under the graph's fake-tensor mode
        return int(torch.nanmedian(torch.full((n,), float("nan")), 0).indices)


def median(ctx, x, dim: int, keepdim: bool, ignore_nan: bool):
    values, indices = sort(ctx, x, dim, False)
    position = _median_position(ctx, x, dim, ignore_nan)
    return (_squeeze(ctx, gather_along(ctx, values, position, dim), dim, keepdim),
            _squeeze(ctx, gather_along(ctx, indices, position, dim), dim, keepdim))


@import_rule(aten.median.default, aten.nanmedian.default)
def _median_all(ctx, node):
    x = ctx.tensor(bind(node).self)
    require_static(ctx, x, "sort")
    n = numel(ctx.shape_of(x))
    if n == 0:
        raise Unsupported("median of an empty tensor")
    flat = ctx.reshape(x, [n])
    return median(ctx, flat, 0, False, node.target is aten.nanmedian.default)[0]


@import_rule(aten.median.dim, aten.nanmedian.dim)
def _median_dim(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "sort")
    dim, keep = _dim(ctx, x, a.dim), bool(a.keepdim)
    if not ctx.shape_of(x):
        return x, ctx.full(0, [], torch.int64)
    if ctx.shape_of(x)[dim] == 0:
        raise Unsupported("median over an empty dim")
    return median(ctx, x, dim, keep, node.target is aten.nanmedian.dim)


# ----------------------------------------------------------------------------- searches


def _count_below(ctx, boundaries, values, right: bool, out_dtype):
    """Per value, how many boundaries (last dim of `boundaries`) sort before it: eager's binary
    search on a sorted, NaN-free sequence (a NaN value lands past every boundary)."""
    bshape, vshape = ctx.shape_of(boundaries), ctx.shape_of(values)
    m = bshape[-1]
    if len(bshape) == 1:
        wide = vshape + [m]
        b = ctx.broadcast(boundaries, wide)
    else:
        if bshape[:-1] != vshape[:-1]:
            raise Unsupported("searchsorted: leading dims differ")
        wide = vshape + [m]
        b = ctx.broadcast(ctx.reshape(boundaries, bshape[:-1] + [1, m]), wide)
    v = ctx.broadcast(ctx.reshape(values, vshape + [1]), wide)
    below = emit_like(ctx, "or", compare(ctx, b, v, "le" if right else "lt"), isnan(ctx, v))
    return reduce(ctx, ctx.cast(below, out_dtype), "sum", [len(wide) - 1], False)


def _search(ctx, node, boundaries, values, right: bool):
    if ctx.dtype_of(boundaries) != ctx.dtype_of(values):
        raise Unsupported("searchsorted: boundaries and values differ in dtype")
    require_static(ctx, boundaries, "searchsorted")
    require_static(ctx, values, "searchsorted")
    out = ctx.out_meta(node)
    return _count_below(ctx, boundaries, values, right, out.dtype)


@import_rule(aten.searchsorted.Tensor)
def _searchsorted(ctx, node):
    a = bind(node)
    right = bool(a.right) or a.side == "right"
    boundaries = ctx.tensor(a.sorted_sequence)
    if a.sorter is not None:  # the sequence in sorted order
        boundaries = gather_along(ctx, boundaries, ctx.tensor(a.sorter), len(ctx.shape_of(boundaries)) - 1)
    return _search(ctx, node, boundaries, ctx.tensor(a.self), right)


@import_rule(aten.bucketize.Tensor)
def _bucketize(ctx, node):
    a = bind(node)
    return _search(ctx, node, ctx.tensor(a.boundaries), ctx.tensor(a.self), bool(a.right))


# ----------------------------------------------------------------------------- histc
# Eager's rule, in the input's dtype (one rounding per op, as its scalar code does): an element
# e with left <= e <= right falls in bin trunc((e - left) * bins / (right - left)), the last bin
# when that is `bins` (e == right); others are ignored. min == max takes the data's range, widened
# by 1 each way when that is empty too.
HALF_COUNT_LIMIT = 256  # halves count exactly up to here (eager accumulates in the input dtype)


def _rounded(ctx, name, a, b, dtype):
    """a `name` b computed in the compute dtype (f32 for halves) and rounded to dtype."""
    compute = compute_dtype(dtype)
    return ctx.cast(emit_like(ctx, name, ctx.cast(a, compute), ctx.cast(b, compute)), dtype)


@import_rule(aten.histc.default)
def _histc(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "sort")
    bins, lo, hi = int(a.bins), float(a.min), float(a.max)
    n = numel(ctx.shape_of(x))
    if not val.dtype.is_floating_point or n == 0:
        raise Unsupported("histc of an integer or empty tensor")
    if val.dtype.itemsize == 2 and n > HALF_COUNT_LIMIT:
        raise Unsupported("histc counts past 256 in a half dtype")
    flat = ctx.cast(ctx.reshape(x, [n]), val.dtype)
    if lo == hi:
        wide = ctx.cast(flat, torch.float64 if val.dtype == torch.float64 else torch.float32)
        left, right = (ctx.cast(reduce(ctx, wide, kind, [0], False), val.dtype) for kind in ("min", "max"))
        empty = compare(ctx, left, right, "eq")
        one = ctx.scalar(1.0, val.dtype)
        left = select(ctx, empty, _rounded(ctx, "sub", left, one, val.dtype), left)
        right = select(ctx, empty, _rounded(ctx, "add", right, one, val.dtype), right)
    else:
        left, right = ctx.scalar(lo, val.dtype), ctx.scalar(hi, val.dtype)
    span = ctx.broadcast(_rounded(ctx, "sub", right, left, val.dtype), [n])
    left, right = ctx.broadcast(left, [n]), ctx.broadcast(right, [n])
    arith = lambda name, a, b: _rounded(ctx, name, a, b, val.dtype)  # noqa: E731
    scaled = arith("div", arith("mul", arith("sub", flat, left), like(ctx, bins, flat)), span)
    index = emit_like(ctx, "min", ctx.cast(scaled, torch.int64), like(ctx, bins - 1, scaled, torch.int64))
    inside = emit_like(ctx, "and", compare(ctx, flat, left, "ge"), compare(ctx, flat, right, "le"))
    index = select(ctx, inside, index, like(ctx, -1, index))  # -1 matches no bin
    wide = [n, bins]
    hits = compare(ctx, ctx.broadcast(ctx.reshape(index, [n, 1]), wide), iota(ctx, wide, 1), "eq")
    return ctx.cast(reduce(ctx, ctx.cast(hits, torch.int64), "sum", [0], False), val.dtype)
