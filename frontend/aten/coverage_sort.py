"""Sorting and order statistics (sort, topk, kthvalue, median, ...) on dynamo.sort, and the
searches and scans next to them (searchsorted, bucketize, histc, cummax/cummin, logcumsumexp),
built from existing ops.

Where eager's tie order is not a stable sort's, indices are only produced where they cannot
differ: eager's unstable sort is libstdc++ std::sort, which is a (stable) insertion sort for at
most 16 elements and reorders ties beyond that; topk and kthvalue use selection algorithms whose
tie order is their own. Those rules raise Unsupported when the indices are used and could differ.
Values never depend on the tie order.
"""

import functools
import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..registry import Unsupported, import_rule
from .args import i64_attr as _attr, node_arg as _arg
from .coverage_math import _iota, scan
from .elementwise import compute_dtype
from .reduction import reduce

aten = torch.ops.aten
I64 = ir.IntegerType.get_signless
STD_SORT_STABLE_UP_TO = 16  # std::sort is a plain insertion sort up to this many elements




def _uses_output(node, index: int) -> bool:
    """Whether the graph reads output `index` of a multi-output node."""
    return any(u.target is operator.getitem and u.args[1] == index and u.users
               for u in node.users)


def sort(ctx, x, dim: int, descending: bool):
    """(values, i64 indices) of a stable sort of x along dim (NaN largest)."""
    if not ctx.shape_of(x):
        return x, ctx.full(0, [], torch.int64)
    op = dy.SortOp(x, _attr(dim), _attr(descending), values=ctx.type_like(x),
                   indices=ctx.type_like(x, torch.int64))
    return op.values, op.indices


def _static(ctx, x):
    if any(s == dy.DYN for s in ctx.shape_of(x)):
        raise Unsupported("sort with a dynamic dim")


def _dim(ctx, x, dim) -> int:
    rank = len(ctx.shape_of(x))
    return dim % rank if rank else 0


def _line(ctx, x, dim) -> int:
    shape = ctx.shape_of(x)
    return shape[dim] if shape else 1


# ----------------------------------------------------------------------------- sort, argsort, msort


