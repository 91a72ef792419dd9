"""Cumulative scans: cumsum, cumprod, cummax/cummin, logcumsumexp.

out[..., i, ...] = reduce_{j <= i} x[..., j, ...], as a masked [.., n(i), n(j), ..] reduction:
quadratic in the scanned dim, which is fine at the sizes where a scan is not the bottleneck
(MAX_SCAN: longer static scans stay eager, and a region scanning a `?` dim runs eagerly for a
call where it is longer, ImportContext.limit_size).
Eager's cummax index is the latest position j <= i holding the running max (its update test is
`x >= max`), NaN included (a NaN sticks, and a later NaN takes over); the value is read back at
that index, so signed zeros follow eager too.
"""

import torch

from ..importer import DYN, fake_value, static_shape
from ..registry import Unsupported, import_rule
from .args import bind, norm_dim
from .builders import (compare, compute_dtype, emit_like, gather_along, iota, isinf, isnan, like, reduce,
                       require_static, select)

aten = torch.ops.aten
MAX_SCAN = 4096
SCANS = {aten.cumsum: ("sum", 0.0), aten.cumprod: ("prod", 1.0)}


def _pairwise(ctx, x, dim: int, shape=None):
    """x broadcast to [..., n(i), n(j), ...] as the j operand, and the two iotas (i, j).
    `shape`: x's torch shape where it has symbolic sizes (they size the `?` dims made here)."""
    shape = ctx.shape_of(x) if shape is None else list(shape)
    n = shape[dim]
    wide = shape[:dim] + [n, n] + shape[dim + 1:]
    src = ctx.broadcast(ctx.reshape(x, shape[:dim] + [1, n] + shape[dim + 1:]), wide)
    like = src if DYN in ctx.shape_of(src) else None  # the iotas' `?` sizes
    return src, iota(ctx, ctx.shape_of(src), dim, like=like), iota(ctx, ctx.shape_of(src), dim + 1, like=like)


def scan(ctx, x, dim: int, kind: str, identity: float, shape=None):
    """The inclusive scan of x along dim with the reduction `kind` (sum, prod, max, min);
    `shape`: x's torch shape where it has symbolic sizes."""
    n = ctx.shape_of(x)[dim]
    if n > MAX_SCAN:
        raise Unsupported(f"scan over {n} elements")
    if n == DYN:  # the pairwise mask is n * n: longer scans run eagerly, checked per call
        if shape is None:
            raise Unsupported("scan over a dynamic dim")
        ctx.limit_size(shape[dim], MAX_SCAN, "scan")
    src, i, j = _pairwise(ctx, x, dim, shape)  # masked where j > i
    masked = select(ctx, compare(ctx, j, i, "le"), src, like(ctx, identity, src))
    return reduce(ctx, masked, kind, [dim + 1], False)


@import_rule(*SCANS)
def _scan(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    kind, identity = SCANS[node.target.overloadpacket]
    compute = compute_dtype(val.dtype)
    if compute == torch.bool:
        raise Unsupported("scan of bool")
    x = ctx.cast(ctx.tensor(a.self), compute)
    rank = len(ctx.shape_of(x))
    if rank == 0:
        return ctx.cast(x, val.dtype)
    dim = norm_dim(a.dim, rank)
    if ctx.shape_of(x)[dim] == 0:
        return ctx.full(0, static_shape(val), val.dtype)
    return ctx.cast(scan(ctx, x, dim, kind, identity, fake_value(a.self).shape), val.dtype)


def _extreme(dtype: torch.dtype, kind: str):
    """The identity of a running max/min in dtype."""
    if dtype.is_floating_point:
        return {"max": float("-inf"), "min": float("inf")}[kind]
    return {"max": torch.iinfo(dtype).min, "min": torch.iinfo(dtype).max}[kind]


@import_rule(aten.cummax.default, aten.cummin.default)
def _cummax(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    require_static(ctx, x, "scan")
    shape = ctx.shape_of(x)
    if not shape:
        return x, ctx.full(0, [], torch.int64)
    dim = norm_dim(a.dim, len(shape))
    if shape[dim] == 0:
        raise Unsupported("cummax over an empty dim")
    kind = "max" if node.target is aten.cummax.default else "min"
    if ctx.dtype_of(x) == torch.bool:
        raise Unsupported("cummax of bool")
    running = scan(ctx, x, dim, kind, _extreme(ctx.dtype_of(x), kind))  # [.., n(i), ..]
    src, i, j = _pairwise(ctx, x, dim)
    wide = ctx.shape_of(src)
    best = ctx.broadcast(ctx.reshape(running, shape[:dim + 1] + [1] + shape[dim + 1:]), wide)
    same = emit_like(ctx, "or", compare(ctx, src, best, "eq"),
                     emit_like(ctx, "and", isnan(ctx, src), isnan(ctx, best)))
    hit = emit_like(ctx, "and", same, compare(ctx, j, i, "le"))
    index = reduce(ctx, select(ctx, hit, j, like(ctx, -1, j)), "max", [dim + 1], False)
    return gather_along(ctx, x, index, dim), index


@import_rule(aten.logcumsumexp.default)
def _logcumsumexp(ctx, node):
    """out_i = m_i + log(sum_{j<=i} exp(x_j - m_i)) with m_i the running max (0 where infinite,
    so inf and -inf come out as eager's), computed in f64 for f32 and in f32 for halves."""
    a = bind(node)
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("logcumsumexp of an integer tensor")
    compute = torch.float64 if val.dtype in (torch.float32, torch.float64) else torch.float32
    x = ctx.cast(ctx.tensor(a.self), compute)
    require_static(ctx, x, "scan")
    shape = ctx.shape_of(x)
    if not shape:
        return ctx.cast(x, val.dtype)
    dim = norm_dim(a.dim, len(shape))
    if shape[dim] == 0:
        raise Unsupported("logcumsumexp over an empty dim")
    peak = scan(ctx, x, dim, "max", float("-inf"))
    finite = emit_like(ctx, "not", isinf(ctx, peak))
    shift = select(ctx, finite, peak, like(ctx, 0.0, peak))
    src, i, j = _pairwise(ctx, x, dim)
    wide = ctx.shape_of(src)
    shift_wide = ctx.broadcast(ctx.reshape(shift, shape[:dim + 1] + [1] + shape[dim + 1:]), wide)
    terms = emit_like(ctx, "exp", emit_like(ctx, "sub", src, shift_wide))
    terms = select(ctx, compare(ctx, j, i, "le"), terms, like(ctx, 0.0, terms))
    total = reduce(ctx, terms, "sum", [dim + 1], False)
    return ctx.cast(emit_like(ctx, "add", emit_like(ctx, "log", total), shift), val.dtype)
