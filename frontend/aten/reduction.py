"""Reductions, softmax and variance, built from dynamo.reduce (+ elementwise)."""

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import DYN, static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype

aten = torch.ops.aten


def _dims(node, x_rank: int, position: int = 1) -> list[int]:
    dims = node.args[position] if len(node.args) > position else node.kwargs.get("dim")
    if dims is None or dims == []:
        return list(range(x_rank))
    if x_rank == 0:  # dim 0 / -1 of a 0-d tensor names the tensor itself: nothing to reduce
        return []
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({d + x_rank if d < 0 else d for d in dims})


def _keepdim(node, position: int = 2) -> bool:
    return bool(node.args[position] if len(node.args) > position else node.kwargs.get("keepdim", False))


def reduce(ctx, x, kind: str, dims: list[int], keepdim: bool):
    shape = ctx.shape_of(x)
    if not dims:  # reducing a 0-d tensor is the identity
        return x
    kept = [s for i, s in enumerate(shape) if i not in dims]
    attrs = (ir.StringAttr.get(kind), ir.DenseI64ArrayAttr.get(dims))
    r = dy.ReduceOp(x, *attrs, out=ctx.type_like(x, shape=kept)).out
    if keepdim:
        r = ctx.reshape(r, [1 if i in dims else s for i, s in enumerate(shape)])
    return r


def divisor(ctx, x, dims, dtype):
    """The element count over `dims` as a 0-d tensor: a constant, or read at run time."""
    shape = ctx.shape_of(x)
    if all(shape[d] != DYN for d in dims):
        return ctx.scalar(count(shape, dims), dtype)
    return dy.NumelOp(x, dims=ir.DenseI64ArrayAttr.get(dims), out=ctx.type_like(x, dtype, [])).out


def count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


@import_rule(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.prod.dim_int,
             aten.prod.default)
def _sum_mean(ctx, node):
    val = ctx.out_meta(node)
    x = ctx.tensor(node.args[0])
    packet = node.target.overloadpacket
    acc = compute_dtype(val.dtype)
    x = ctx.opmath(x, acc)
    rank = len(ctx.shape_of(x))
    is_default = node.target in (aten.sum.default, aten.mean.default, aten.prod.default)
    dims = list(range(rank)) if is_default else _dims(node, rank)
    if packet is aten.prod and not is_default:
        dims = [node.args[1] + rank if node.args[1] < 0 else node.args[1]] if rank else []
    keep = False if is_default else _keepdim(node)
    kind = "prod" if packet is aten.prod else "sum"
    r = reduce(ctx, x, kind, dims, keep)
    if packet is aten.mean:
        if not acc.is_floating_point:
            raise Unsupported("mean of an integer tensor")
        r = ctx.emit("div", r, ctx.broadcast(divisor(ctx, x, dims, acc), ctx.shape_of(r), like=r), out=ctx.type_like(r))
    return ctx.rounded(r, val.dtype)


@import_rule(aten.amax, aten.amin, aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.default,
             aten.max.default, aten.min.default)
def _extremum(ctx, node):
    packet = node.target.overloadpacket
    kind = {aten.amax: "max", aten.amin: "min", aten.any: "any", aten.all: "all",
            aten.max: "max", aten.min: "min"}[packet]
    val = ctx.out_meta(node)
    x = ctx.tensor(node.args[0])
    if kind in ("any", "all"):
        x = ctx.cast(x, torch.bool)
    rank = len(ctx.shape_of(x))
    full = node.target in (aten.any.default, aten.all.default, aten.max.default, aten.min.default)
    dims = list(range(rank)) if full else _dims(node, rank)
    if full and rank and 0 in ctx.shape_of(x):
        raise Unsupported("max/min of an empty tensor")
    return ctx.cast(reduce(ctx, x, kind, dims, False if full else _keepdim(node)), val.dtype)


@import_rule(aten.max.dim, aten.min.dim)
def _max_dim(ctx, node):
    kind = "max" if node.target.overloadpacket is aten.max else "min"
    x = ctx.tensor(node.args[0])
    rank = len(ctx.shape_of(x))
    dim = node.args[1] + rank if node.args[1] < 0 else node.args[1]
    keep = _keepdim(node)
    values = reduce(ctx, x, kind, [dim], keep)
    return values, _arg(ctx, x, kind, dim, keep)