@import_rule(aten.sort.default, aten.sort.stable)
def _sort(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    if node.target is aten.sort.stable:
        stable = bool(node.kwargs.get("stable", False))
        dim, descending = node.kwargs.get("dim", -1), bool(node.kwargs.get("descending", False))
    else:
        stable, dim, descending = False, _arg(node, 1, "dim", -1), bool(_arg(node, 2, "descending", False))
    dim = _dim(ctx, x, dim)
    if not stable and _line(ctx, x, dim) > STD_SORT_STABLE_UP_TO and _uses_output(node, 1):
        raise Unsupported("indices of an unstable sort over more than 16 elements (std::sort's tie order)")
    return sort(ctx, x, dim, descending)


# ----------------------------------------------------------------------------- helpers


def _cmp(ctx, a, b, pred: str):
    return dy.CompareOp(a, b, ir.StringAttr.get(pred), out=ctx.type_like(a, torch.bool)).out


def _emit(ctx, name, *xs):
    return ctx.emit(name, *xs, out=ctx.type_like(xs[0]))


def _select(ctx, cond, a, b):
    return dy.SelectOp(cond, a, b, out=ctx.type_like(a)).out


def _isnan(ctx, x):
    if not ctx.dtype_of(x).is_floating_point:
        return ctx.full(False, ctx.shape_of(x), torch.bool)
    return ctx.emit("isnan", x, out=ctx.type_like(x, torch.bool))


def _like(ctx, number, x, dtype=None):
    return ctx.broadcast(ctx.scalar(number, dtype or ctx.dtype_of(x)), ctx.shape_of(x))


def _slice(ctx, x, dim: int, start: int, size: int):
    shape = ctx.shape_of(x)
    starts = [0] * len(shape)
    starts[dim] = start
    out = ctx.type_like(x, shape=shape[:dim] + [size] + shape[dim + 1:])
    return dy.SliceOp(x, ir.DenseI64ArrayAttr.get(starts), ir.DenseI64ArrayAttr.get([1] * len(shape)), out=out).out


def _take(ctx, x, dim: int, position):
    """x gathered along dim at `position` (a tensor of x's shape with dim of size 1)."""
    return dy.GatherAlongOp(x, position, _attr(dim), out=ctx.type_like(x, shape=ctx.shape_of(position))).out


def _squeeze(ctx, x, dim: int, keepdim: bool):
    shape = ctx.shape_of(x)
    return x if keepdim else ctx.reshape(x, shape[:dim] + shape[dim + 1:])


def _no_indices(node, index: int, why: str, line: int):
    if line > 1 and _uses_output(node, index):
        raise Unsupported(why)


# ----------------------------------------------------------------------------- topk, kthvalue


@import_rule(aten.topk.default)
def _topk(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    k, dim = node.args[1], _dim(ctx, x, _arg(node, 2, "dim", -1))
    largest, ordered = bool(_arg(node, 3, "largest", True)), bool(_arg(node, 4, "sorted", True))
    n = _line(ctx, x, dim)
    if not ordered and k > 1:
        raise Unsupported("topk(sorted=False): eager's order of the k values is its selection's")
    _no_indices(node, 1, "topk indices: eager's tie order is its selection algorithm's", n)
    values, indices = sort(ctx, x, dim, largest)
    if not ctx.shape_of(x):
        return values, indices
    return _slice(ctx, values, dim, 0, k), _slice(ctx, indices, dim, 0, k)


@import_rule(aten.kthvalue.default)
def _kthvalue(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    k, dim, keep = node.args[1], _dim(ctx, x, _arg(node, 2, "dim", -1)), bool(_arg(node, 3, "keepdim", False))
    n = _line(ctx, x, dim)
    _no_indices(node, 1, "kthvalue indices: eager's tie order is its quickselect's", n)
    values, indices = sort(ctx, x, dim, False)
    if not ctx.shape_of(x):
        return values, indices
    pick = lambda t: _squeeze(ctx, _slice(ctx, t, dim, k - 1, 1), dim, keep)
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
    numbers = ctx.cast(_emit(ctx, "not", _isnan(ctx, x)), torch.int64)
    count = reduce(ctx, numbers, "sum", [dim], True)
    one, two = _like(ctx, 1, count), _like(ctx, 2, count)
    if ignore_nan:  # the lower middle number; a line of NaNs only takes eager's own pick
        middle = _emit(ctx, "floordiv", _emit(ctx, "max", _emit(ctx, "sub", count, one), _like(ctx, 0, count)), two)
        return _select(ctx, _cmp(ctx, count, _like(ctx, 0, count), "eq"), _like(ctx, _all_nan_pick(n), count), middle)
    has_nan = _cmp(ctx, count, _like(ctx, n, count), "lt")
    return _select(ctx, has_nan, count, _like(ctx, (n - 1) // 2, count))


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
    return (_squeeze(ctx, _take(ctx, values, dim, position), dim, keepdim),
            _squeeze(ctx, _take(ctx, indices, dim, position), dim, keepdim))


@import_rule(aten.median.default, aten.nanmedian.default)
def _median_all(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    n = 1
    for s in ctx.shape_of(x):
        n *= s
    if n == 0:
        raise Unsupported("median of an empty tensor")
    flat = ctx.reshape(x, [n])
    return median(ctx, flat, 0, False, node.target is aten.nanmedian.default)[0]


@import_rule(aten.median.dim, aten.nanmedian.dim)
def _median_dim(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    dim, keep = _dim(ctx, x, _arg(node, 1, "dim", -1)), bool(_arg(node, 2, "keepdim", False))
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
    below = _emit(ctx, "or", _cmp(ctx, b, v, "le" if right else "lt"), _isnan(ctx, v))
    return reduce(ctx, ctx.cast(below, out_dtype), "sum", [len(wide) - 1], False)


def _search(ctx, node, boundaries, values, right: bool):
    if ctx.dtype_of(boundaries) != ctx.dtype_of(values):
        raise Unsupported("searchsorted: boundaries and values differ in dtype")
    _static(ctx, boundaries)
    _static(ctx, values)
    out = ctx.out_meta(node)
    return _count_below(ctx, boundaries, values, right, out.dtype)


@import_rule(aten.searchsorted.Tensor)
def _searchsorted(ctx, node):
    side, sorter = _arg(node, 4, "side", None), _arg(node, 5, "sorter", None)
    right = bool(_arg(node, 3, "right", False)) or side == "right"
    boundaries = ctx.tensor(node.args[0])
    if sorter is not None:  # the sequence in sorted order
        boundaries = dy.GatherAlongOp(boundaries, ctx.tensor(sorter), _attr(len(ctx.shape_of(boundaries)) - 1),
                                      out=ctx.type_like(boundaries)).out
    return _search(ctx, node, boundaries, ctx.tensor(node.args[1]), right)


@import_rule(aten.bucketize.Tensor)
def _bucketize(ctx, node):
    right = bool(_arg(node, 3, "right", False))
    return _search(ctx, node, ctx.tensor(node.args[1]), ctx.tensor(node.args[0]), right)


# ----------------------------------------------------------------------------- cummax, cummin, logcumsumexp
# Quadratic masked scans (coverage_math.scan). Eager's cummax index is the latest position j <= i
# holding the running max (its update test is `x >= max`), NaN included (a NaN sticks, and a later
# NaN takes over); the value is read back at that index, so signed zeros follow eager too.


def _pairwise(ctx, x, dim: int):
    """x broadcast to [..., n(i), n(j), ...] as the j operand, and the two iotas."""
    shape = ctx.shape_of(x)
    n = shape[dim]
    wide = shape[:dim] + [n, n] + shape[dim + 1:]
    src = ctx.broadcast(ctx.reshape(x, shape[:dim] + [1, n] + shape[dim + 1:]), wide)
    return src, _iota(ctx, wide, dim), _iota(ctx, wide, dim + 1)


@import_rule(aten.cummax.default, aten.cummin.default)
def _cummax(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    shape = ctx.shape_of(x)
    if not shape:
        return x, ctx.full(0, [], torch.int64)
    dim = _dim(ctx, x, node.args[1])
    n = shape[dim]
    if n == 0:
        raise Unsupported("cummax over an empty dim")
    kind = "max" if node.target is aten.cummax.default else "min"
    if ctx.dtype_of(x) == torch.bool:
        raise Unsupported("cummax of bool")
    identity = {"max": float("-inf"), "min": float("inf")}[kind] if ctx.dtype_of(x).is_floating_point else \
        {"max": torch.iinfo(ctx.dtype_of(x)).min, "min": torch.iinfo(ctx.dtype_of(x)).max}[kind]
    running = scan(ctx, x, dim, kind, identity)  # [.., n(i), ..]
    src, i, j = _pairwise(ctx, x, dim)
    wide = ctx.shape_of(src)
    best = ctx.broadcast(ctx.reshape(running, shape[:dim + 1] + [1] + shape[dim + 1:]), wide)
    same = _emit(ctx, "or", _cmp(ctx, src, best, "eq"),
                 _emit(ctx, "and", _isnan(ctx, src), _isnan(ctx, best)))
    hit = _emit(ctx, "and", same, _cmp(ctx, j, i, "le"))
    index = reduce(ctx, _select(ctx, hit, j, _like(ctx, -1, j)), "max", [dim + 1], False)
    values = dy.GatherAlongOp(x, index, _attr(dim), out=ctx.type_like(x)).out
    return values, index


@import_rule(aten.logcumsumexp.default)
def _logcumsumexp(ctx, node):
    """out_i = m_i + log(sum_{j<=i} exp(x_j - m_i)) with m_i the running max (0 where infinite,
    so inf and -inf come out as eager's), computed in f64 for f32 and in f32 for halves."""
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("logcumsumexp of an integer tensor")
    compute = torch.float64 if val.dtype in (torch.float32, torch.float64) else torch.float32
    x = ctx.cast(ctx.tensor(node.args[0]), compute)
    _static(ctx, x)
    shape = ctx.shape_of(x)
    if not shape:
        return ctx.cast(x, val.dtype)
    dim = _dim(ctx, x, node.args[1])
    if shape[dim] == 0:
        raise Unsupported("logcumsumexp over an empty dim")
    peak = scan(ctx, x, dim, "max", float("-inf"))
    finite = _emit(ctx, "not", ctx.emit("isinf", peak, out=ctx.type_like(peak, torch.bool)))
    shift = _select(ctx, finite, peak, _like(ctx, 0.0, peak))
    src, i, j = _pairwise(ctx, x, dim)
    wide = ctx.shape_of(src)
    shift_wide = ctx.broadcast(ctx.reshape(shift, shape[:dim + 1] + [1] + shape[dim + 1:]), wide)
    terms = _emit(ctx, "exp", _emit(ctx, "sub", src, shift_wide))
    terms = _select(ctx, _cmp(ctx, j, i, "le"), terms, _like(ctx, 0.0, terms))
    total = reduce(ctx, terms, "sum", [dim + 1], False)
    return ctx.cast(_emit(ctx, "add", _emit(ctx, "log", total), shift), val.dtype)


# ----------------------------------------------------------------------------- histc
# Eager's rule, in the input's dtype (one rounding per op, as its scalar code does): an element
# e with left <= e <= right falls in bin trunc((e - left) * bins / (right - left)), the last bin
# when that is `bins` (e == right); others are ignored. min == max takes the data's range, widened
# by 1 each way when that is empty too.
HALF_COUNT_LIMIT = 256  # halves count exactly up to here (eager accumulates in the input dtype)


def _rounded(ctx, name, a, b, dtype):
    """a `name` b computed in the compute dtype (f32 for halves) and rounded to dtype."""
    compute = compute_dtype(dtype)
    return ctx.cast(_emit(ctx, name, ctx.cast(a, compute), ctx.cast(b, compute)), dtype)


@import_rule(aten.histc.default)
def _histc(ctx, node):
    val = ctx.out_meta(node)
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    bins = int(_arg(node, 1, "bins", 100))
    lo, hi = float(_arg(node, 2, "min", 0)), float(_arg(node, 3, "max", 0))
    numel = 1
    for s in ctx.shape_of(x):
        numel *= s
    if not val.dtype.is_floating_point or numel == 0:
        raise Unsupported("histc of an integer or empty tensor")
    if val.dtype.itemsize == 2 and numel > HALF_COUNT_LIMIT:
        raise Unsupported("histc counts past 256 in a half dtype")
    flat = ctx.cast(ctx.reshape(x, [numel]), val.dtype)
    if lo == hi:
        wide = ctx.cast(flat, torch.float64 if val.dtype == torch.float64 else torch.float32)
        left, right = (ctx.cast(reduce(ctx, wide, kind, [0], False), val.dtype) for kind in ("min", "max"))
        empty = _cmp(ctx, left, right, "eq")
        one = ctx.scalar(1.0, val.dtype)
        left = _select(ctx, empty, _rounded(ctx, "sub", left, one, val.dtype), left)
        right = _select(ctx, empty, _rounded(ctx, "add", right, one, val.dtype), right)
    else:
        left, right = ctx.scalar(lo, val.dtype), ctx.scalar(hi, val.dtype)
    span = ctx.broadcast(_rounded(ctx, "sub", right, left, val.dtype), [numel])
    left, right = ctx.broadcast(left, [numel]), ctx.broadcast(right, [numel])
    arith = lambda name, a, b: _rounded(ctx, name, a, b, val.dtype)
    scaled = arith("div", arith("mul", arith("sub", flat, left), _like(ctx, bins, flat)), span)
    index = _emit(ctx, "min", ctx.cast(scaled, torch.int64), _like(ctx, bins - 1, scaled, torch.int64))
    inside = _emit(ctx, "and", _cmp(ctx, flat, left, "ge"), _cmp(ctx, flat, right, "le"))
    index = _select(ctx, inside, index, _like(ctx, -1, index))  # -1 matches no bin
    wide = [numel, bins]
    hits = _cmp(ctx, ctx.broadcast(ctx.reshape(index, [numel, 1]), wide), _iota(ctx, wide, 1), "eq")
    return ctx.cast(reduce(ctx, ctx.cast(hits, torch.int64), "sum", [0], False), val.dtype)
