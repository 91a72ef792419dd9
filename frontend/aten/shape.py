"""View and data-movement ATen ops. Functionalized graphs give us value semantics, so views are
reshapes/slices/permutes of values."""

import torch

from ...dialects import dynamo as dy
from ..importer import DYN, static_shape
from ..registry import Unsupported, import_rule

aten = torch.ops.aten


def _i64s(values):
    from torch_mlir import ir

    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _norm_dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


@import_rule(aten.view, aten._unsafe_view, aten.reshape, aten.unsqueeze, aten.squeeze, aten.flatten,
             aten.view_copy, aten.unflatten)
def _reshape(ctx, node):
    return ctx.reshape(ctx.tensor(node.args[0]), ctx.out_meta(node).shape)


@import_rule(aten.permute, aten.permute_copy)
def _permute(ctx, node):
    x = ctx.tensor(node.args[0])
    rank = len(ctx.shape_of(x))
    perm = [_norm_dim(d, rank) for d in node.args[1]]
    return dy.PermuteOp(x, perm=_i64s(perm), out=ctx.out_type(node)).out


@import_rule(aten.t, aten.transpose, aten.numpy_T)
def _transpose(ctx, node):
    x = ctx.tensor(node.args[0])
    rank = len(ctx.shape_of(x))
    perm = list(range(rank))
    if node.target.overloadpacket is aten.transpose:
        a, b = (_norm_dim(d, rank) for d in node.args[1:3])
    else:
        a, b = 0, max(rank - 1, 0)
    perm[a], perm[b] = perm[b], perm[a]
    return dy.PermuteOp(x, perm=_i64s(perm), out=ctx.out_type(node)).out


@import_rule(aten.expand, aten.expand_copy, aten.broadcast_to, aten.expand_as)
def _expand(ctx, node):
    return ctx.broadcast(ctx.tensor(node.args[0]), ctx.out_meta(node).shape)


def _slice(ctx, x, dim, start, step, out_type):
    shape = ctx.shape_of(x)
    starts, steps = [0] * len(shape), [1] * len(shape)
    starts[dim], steps[dim] = start, step
    return dy.SliceOp(x, _i64s(starts), _i64s(steps), out=out_type).out


@import_rule(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice_tensor(ctx, node):
    x = ctx.tensor(node.args[0])
    shape = ctx.shape_of(x)
    dim = _norm_dim(node.args[1] if len(node.args) > 1 else 0, len(shape))
    start = node.args[2] if len(node.args) > 2 else 0
    step = node.args[4] if len(node.args) > 4 else 1
    start = 0 if start is None else start
    if not isinstance(start, int) or not isinstance(step, int):
        raise Unsupported("symbolic slice bounds")
    start = max(0, min(start + shape[dim] if start < 0 else start, shape[dim]))
    return _slice(ctx, x, dim, start, step, ctx.out_type(node))


@import_rule(aten.select.int, aten.select_copy.int)
def _select(ctx, node):
    x, dim, index = ctx.tensor(node.args[0]), node.args[1], node.args[2]
    shape = ctx.shape_of(x)
    dim = _norm_dim(dim, len(shape))
    index = index + shape[dim] if index < 0 else index
    kept = list(shape)
    kept[dim] = 1
    if shape[dim] == DYN:
        raise Unsupported("select on a dynamic dim")
    sliced = _slice(ctx, x, dim, index, 1, ctx.type_like(x, shape=kept))
    return ctx.reshape(sliced, ctx.out_meta(node).shape)


@import_rule(aten.cat)
def _cat(ctx, node):
    out = ctx.out_meta(node)
    tensors = [t for t in node.args[0] if static_shape(t.meta["val"]) != (0,)]
    dim = _norm_dim(node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0), out.dim())
    values = [ctx.cast(ctx.tensor(t), out.dtype) for t in tensors]
    result = values[0]
    for v in values[1:]:  # a chain of binary concats
        shape, extra = ctx.shape_of(result), ctx.shape_of(v)[dim]
        shape[dim] = DYN if DYN in (shape[dim], extra) else shape[dim] + extra
        result = dy.ConcatOp(result, v, _dim_attr(dim), out=ctx.type_like(result, shape=shape)).out
    return result


def _dim_attr(dim):
    from torch_mlir import ir

    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)


@import_rule(aten.split_with_sizes, aten.split.Tensor, aten.split_with_sizes_copy)
def _split(ctx, node):
    x = ctx.tensor(node.args[0])
    shape = ctx.shape_of(x)
    dim = _norm_dim(node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0), len(shape))
    parts, start = [], 0
    for i, piece in enumerate(ctx.out_meta(node)):
        parts.append(_slice(ctx, x, dim, start, 1, ctx.out_type(node, i)))
        start += piece.shape[dim]
    return tuple(parts)


@import_rule(aten.constant_pad_nd)
def _pad(ctx, node):
    x = ctx.tensor(node.args[0])
    pads, value = node.args[1], node.args[2] if len(node.args) > 2 else 0
    shape = ctx.shape_of(x)
    low, high = [0] * len(shape), [0] * len(shape)
    for i in range(len(pads) // 2):  # pads list the last dim first
        low[len(shape) - 1 - i], high[len(shape) - 1 - i] = pads[2 * i], pads[2 * i + 1]
    if min(low + high) < 0:
        raise Unsupported("negative padding")
    fill = ctx.scalar(value, ctx.dtype_of(x))
    return dy.PadOp(x, fill, _i64s(low), _i64s(high), out=ctx.out_type(node)).out