def _arg(ctx, x, kind, dim, keepdim):
    shape = ctx.shape_of(x)
    kept = shape[:dim] + shape[dim + 1:]
    i = dy.ArgReduceOp(x, ir.StringAttr.get(kind), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim),
                       out=ctx.type_like(x, torch.int64, kept)).out
    return ctx.reshape(i, shape[:dim] + [1] + shape[dim + 1:]) if keepdim else i


@import_rule(aten.argmax, aten.argmin)
def _argmax(ctx, node):
    kind = "max" if node.target.overloadpacket is aten.argmax else "min"
    x = ctx.tensor(node.args[0])
    shape = ctx.shape_of(x)
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dim is None or not shape:
        # Over the flattened tensor (a 0-d tensor is one element); keepdim keeps every dim as 1.
        if 0 in shape:
            raise Unsupported("argmax/argmin of an empty tensor")
        flat = _arg(ctx, ctx.reshape(x, [count(shape, range(len(shape)))]), kind, 0, False)
        return ctx.reshape(flat, static_shape(ctx.out_meta(node)))
    return _arg(ctx, x, kind, dim % len(shape), _keepdim(node))


@import_rule(aten.var_mean.correction, aten.var.correction)
def _var_mean(ctx, node):
    val = ctx.out_meta(node)
    out_dtype = (val[0] if isinstance(val, (tuple, list)) else val).dtype
    acc = compute_dtype(out_dtype)
    x = ctx.opmath(ctx.tensor(node.args[0]), acc)
    shape = ctx.shape_of(x)
    dims = _dims(node, len(shape))
    correction = node.kwargs.get("correction", 1)
    correction = 1 if correction is None else correction
    keep = node.kwargs.get("keepdim", False)
    if any(shape[d] == DYN for d in dims):
        raise Unsupported("variance over a dynamic dim")
    n = count(shape, dims)
    mean_k = reduce(ctx, x, "sum", dims, True)
    # like=: a scalar divisor broadcast to a shape with `?` dims reads them off the dividend
    mean_k = ctx.emit("div", mean_k, ctx.broadcast(ctx.scalar(n, acc), ctx.shape_of(mean_k), like=mean_k), out=ctx.type_like(mean_k))
    centered = ctx.emit("sub", x, ctx.broadcast(mean_k, shape), out=ctx.type_like(x))
    sq = reduce(ctx, ctx.emit("mul", centered, centered, out=ctx.type_like(x)), "sum", dims, keep)
    var = ctx.emit("div", sq, ctx.broadcast(ctx.scalar(max(n - correction, 0), acc), ctx.shape_of(sq), like=sq), out=ctx.type_like(sq))
    mean = mean_k if keep else ctx.reshape(mean_k, ctx.shape_of(var))
    var, mean = ctx.rounded(var, out_dtype), ctx.rounded(mean, out_dtype)
    return (var, mean) if node.target.overloadpacket is aten.var_mean else var


def softmax(ctx, x, dim: int, log: bool):
    shape = ctx.shape_of(x)
    m = ctx.broadcast(reduce(ctx, x, "max", [dim], True), shape)
    shifted = ctx.emit("sub", x, m, out=ctx.type_like(x))
    e = ctx.emit("exp", shifted, out=ctx.type_like(x))
    s = ctx.broadcast(reduce(ctx, e, "sum", [dim], True), shape)
    if log:
        return ctx.emit("sub", shifted, ctx.emit("log", s, out=ctx.type_like(x)), out=ctx.type_like(x))
    return ctx.emit("div", e, s, out=ctx.type_like(x))


@import_rule(aten._softmax, aten._log_softmax, aten.softmax.int, aten.log_softmax.int)
def _softmax(ctx, node):
    val = ctx.out_meta(node)
    x = ctx.tensor(node.args[0])
    rank = len(ctx.shape_of(x))
    if rank == 0:
        raise Unsupported("softmax of a 0-d tensor")
    dim = node.args[1] + rank if node.args[1] < 0 else node.args[1]
    x = ctx.opmath(x, compute_dtype(val.dtype))
    log = node.target.overloadpacket in (aten._log_softmax, aten.log_softmax)
    return ctx.rounded(softmax(ctx, x, dim, log), val.dtype)
