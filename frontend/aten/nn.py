"""Contractions, convolution, pooling, normalization, embedding."""

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype

aten = torch.ops.aten


def _i64s(values):
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * 2 if len(v) == 1 else v


def matmul(ctx, a, b, out_dtype):
    acc = out_dtype  # fp32 accumulation for half types happens via the upcast below
    compute = compute_dtype(acc)
    a, b = ctx.cast(a, compute), ctx.cast(b, compute)
    sa, sb = ctx.shape_of(a), ctx.shape_of(b)
    out_shape = sa[:-1] + [sb[-1]]
    r = dy.MatmulOp(a, b, out=ctx.type_like(a, shape=out_shape)).out
    return ctx.cast(r, out_dtype)


@import_rule(aten.mm, aten.bmm)
def _mm(ctx, node):
    return matmul(ctx, ctx.tensor(node.args[0]), ctx.tensor(node.args[1]), ctx.out_meta(node).dtype)


@import_rule(aten.addmm)
def _addmm(ctx, node):
    bias, a, b = node.args[:3]
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    if beta != 1 or alpha != 1:
        raise Unsupported("addmm with alpha/beta")
    val = ctx.out_meta(node)
    prod = matmul(ctx, ctx.tensor(a), ctx.tensor(b), val.dtype)
    return ctx.emit("add", prod, ctx.operand(bias, val.dtype, static_shape(val)), out=ctx.type_like(prod))


def _pool(ctx, node, kind, kernel, stride, padding, dilation, ceil_mode):
    if ceil_mode:
        raise Unsupported("ceil_mode pooling")
    x = ctx.tensor(node.args[0])
    val = ctx.out_meta(node)
    val = val[0] if isinstance(val, (tuple, list)) else val
    if len(ctx.shape_of(x)) != 4:
        raise Unsupported("only batched 2-d pooling (NCHW)")
    stride = kernel if not stride else stride
    attrs = [_i64s(_pair(v)) for v in (kernel, stride, padding, dilation)]
    compute = compute_dtype(val.dtype)
    y = dy.Pool2dOp(ctx.cast(x, compute), ir.StringAttr.get(kind), *attrs,
                    out=ctx.type_like(x, compute, static_shape(val))).out
    return ctx.cast(y, val.dtype)


# max_pool2d_with_indices: see training.py (it also produces the indices when they are read).


@import_rule(aten.avg_pool2d)
def _avg_pool(ctx, node):
    args = list(node.args) + [None] * 7
    kernel, stride, padding = args[1], args[2], args[3] or 0
    ceil_mode, count_include_pad, divisor = bool(args[4]), args[5] is not False, args[6]
    if divisor is not None or (not count_include_pad and any(_pair(padding))):
        raise Unsupported("avg_pool2d with divisor_override or count_include_pad=False and padding")
    return _pool(ctx, node, "avg", kernel, stride, padding, 1, ceil_mode)


@import_rule(aten._native_batch_norm_legit_no_training)
def _batch_norm_inference(ctx, node):
    x, weight, bias, mean, var, _momentum, eps = node.args[:7]
    val = ctx.out_meta(node, 0)
    compute = compute_dtype(val.dtype)
    xv = ctx.cast(ctx.tensor(x), compute)
    shape = ctx.shape_of(xv)
    channel = [1, shape[1]] + [1] * (len(shape) - 2)
    mean_c, var_c = (ctx.cast(ctx.tensor(a), compute) for a in (mean, var))
    inv_c = ctx.emit("rsqrt", ctx.emit("add", var_c, ctx.broadcast(ctx.scalar(eps, compute), [shape[1]]),
                                       out=ctx.type_like(var_c)), out=ctx.type_like(var_c))

    def per_channel(v):
        return ctx.broadcast(ctx.reshape(v, channel), shape)

    def param(arg):
        return per_channel(ctx.cast(ctx.tensor(arg), compute))

    t = ctx.type_like(xv)
    y = ctx.emit("mul", ctx.emit("sub", xv, per_channel(mean_c), out=t), per_channel(inv_c), out=t)
    if weight is not None:
        y = ctx.emit("mul", y, param(weight), out=t)
    if bias is not None:
        y = ctx.emit("add", y, param(bias), out=t)
    # Outputs 1 and 2: empty on CPU; on CUDA eager returns the running mean and 1/sqrt(var + eps).
    saved = [ctx.out_meta(node, i) for i in (1, 2)]
    return (ctx.cast(y, val.dtype), *(ctx.cast(v, s.dtype) if s.numel() else ctx.full(0, static_shape(s), s.dtype)
                                      for v, s in zip((mean_c, inv_c), saved)))


@import_rule(aten.embedding)
def _embedding(ctx, node):
    weight, indices = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    return dy.GatherOp(weight, indices, out=ctx.out_type(node)).out


@import_rule(aten.index_select)
def _index_select(ctx, node):
    x, dim, index = ctx.tensor(node.args[0]), node.args[1], ctx.tensor(node.args[2])
    rank = len(ctx.shape_of(x))
    dim = dim + rank if dim < 0 else dim
    if rank == 0:  # the index holds one 0 (or -1): x itself, shaped like the result
        return ctx.reshape(x, static_shape(ctx.out_meta(node)))
    perm = [dim] + [d for d in range(rank) if d != dim]
    inverse = [perm.index(d) for d in range(rank)]
    shape = ctx.shape_of(x)
    moved = dy.PermuteOp(x, perm=_i64s(perm), out=ctx.type_like(x, shape=[shape[p] for p in perm])).out
    n = ctx.shape_of(index)
    gathered_shape = [n[0] if n else 1] + [shape[p] for p in perm[1:]]
    index = ctx.reshape(index, [gathered_shape[0]])
    g = dy.GatherOp(moved, index, out=ctx.type_like(x, shape=gathered_shape)).out
    return dy.PermuteOp(g, perm=_i64s(inverse), out=ctx.out_type(node)).out


@import_rule(aten.gather)
def _gather(ctx, node):
    x, dim, index = ctx.tensor(node.args[0]), node.args[1], ctx.tensor(node.args[2])
    rank = len(ctx.shape_of(x))
    if rank == 0:
        raise Unsupported("gather on a 0-d tensor")
    dim = dim + rank if dim < 0 else dim
    attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)
    return dy.GatherAlongOp(x, index, attr, out=ctx.out_type(node)).out
