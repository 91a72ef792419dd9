"""Contractions: mm, bmm, addmm, addbmm, _trilinear (torch.nn.functional.bilinear).

Eager contracts with BLAS calls in a fixed order; the rules take the same steps (and, for half
types, round where eager's half-typed intermediate results round). mm and bmm keep their
operands' type: a half matmul accumulates in float32 and rounds once (dialects/matmul.py), and
the target decides where that runs (cuBLAS's tensor cores on cuda; float32 copies on cpu,
codegen/contraction_precision.py)."""

import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import compute_dtype, emit_like, reduce

aten = torch.ops.aten


def matmul(ctx, a, b, out_dtype):
    """a @ b (batched alike) in out_dtype, the operands' type."""
    a, b = ctx.cast(a, out_dtype), ctx.cast(b, out_dtype)
    out_shape = ctx.shape_of(a)[:-1] + [ctx.shape_of(b)[-1]]
    return dy.MatmulOp(a, b, out=ctx.type_like(a, shape=out_shape)).out


@import_rule(aten.mm, aten.bmm)
def _mm(ctx, node):
    a = bind(node)
    return matmul(ctx, ctx.tensor(a.self), ctx.tensor(a.mat2), ctx.out_meta(node).dtype)


@import_rule(aten.addmm)
def _addmm(ctx, node):
    a = bind(node)
    if a.beta != 1 or a.alpha != 1:
        raise Unsupported("addmm with alpha/beta")
    val = ctx.out_meta(node)
    prod = matmul(ctx, ctx.tensor(a.mat1), ctx.tensor(a.mat2), val.dtype)
    return emit_like(ctx, "add", prod, ctx.operand(a.self, val.dtype, static_shape(val)))


def _scaled(ctx, x, factor):
    if factor == 1:
        return x
    return emit_like(ctx, "mul", x, ctx.broadcast(ctx.scalar(factor, ctx.dtype_of(x)), ctx.shape_of(x)))


@import_rule(aten.addbmm)
def _addbmm(ctx, node):
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b]): one batched matmul, a sum over b."""
    a = bind(node)
    val = ctx.out_meta(node)
    if not all(isinstance(v, (int, float)) for v in (a.beta, a.alpha)) or not val.dtype.is_floating_point:
        raise Unsupported("addbmm with non-number alpha/beta or integer tensors")
    compute, shape = compute_dtype(val.dtype), list(static_shape(val))
    b1, b2 = ctx.cast(ctx.tensor(a.batch1), compute), ctx.cast(ctx.tensor(a.batch2), compute)
    if 0 in ctx.shape_of(b1)[:1] + shape:
        raise Unsupported("addbmm over an empty batch")
    prod = dy.MatmulOp(b1, b2, out=ctx.type_like(b1, shape=[ctx.shape_of(b1)[0], *shape])).out
    y = _scaled(ctx, reduce(ctx, prod, "sum", [0], False), a.alpha)
    if a.beta != 0:  # beta == 0 ignores self, NaNs included
        y = emit_like(ctx, "add", _scaled(ctx, ctx.operand(a.self, compute, shape), a.beta), y)
    return ctx.cast(y, val.dtype)


def _product_sum(ctx, a, b, dims):
    """sum over `dims` of a * b (both broadcast to their common shape), summed in order."""
    shape = [max(x, y) for x, y in zip(ctx.shape_of(a), ctx.shape_of(b))]
    p = ctx.emit("mul", ctx.broadcast(a, shape), ctx.broadcast(b, shape), out=ctx.type_like(a, shape=shape))
    if not dims:
        return p
    return reduce(ctx, p, "sum", sorted(dims), True)


def _unsqueezed(ctx, v, expand):
    """v with a unit dim inserted at each of `expand` (result dims)."""
    shape = iter(ctx.shape_of(v))
    rank = len(ctx.shape_of(v)) + len(expand)
    return ctx.reshape(v, [1 if d in expand else next(shape) for d in range(rank)])


@import_rule(aten._trilinear)
def _trilinear(ctx, node):
    """torch.nn.functional.bilinear's contraction: each input unsqueezed at its `expand` dims,
    the product summed over `sumdim`. Like eager, in two steps: i1 * i2 summed over the dims
    i3 lacks, then times i3 summed over the rest."""
    a = bind(node)
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("_trilinear of integer tensors")
    compute = compute_dtype(val.dtype)
    pairs = ((a.i1, a.expand1), (a.i2, a.expand2), (a.i3, a.expand3))
    ops = [_unsqueezed(ctx, ctx.cast(ctx.tensor(arg), compute), expand) for arg, expand in pairs]
    if 0 in ctx.shape_of(ops[0]) + ctx.shape_of(ops[1]) + ctx.shape_of(ops[2]):
        return ctx.full(0, list(static_shape(val)), val.dtype)  # empty sums are zeros
    first = [d for d in a.sumdim if d in a.expand3]
    t = _product_sum(ctx, ops[0], ops[1], first)
    if val.dtype != compute:  # eager's first product is a half tensor
        t = ctx.cast(ctx.cast(t, val.dtype), compute)
    y = _product_sum(ctx, t, ops[2], [d for d in a.sumdim if d not in a.expand3])
    return ctx.cast(ctx.reshape(y, list(static_shape(val))), val.dtype)
