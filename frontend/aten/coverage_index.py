"""Indexing and ranges found missing by the OpInfo sweep: advanced indexing (aten.index.Tensor)
as one row gather with a computed flat index, and float aranges.

x[i0, i1] (index tensors on some dims of x) reads, for every element of the indices' broadcast
shape B, the sub-tensor of x at those coordinates. Moving the indexed dims to the front and
flattening them makes that one `dynamo.gather` of rows, with the row number
flat = sum_k wrap(i_k) * stride_k (row-major over the indexed dims).
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype
from .nn import _i64s

aten = torch.ops.aten
I64 = torch.int64


def _permute(ctx, x, perm):
    if perm == sorted(perm):
        return x
    shape = ctx.shape_of(x)
    return dy.PermuteOp(x, perm=_i64s(perm), out=ctx.type_like(x, shape=[shape[p] for p in perm])).out


def _flat_row(ctx, indices, sizes, shape):
    """sum_k wrap(i_k) * stride_k over the indexed dims (sizes), broadcast to shape."""
    flat, stride = None, 1
    for idx, size in reversed(list(zip(indices, sizes))):
        i = ctx.broadcast(ctx.cast(ctx.tensor(idx), I64), shape)
        t = ctx.type_like(i)
        # Python remainder maps a negative index -size..-1 to size-1..0, as torch wraps it.
        i = ctx.emit("rem", i, ctx.broadcast(ctx.scalar(size, I64), shape), out=t)
        if stride != 1:
            i = ctx.emit("mul", i, ctx.broadcast(ctx.scalar(stride, I64), shape), out=t)
        flat = i if flat is None else ctx.emit("add", flat, i, out=t)
        stride *= size
    return flat


@import_rule(aten.index.Tensor)
def _index(ctx, node):
    x = ctx.tensor(node.args[0])
    shape = ctx.shape_of(x)
    indices = list(node.args[1]) + [None] * (len(shape) - len(node.args[1]))
    dims = [d for d, i in enumerate(indices) if i is not None]
    if any(ctx.dtype_of(ctx.tensor(indices[d])) in (torch.bool, torch.uint8) for d in dims):
        raise Unsupported("boolean mask index (data-dependent shape)")
    out = ctx.out_meta(node)
    if out.numel() == 0:
        return ctx.full(0, static_shape(out), out.dtype)
    if 0 in shape:
        raise Unsupported("indexing an empty tensor")
    rest = [d for d in range(len(shape)) if d not in dims]
    sizes = [shape[d] for d in dims]
    b = list(torch.broadcast_shapes(*[static_shape(indices[d].meta["val"]) for d in dims]))
    rows = 1
    for s in sizes:
        rows *= s
    moved = ctx.reshape(_permute(ctx, x, dims + rest), [rows] + [shape[d] for d in rest])
    flat = _flat_row(ctx, [indices[d] for d in dims], sizes, b)
    g = dy.GatherOp(moved, flat, out=ctx.type_like(moved, shape=b + [shape[d] for d in rest])).out
    # Adjacent indexed dims keep their place in the result; otherwise B leads (numpy's rule).
    if dims == list(range(dims[0], dims[-1] + 1)) and dims[0] > 0:
        nb, lead = len(b), dims[0]
        perm = list(range(nb, nb + lead)) + list(range(nb)) + list(range(nb + lead, nb + len(rest)))
        g = _permute(ctx, g, perm)
    return g


# Accumulation type of torch's CPU arange kernel (start + step * i is computed in it).
ARANGE_ACC = {torch.float32: torch.float64, torch.float64: torch.float64}


@import_rule(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(ctx, node):
    """The length comes from torch's own meta (its ceil((end - start) / step) in double); the
    values are start + step * i computed in the kernel's accumulation type and rounded."""
    val = ctx.out_meta(node)
    args = list(node.args)
    start, step = (0, 1) if node.target is aten.arange.default else (args[0], args[2] if len(args) > 2 else 1)
    if val.dtype in (torch.uint8, torch.bool):
        raise Unsupported(f"arange of {val.dtype}")
    acc = ARANGE_ACC.get(val.dtype, compute_dtype(val.dtype))
    shape = list(static_shape(val))
    dim = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
    zero = ctx.scalar(0, acc)
    r = dy.IotaOp(ctx.scalar(start, acc), ctx.scalar(step, acc), dim, out=ctx.type_like(zero, acc, shape)).out
    return ctx.cast(r, val.dtype)


