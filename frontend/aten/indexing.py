"""Indexing: advanced indexing (aten.index.Tensor), index_select, gather, embedding, nonzero_static.

x[i0, i1] (index tensors on some dims of x) reads, for every element of the indices' broadcast
shape B, the sub-tensor of x at those coordinates. Moving the indexed dims to the front and
flattening them makes that one `dynamo.gather` of rows, with the row number
flat = sum_k wrap(i_k) * stride_k (row-major over the indexed dims).
(Writing through an index, index_put and the scatters, is scatter.py.)
"""

import math

import numpy as np
import torch

from ...dialects import dynamo as dy
from ..importer import fake_value, static_shape
from ..registry import Unsupported, import_rule
from .args import bind, norm_dim
from .builders import compare, const, element_count, emit_like, i64, i64s, iota, numel, permute, reduce, select
from .scan import scan

aten = torch.ops.aten
I64 = torch.int64


def _flat_row(ctx, x, indices, dims, shape):
    """sum_k wrap(i_k) * stride_k over the indexed dims of x, broadcast to shape (a torch
    shape). Sizes and strides are constants, or read off x where a dim is `?`."""
    flat = None
    for k in reversed(range(len(dims))):
        i = ctx.broadcast(ctx.cast(ctx.tensor(indices[k]), I64), shape)
        size = ctx.broadcast(element_count(ctx, x, [dims[k]], I64), shape)
        # Python remainder maps a negative index -size..-1 to size-1..0, as torch wraps it.
        i = emit_like(ctx, "rem", i, size)
        later = dims[k + 1:]
        if numel([ctx.shape_of(x)[d] for d in later]) != 1:  # a `?` (negative) is never 1
            i = emit_like(ctx, "mul", i, ctx.broadcast(element_count(ctx, x, later, I64), shape))
        flat = i if flat is None else emit_like(ctx, "add", flat, i)
    return flat


@import_rule(aten.index.Tensor)
def _index(ctx, node):
    """Sizes are torch's (SymInts where `?`): the indices' broadcast shape B is read off the
    result, where it sits after the leading rest dims (adjacent indexed dims) or first."""
    a = bind(node)
    x = ctx.tensor(a.self)
    shape, sym = ctx.shape_of(x), list(fake_value(a.self).shape)
    indices = list(a.indices) + [None] * (len(shape) - len(a.indices))
    dims = [d for d, i in enumerate(indices) if i is not None]
    if any(ctx.dtype_of(ctx.tensor(indices[d])) in (torch.bool, torch.uint8) for d in dims):
        raise Unsupported("boolean mask index (data-dependent shape)")
    out = ctx.out_meta(node)
    if 0 in static_shape(out):
        return ctx.full(0, static_shape(out), out.dtype)
    if 0 in shape:
        raise Unsupported("indexing an empty tensor")
    rest = [d for d in range(len(shape)) if d not in dims]
    # Adjacent indexed dims keep their place in the result; otherwise B leads (numpy's rule).
    lead = dims[0] if dims == list(range(dims[0], dims[-1] + 1)) and dims[0] > 0 else 0
    nb = len(out.shape) - len(rest)
    b = list(out.shape)[lead:lead + nb]
    moved = ctx.reshape(permute(ctx, x, dims + rest), [math.prod(sym[d] for d in dims)] + [sym[d] for d in rest])
    flat = _flat_row(ctx, x, [indices[d] for d in dims], dims, b)
    g = dy.GatherOp(moved, flat, out=ctx.type_like(moved, shape=static_shape(out)[lead:lead + nb] + tuple(shape[d] for d in rest))).out
    if lead:
        g = permute(ctx, g, list(range(nb, nb + lead)) + list(range(nb)) + list(range(nb + lead, nb + len(rest))))
    return g


@import_rule(aten.embedding)
def _embedding(ctx, node):
    a = bind(node)
    return dy.GatherOp(ctx.tensor(a.weight), ctx.tensor(a.indices), out=ctx.out_type(node)).out


@import_rule(aten.index_select)
def _index_select(ctx, node):
    a = bind(node)
    x, index = ctx.tensor(a.self), ctx.tensor(a.index)
    shape = ctx.shape_of(x)
    rank = len(shape)
    if rank == 0:  # the index holds one 0 (or -1): x itself, shaped like the result
        return ctx.reshape(x, static_shape(ctx.out_meta(node)))
    dim = norm_dim(a.dim, rank)
    perm = [dim] + [d for d in range(rank) if d != dim]
    moved = permute(ctx, x, perm)
    n = ctx.shape_of(index)
    gathered_shape = [n[0] if n else 1] + [shape[p] for p in perm[1:]]
    index = ctx.reshape(index, [gathered_shape[0]])
    g = dy.GatherOp(moved, index, out=ctx.type_like(x, shape=gathered_shape)).out
    return dy.PermuteOp(g, perm=i64s([perm.index(d) for d in range(rank)]), out=ctx.out_type(node)).out


@import_rule(aten.gather)
def _gather(ctx, node):
    a = bind(node)
    x, index = ctx.tensor(a.self), ctx.tensor(a.index)
    rank = len(ctx.shape_of(x))
    if rank == 0:
        raise Unsupported("gather on a 0-d tensor")
    return dy.GatherAlongOp(x, index, i64(norm_dim(a.dim, rank)), out=ctx.out_type(node)).out


@import_rule(aten.nonzero_static)
def _nonzero_static(ctx, node):
    """Coordinates of the first `size` nonzeros in row-major order, rows past the count filled.

    The k-th nonzero sits at flat position p_k = #{i : c_i <= k}, where c is the running count
    of nonzeros (an inclusive scan of the mask): a compare-and-count, quadratic in numel like
    the scans, with no data-dependent shape. Its coordinates are p_k // stride_d % size_d."""
    a = bind(node)
    size, rank = static_shape(ctx.out_meta(node))
    x = ctx.tensor(a.self)
    shape = ctx.shape_of(x)
    n = numel(shape)
    if size == 0 or rank == 0 or n == 0:
        return ctx.full(a.fill_value, [size, rank], I64)
    mask = compare(ctx, x, ctx.broadcast(ctx.scalar(0, ctx.dtype_of(x)), shape), "ne")
    running = scan(ctx, ctx.cast(ctx.reshape(mask, [n]), I64), 0, "sum", 0.0)  # c_i
    wide = [size, n]
    k = iota(ctx, wide, 0)
    before = compare(ctx, ctx.broadcast(ctx.reshape(running, [1, n]), wide), k, "le")
    counted = ctx.reshape(reduce(ctx, ctx.cast(before, I64), "sum", [1]), [size, 1])
    position = ctx.broadcast(counted, [size, rank])  # p_k
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    row = lambda values: ctx.broadcast(const(ctx, np.array([values])), [size, rank])  # noqa: E731
    coords = emit_like(ctx, "rem", emit_like(ctx, "floordiv", position, row(strides)), row(shape))
    found = compare(ctx, position, ctx.full(n, [size, rank], I64), "lt")
    return select(ctx, found, coords, ctx.full(a.fill_value, [size, rank], I64))
