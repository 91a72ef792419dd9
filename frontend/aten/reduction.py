"""Reductions: sum, mean, prod, max/min (values and arg), any/all, var/var_mean, vector norms,
softmax, log_softmax and _safe_softmax, built from dynamo.reduce (builders.reduce) and elementwise ops."""

import math

import torch

from ..importer import DYN, static_shape
from ..registry import Unsupported, import_rule
from .args import bind, norm_dim
from .builders import arg_reduce, compare, compute_dtype, element_count, emit_like, like, numel, reduce, select

aten = torch.ops.aten


def _dims(dims, rank: int) -> list[int]:
    """A `dim` argument (an int, a list, or None/[] for all dims) as sorted non-negative dims."""
    if dims is None or dims == []:
        return list(range(rank))
    if rank == 0:  # dim 0 / -1 of a 0-d tensor names the tensor itself: nothing to reduce
        return []
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({norm_dim(d, rank) for d in dims})


# Overloads that reduce over every dim (they have no dim argument).
_WHOLE = (aten.sum.default, aten.mean.default, aten.prod.default, aten.any.default, aten.all.default,
          aten.max.default, aten.min.default)


@import_rule(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.prod.dim_int,
             aten.prod.default)
def _sum_mean(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    packet = node.target.overloadpacket
    acc = compute_dtype(val.dtype)
    x = ctx.opmath(ctx.tensor(a.self), acc)
    rank = len(ctx.shape_of(x))
    whole = node.target in _WHOLE
    dims = list(range(rank)) if whole else _dims(a.dim, rank)
    if packet is aten.prod and not whole:  # prod.dim_int: one dim, which a 0-d tensor does not reduce
        dims = [norm_dim(a.dim, rank)] if rank else []
    r = reduce(ctx, x, "prod" if packet is aten.prod else "sum", dims, False if whole else a.keepdim)
    if packet is aten.mean:
        if not acc.is_floating_point:
            raise Unsupported("mean of an integer tensor")
        r = emit_like(ctx, "div", r, ctx.broadcast(element_count(ctx, x, dims, acc), ctx.shape_of(r), like=r))
    return ctx.rounded(r, val.dtype)


EXTREMA = {aten.amax: "max", aten.amin: "min", aten.any: "any", aten.all: "all", aten.max: "max", aten.min: "min"}


@import_rule(aten.amax, aten.amin, aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.default,
             aten.max.default, aten.min.default)
def _extremum(ctx, node):
    a = bind(node)
    kind = EXTREMA[node.target.overloadpacket]
    x = ctx.tensor(a.self)
    if kind in ("any", "all"):
        x = ctx.cast(x, torch.bool)
    rank = len(ctx.shape_of(x))
    whole = node.target in _WHOLE
    if whole and rank and 0 in ctx.shape_of(x):
        raise Unsupported("max/min of an empty tensor")
    dims = list(range(rank)) if whole else _dims(a.dim, rank)
    return ctx.cast(reduce(ctx, x, kind, dims, False if whole else a.keepdim), ctx.out_meta(node).dtype)


@import_rule(aten.max.dim, aten.min.dim)
def _max_dim(ctx, node):
    a = bind(node)
    kind = "max" if node.target.overloadpacket is aten.max else "min"
    x = ctx.tensor(a.self)
    dim = norm_dim(a.dim, len(ctx.shape_of(x)))
    return reduce(ctx, x, kind, [dim], a.keepdim), _arg(ctx, x, kind, dim, a.keepdim)


def _arg(ctx, x, kind, dim, keepdim):
    shape = ctx.shape_of(x)
    i = arg_reduce(ctx, x, kind, dim)
    return ctx.reshape(i, shape[:dim] + [1] + shape[dim + 1:]) if keepdim else i


@import_rule(aten.argmax, aten.argmin)
def _argmax(ctx, node):
    a = bind(node)
    kind = "max" if node.target.overloadpacket is aten.argmax else "min"
    x = ctx.tensor(a.self)
    shape = ctx.shape_of(x)
    if a.dim is None or not shape:
        # Over the flattened tensor (a 0-d tensor is one element); keepdim keeps every dim as 1.
        if 0 in shape:
            raise Unsupported("argmax/argmin of an empty tensor")
        flat = _arg(ctx, ctx.reshape(x, [numel(shape)]), kind, 0, False)
        return ctx.reshape(flat, static_shape(ctx.out_meta(node)))
    return _arg(ctx, x, kind, a.dim % len(shape), a.keepdim)


def _variance(ctx, x, dims, correction, keep):
    """(var, mean kept over dims) by the corrected two-pass algorithm: a first mean m, then, in
    one pass over the centered values c = x - m, their sum and their sum of squares; the mean is
    m + sum(c) / n and the sum of squares about it sum(c^2) - sum(c) * sum(c) / n. The
    correction is what the first mean's rounding left: without it a row of one repeated value (a
    layer norm over a constant row) centered to that rounding error, which rsqrt(var + eps)
    scaled up (1e-4 off eager's exact zero, found by the fuzzer); with it, to exactly 0."""
    shape, dtype = ctx.shape_of(x), ctx.dtype_of(x)
    n = element_count(ctx, x, dims, dtype)  # a constant, or read off x where a dim is symbolic
    first = reduce(ctx, x, "sum", dims, True)
    # like=: a scalar divisor broadcast to a shape with `?` dims reads them off the dividend
    first = emit_like(ctx, "div", first, ctx.broadcast(n, ctx.shape_of(first), like=first))
    centered = emit_like(ctx, "sub", x, ctx.broadcast(first, shape))
    residue = reduce(ctx, centered, "sum", dims, True)
    sq = reduce(ctx, emit_like(ctx, "mul", centered, centered), "sum", dims, True)
    shift = emit_like(ctx, "div", residue, ctx.broadcast(n, ctx.shape_of(residue), like=residue))
    mean_k = emit_like(ctx, "add", first, shift)
    sq = emit_like(ctx, "sub", sq, emit_like(ctx, "mul", residue, shift))
    sq = emit_like(ctx, "max", sq, like(ctx, 0.0, sq))  # rounding may leave -0.0..-ulp where sq is 0
    if all(shape[d] != DYN for d in dims):
        dof = ctx.scalar(max(numel([shape[d] for d in dims]) - correction, 0), dtype)
    else:  # max(n - correction, 0), as eager's divisor
        dof = emit_like(ctx, "max", emit_like(ctx, "sub", n, ctx.scalar(correction, dtype)), ctx.scalar(0, dtype))
    var = emit_like(ctx, "div", sq, ctx.broadcast(dof, ctx.shape_of(sq), like=sq))
    if not keep:
        var = ctx.reshape(var, [s for d, s in enumerate(shape) if d not in dims])
    return var, mean_k


@import_rule(aten.var_mean.correction, aten.var.correction)
def _var_mean(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    out_dtype = (val[0] if isinstance(val, (tuple, list)) else val).dtype
    x = ctx.opmath(ctx.tensor(a.self), compute_dtype(out_dtype))
    shape = ctx.shape_of(x)
    dims = _dims(a.dim, len(shape))
    correction = 1 if a.correction is None else a.correction
    if not isinstance(correction, (int, float)):
        raise Unsupported("variance with a symbolic correction")
    var, mean_k = _variance(ctx, x, dims, correction, a.keepdim)
    mean = mean_k if a.keepdim else ctx.reshape(mean_k, ctx.shape_of(var))
    var, mean = ctx.rounded(var, out_dtype), ctx.rounded(mean, out_dtype)
    return (var, mean) if node.target.overloadpacket is aten.var_mean else var


@import_rule(torch.ops.prims.var.default)
def _prims_var(ctx, node):
    """prims.var(x, dims, correction): two passes (mean, then centered squares), as var_mean."""
    a = bind(node)
    val = ctx.out_meta(node)
    x = ctx.cast(ctx.tensor(a.inp), compute_dtype(val.dtype))
    shape = ctx.shape_of(x)
    dims = list(range(len(shape))) if a.dims is None else sorted({d % len(shape) for d in a.dims}) if shape else []
    n = int(math.prod(shape[d] for d in dims))  # 0: the divisions give eager's NaN
    mean = reduce(ctx, x, "sum", dims, True)
    mean = emit_like(ctx, "div", mean, like(ctx, float(n), mean))
    centered = emit_like(ctx, "sub", x, ctx.broadcast(mean, shape))
    sq = reduce(ctx, emit_like(ctx, "mul", centered, centered), "sum", dims, False)
    var = emit_like(ctx, "div", sq, like(ctx, float(max(n - a.correction, 0)), sq))
    return ctx.cast(ctx.reshape(var, list(static_shape(val))), val.dtype)


@import_rule(aten.linalg_vector_norm)
def _vector_norm(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    x = emit_like(ctx, "abs", ctx.cast(ctx.tensor(a.self), compute_dtype(val.dtype)))
    rank = len(ctx.shape_of(x))
    dims = a.dim
    dims = list(range(rank)) if dims is None or dims == [] else [dims] if isinstance(dims, int) else list(dims)
    dims = sorted({d % rank for d in dims}) if rank else []
    if 0 in [ctx.shape_of(x)[d] for d in dims] and a.ord not in (0, 1, 2):
        raise Unsupported("norm over an empty dim")
    return ctx.cast(vector_norm(ctx, x, float(a.ord), dims, bool(a.keepdim)), val.dtype)


def vector_norm(ctx, x, p: float, dims, keep: bool):
    """The p-norm over `dims` of x, which holds absolute values already."""
    if p in (math.inf, -math.inf):
        return reduce(ctx, x, "max" if p > 0 else "min", dims, keep)
    if p == 0:
        nonzero = ctx.cast(compare(ctx, x, like(ctx, 0.0, x), "ne"), ctx.dtype_of(x))
        return reduce(ctx, nonzero, "sum", dims, keep)
    if p == 1:
        return reduce(ctx, x, "sum", dims, keep)
    if p == 2:
        return emit_like(ctx, "sqrt", reduce(ctx, emit_like(ctx, "mul", x, x), "sum", dims, keep))
    powered = reduce(ctx, emit_like(ctx, "pow", x, like(ctx, p, x)), "sum", dims, keep)
    return emit_like(ctx, "pow", powered, like(ctx, 1.0 / p, powered))


def softmax(ctx, x, dim: int, log: bool, safe: bool = False):
    """softmax (or log_softmax) of x along dim; `safe`: 0 on a row whose every element is -inf
    (torch's _safe_softmax, attention's), read off the row maximum the softmax takes anyway."""
    shape = ctx.shape_of(x)
    m = ctx.broadcast(reduce(ctx, x, "max", [dim], True), shape)
    shifted = emit_like(ctx, "sub", x, m)
    e = emit_like(ctx, "exp", shifted)
    s = ctx.broadcast(reduce(ctx, e, "sum", [dim], True), shape)
    if log:
        return emit_like(ctx, "sub", shifted, emit_like(ctx, "log", s))
    out = emit_like(ctx, "div", e, s)
    if safe:
        out = select(ctx, compare(ctx, m, like(ctx, -math.inf, m), "eq"), like(ctx, 0.0, out), out)
    return out


@import_rule(aten._softmax, aten._log_softmax, aten.softmax.int, aten.log_softmax.int, aten._safe_softmax)
def _softmax(ctx, node):
    """softmax, log_softmax, and _safe_softmax (SDPA's math form: 0 on fully masked rows, where
    core ATen's decomposition tests the row with a boolean any-reduction of its own)."""
    a = bind(node)
    val = ctx.out_meta(node)
    x = ctx.tensor(a.self)
    rank = len(ctx.shape_of(x))
    if rank == 0:
        raise Unsupported("softmax of a 0-d tensor")
    x = ctx.opmath(x, compute_dtype(val.dtype))
    log = node.target.overloadpacket in (aten._log_softmax, aten.log_softmax)
    safe = node.target.overloadpacket is aten._safe_softmax
    return ctx.rounded(softmax(ctx, x, norm_dim(a.dim, rank), log, safe), val.dtype)