@import_rule(torch.ops.prims.broadcast_in_dim.default)
def _broadcast_in_dim(ctx, node):
    """prims.broadcast_in_dim(a, shape, dims): a's dim i becomes result dim dims[i]."""
    x = ctx.tensor(node.args[0])
    shape, dims = list(static_shape(ctx.out_meta(node))), list(node.args[2])
    placed = [1] * len(shape)
    for i, d in enumerate(dims):
        placed[d] = ctx.shape_of(x)[i]
    return ctx.broadcast(ctx.reshape(x, placed), shape)


@import_rule(aten.nonzero_static)
def _nonzero_static(ctx, node):
    """Coordinates of the first `size` nonzeros in row-major order, rows past the count filled.

    The k-th nonzero sits at flat position p_k = #{i : c_i <= k}, where c is the running count
    of nonzeros (an inclusive scan of the mask): a compare-and-count, quadratic in numel like
    the scans, with no data-dependent shape. Its coordinates are p_k // stride_d % size_d."""
    from .coverage_math import _iota, scan

    val = ctx.out_meta(node)
    size, rank = static_shape(val)
    fill = node.kwargs.get("fill_value", node.args[2] if len(node.args) > 2 else -1)
    x = ctx.tensor(node.args[0])
    shape = ctx.shape_of(x)
    n = 1
    for s in shape:
        n *= s
    if size == 0 or rank == 0 or n == 0:
        return ctx.full(fill, [size, rank], I64)
    zero = ctx.broadcast(ctx.scalar(0, ctx.dtype_of(x)), shape)
    mask = dy.CompareOp(x, zero, ir.StringAttr.get("ne"), out=ctx.type_like(x, torch.bool)).out
    running = scan(ctx, ctx.cast(ctx.reshape(mask, [n]), I64), 0, "sum", 0.0)  # c_i
    wide = [size, n]
    k = _iota(ctx, wide, 0)
    before = dy.CompareOp(ctx.broadcast(ctx.reshape(running, [1, n]), wide), k, ir.StringAttr.get("le"),
                          out=ctx.type_like(k, torch.bool)).out
    position = ctx.broadcast(_sum_rows(ctx, ctx.cast(before, I64)), [size, rank])  # p_k
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    coords = _binary(ctx, "rem", _binary(ctx, "floordiv", position, _row(ctx, strides, size)), _row(ctx, shape, size))
    found = dy.CompareOp(position, ctx.full(n, [size, rank], I64), ir.StringAttr.get("lt"),
                         out=ctx.type_like(position, torch.bool)).out
    return dy.SelectOp(found, coords, ctx.full(fill, [size, rank], I64), out=ctx.type_like(coords)).out


def _sum_rows(ctx, x):
    rows = ctx.shape_of(x)[0]
    attrs = (ir.StringAttr.get("sum"), ir.DenseI64ArrayAttr.get([1]))
    return ctx.reshape(dy.ReduceOp(x, *attrs, out=ctx.type_like(x, shape=[rows])).out, [rows, 1])


def _row(ctx, values, rows):
    """The int64 constants `values` as a [rows, len(values)] tensor (every row equal)."""
    t = ir.RankedTensorType.get([1, len(values)], ir.IntegerType.get_signless(64))
    attr = ir.DenseElementsAttr.get(np.array([values], dtype=np.int64), type=t.element_type)
    return ctx.broadcast(dy.ConstantOp(attr, out=t).out, [rows, len(values)])


def _binary(ctx, name, a, b):
    return ctx.emit(name, a, b, out=ctx.type_like(a))
