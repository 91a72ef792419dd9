"""Scatters: index_put (and with it index_add/copy/fill,
max_unpool), put, scatter/scatter_add/scatter_reduce, index_reduce, masked_scatter, segment_reduce,
embedding_bag (forward), and the view scatters slice_scatter, diagonal_scatter, as_strided_scatter.

The data-dependent ones become `dynamo.index_put`, `dynamo.scatter` or `dynamo.masked_scatter`
(serial loops on the cpu target, torch calls on cuda: see lowering/rules/scatter.py), except a
scatter of one value at one index per slice (cross-entropy's backward), which is a select. The view scatters have static target
positions, so they need no loop: slice_scatter is a select between dest and a gather of src
whose per-position indices are constants; diagonal_scatter is one on the flattened (dim1, dim2)
plane; as_strided_scatter is an index_put with constant flat positions.
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import (HALF, compare, const, emit_like, gather_along, i64, inverse_permutation, iota, like, numel, permute, reduce,
                       select, slice_along, slice_box)
from .movement import storage_index

aten = torch.ops.aten
I64 = torch.int64
F32 = torch.float32


def _is_true(ctx, value):
    return compare(ctx, value, like(ctx, 0, value), "ne")


# ----------------------------------------------------------------------------- index_put, put


# ATen ops whose decomposition lands on index_put and whose eager kernel accumulates bf16/f16
# serially in the half type, as dynamo.index_put does (index_add and the embedding backward
# sum in float32 on some shapes: those stay eager for half types).
# (Names: the node's original_aten is not always the same OpOverload object as aten.<op>.)
_HALF_SERIAL_SOURCES = {"None", "aten.index_put.default", "aten._unsafe_index_put.default",
                        "aten._index_put_impl_.default", "aten._unsafe_masked_index_put_accumulate.default"}


@import_rule(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(ctx, node):
    """index_put (index tensors on some dims, None slicing the others) as one dynamo.index_put
    over dest with the indexed dims moved to the front."""
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape, dtype = ctx.shape_of(dest), ctx.dtype_of(dest)
    indices = list(a.indices) + [None] * (len(shape) - len(a.indices))
    values = ctx.cast(ctx.tensor(a.values), dtype)
    accumulate = bool(a.accumulate)
    if accumulate and dtype in HALF and str(node.meta.get("original_aten")) not in _HALF_SERIAL_SOURCES:
        raise Unsupported(f"half-precision accumulate from {node.meta.get('original_aten')}: "
                          "eager's kernel for it may sum in float32")
    masks = [i for i in indices if i is not None and i.meta["val"].dtype in (torch.bool, torch.uint8)]
    if masks:
        return _index_put_mask(ctx, dest, indices, values, accumulate)
    dims = [d for d, i in enumerate(indices) if i is not None]
    rest = [d for d in range(len(shape)) if d not in dims]
    b = list(torch.broadcast_shapes(*[static_shape(indices[d].meta["val"]) for d in dims]))
    if numel(b) and any(shape[d] == 0 for d in dims):
        raise Unsupported("indexing an empty dim (eager raises)")
    # values broadcast to x[indices]'s shape; adjacent indexed dims keep their place there.
    adjacent = dims == list(range(dims[0], dims[-1] + 1)) and dims[0] > 0
    lead = dims[0] if adjacent else 0
    v = ctx.broadcast(values, [shape[d] for d in rest[:lead]] + b + [shape[d] for d in rest[lead:]])
    nb = len(b)
    v = permute(ctx, v, list(range(lead, lead + nb)) + list(range(lead)) + list(range(lead + nb, len(ctx.shape_of(v)))))
    idx = [ctx.broadcast(ctx.cast(ctx.tensor(indices[d]), I64), b) for d in dims]
    perm = dims + rest
    moved = permute(ctx, dest, perm)
    out = dy.IndexPutOp(moved, v, idx, i64(accumulate), out=ctx.type_like(moved)).out
    return permute(ctx, out, inverse_permutation(perm))


def _index_put_mask(ctx, dest, indices, values, accumulate):
    """x[mask] = v with one boolean index over dims p..p+m-1 (the rest sliced whole). When v
    does not vary along the selected positions it is a select; when it does (one row per true
    position, mask leading), the rows go to the true positions in order: a masked_scatter."""
    shape = ctx.shape_of(dest)
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1 or given[0][1].meta["val"].dtype != torch.bool:
        raise Unsupported("a boolean index together with other indices")
    p, mask_node = given[0]
    mask = ctx.tensor(mask_node)
    m = len(ctx.shape_of(mask))
    after = shape[p + m:]
    full_mask = ctx.broadcast(ctx.reshape(mask, [1] * p + shape[p:p + m] + [1] * len(after)), shape)
    vshape = ctx.shape_of(values)
    rows = vshape[len(vshape) - len(after) - 1] if len(vshape) > len(after) else 1
    if rows == 1:  # the same update at every true position
        v = ctx.broadcast(values, shape[:p] + [1] + after)
        v = ctx.broadcast(ctx.reshape(v, shape[:p] + [1] * m + after), shape)
    elif p == 0:
        v = ctx.broadcast(values, [rows] + after)
        v = ctx.reshape(v, [numel([rows] + after)])
        v = dy.MaskedScatterOp(dest, full_mask, v, out=ctx.type_like(dest)).out
    else:
        raise Unsupported("boolean index after sliced dims with one value per true position")
    if accumulate:
        v = emit_like(ctx, "add", dest, v)
    return select(ctx, full_mask, v, dest)


@import_rule(aten.put.default)
def _put(ctx, node):
    """put: index_put on the flattened tensor."""
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape, dtype = ctx.shape_of(dest), ctx.dtype_of(dest)
    index = ctx.cast(ctx.tensor(a.index), I64)
    n = numel(ctx.shape_of(index))
    if n and not numel(shape):
        raise Unsupported("put into an empty tensor (eager raises)")
    flat = ctx.reshape(dest, [numel(shape)])
    src = ctx.reshape(ctx.cast(ctx.tensor(a.source), dtype), [n])
    out = dy.IndexPutOp(flat, src, [ctx.reshape(index, [n])], i64(bool(a.accumulate)),
                        out=ctx.type_like(flat)).out
    return ctx.reshape(out, shape)


# ----------------------------------------------------------------------------- scatter family

# scatter(..., reduce=) names -> scatter_reduce names
_SCATTER_REDUCE = {None: "assign", "add": "sum", "multiply": "prod"}


def _scatter(ctx, node, src_arg, reduce: str, include_self: bool):
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape, dtype = ctx.shape_of(dest), ctx.dtype_of(dest)
    index = ctx.cast(ctx.tensor(a.index), I64)
    ishape = ctx.shape_of(index)
    if isinstance(src_arg, torch.fx.Node):
        src = ctx.cast(ctx.tensor(src_arg), dtype)
    else:
        src = ctx.broadcast(ctx.scalar(src_arg, dtype), ishape)
    if reduce == "mean" and dtype == torch.bool:
        raise Unsupported("mean of bool")
    rank = len(shape)
    if rank == 0:  # 0-d: scatter along the one element
        dest, index, src = (v if ctx.shape_of(v) else ctx.reshape(v, [1]) for v in (dest, index, src))
    if len(ctx.shape_of(index)) != len(ctx.shape_of(dest)) or len(ctx.shape_of(src)) != len(ctx.shape_of(dest)):
        raise Unsupported("index/src rank differs from self's")
    dim = a.dim % max(rank, 1)
    if numel(ctx.shape_of(index)) and ctx.shape_of(dest)[dim] == 0:
        raise Unsupported("scatter into an empty dim (eager raises)")
    if reduce == "assign" and not isinstance(src_arg, torch.fx.Node) and _one_per_slice(ctx, dest, index, dim):
        return _select_hits(ctx, dest, index, ctx.scalar(src_arg, dtype), dim)
    if dtype in HALF and reduce in ("sum", "prod", "mean"):
        out = _half_scatter(ctx, dest, index, src, dim, reduce, include_self)
    else:
        out = _scatter_op(ctx, dest, index, src, dim, reduce, include_self)
    return ctx.reshape(out, shape) if rank == 0 else out


def _one_per_slice(ctx, dest, index, dim: int) -> bool:
    """Whether `index` writes exactly one position of each slice of dest along dim (its size 1
    there, dest's elsewhere; static shapes): cross-entropy's backward, one-hot rows."""
    shape, ishape = ctx.shape_of(dest), ctx.shape_of(index)
    return bool(shape) and dy.DYN not in shape and ishape[dim] == 1 and \
        all(i == s for d, (i, s) in enumerate(zip(ishape, shape)) if d != dim)


def _select_hits(ctx, dest, index, value, dim: int) -> ir.Value:
    """scatter(dest, dim, index, value) with one index per slice, as where(position along dim ==
    index, value, dest): elementwise, so it fuses with what reads it, where a scatter is a pass
    of its own over a full copy of dest (cross-entropy's backward scattered into a zero-filled
    [tokens, vocabulary] buffer). An index out of range selects nothing, where eager raises."""
    shape = ctx.shape_of(dest)
    hit = compare(ctx, iota(ctx, shape, dim), ctx.broadcast(index, shape), "eq")
    return select(ctx, hit, ctx.broadcast(value, shape), dest)


def _scatter_op(ctx, dest, index, src, dim, reduce, include_self):
    return dy.ScatterOp(dest, index, src, i64(dim), ir.StringAttr.get(reduce), i64(include_self),
                        out=ctx.type_like(dest)).out


def _half_scatter(ctx, dest, index, src, dim, reduce, include_self):
    """eager's CPU scatter kernel combines bf16/f16 sums and products in float32 and rounds once;
    its mean then divides that rounded sum by the count in the half type."""
    dtype = ctx.dtype_of(dest)
    wide = _scatter_op(ctx, ctx.cast(dest, F32), index, ctx.cast(src, F32), dim,
                       "sum" if reduce == "mean" else reduce, include_self)
    out = ctx.cast(wide, dtype)
    if reduce != "mean":
        return out
    shape = ctx.shape_of(dest)
    start = ctx.broadcast(ctx.scalar(1 if include_self else 0, F32), shape)
    ones = ctx.broadcast(ctx.scalar(1, F32), ctx.shape_of(src))
    count = ctx.cast(_scatter_op(ctx, start, index, ones, dim, "sum", True), dtype)
    one = ctx.broadcast(ctx.scalar(1, dtype), shape)
    count = select(ctx, _is_true(ctx, count), count, one)
    return emit_like(ctx, "div", out, count)


@import_rule(aten.scatter.src, aten.scatter.reduce)
def _scatter_src(ctx, node):
    a = bind(node)
    return _scatter(ctx, node, a.src, _SCATTER_REDUCE[a.get("reduce")], True)


@import_rule(aten.scatter.value, aten.scatter.value_reduce)
def _scatter_value(ctx, node):
    a = bind(node)
    return _scatter(ctx, node, a.value, _SCATTER_REDUCE[a.get("reduce")], True)


@import_rule(aten.scatter_add.default)
def _scatter_add(ctx, node):
    return _scatter(ctx, node, bind(node)["src"], "sum", True)


@import_rule(aten.scatter_reduce.two)
def _scatter_reduce(ctx, node):
    a = bind(node)
    return _scatter(ctx, node, a.src, a.reduce, bool(a.include_self))


@import_rule(aten.index_reduce.default)
def _index_reduce(ctx, node):
    """index_reduce along dim = a scatter whose index is the 1-d index spread over source's
    other dims (the per-target order, increasing position along dim, is eager's too)."""
    a = bind(node)
    dest, source = ctx.tensor(a.self), ctx.tensor(a.source)
    shape = ctx.shape_of(dest)
    if not shape:
        dest, source = ctx.reshape(dest, [1]), ctx.reshape(source, [1])
    sshape = ctx.shape_of(source)
    dim = a.dim % max(len(shape), 1)
    index = ctx.cast(ctx.tensor(a.index), I64)
    index = ctx.reshape(index, [1] * dim + [numel(ctx.shape_of(index))] + [1] * (len(sshape) - dim - 1))
    index = ctx.broadcast(index, sshape)
    if numel(sshape) and ctx.shape_of(dest)[dim] == 0:
        raise Unsupported("index_reduce into an empty dim (eager raises)")
    out = dy.ScatterOp(dest, index, ctx.cast(source, ctx.dtype_of(dest)), i64(dim),
                       ir.StringAttr.get(a.reduce), i64(bool(a.include_self)),
                       out=ctx.type_like(dest)).out
    return ctx.reshape(out, shape) if not shape else out


@import_rule(aten.masked_scatter.default)
def _masked_scatter(ctx, node):
    a = bind(node)
    shape = list(static_shape(ctx.out_meta(node)))
    dest = ctx.broadcast(ctx.tensor(a.self), shape)
    mask = ctx.broadcast(ctx.cast(ctx.tensor(a.mask), torch.bool), shape)
    source = ctx.tensor(a.source)
    n = numel(ctx.shape_of(source))
    if n == 0:
        if numel(shape):
            raise Unsupported("masked_scatter from an empty source")
        return dest
    source = ctx.reshape(ctx.cast(source, ctx.dtype_of(dest)), [n])
    return dy.MaskedScatterOp(dest, mask, source, out=ctx.type_like(dest)).out


# ----------------------------------------------------------------------------- view scatters


def _select_gathered(ctx, dest, src, dim, hit: np.ndarray, pos: np.ndarray, plane_dims):
    """where(hit, src gathered along dim at pos, dest): hit/pos are constants over the dest
    dims `plane_dims`, spread over the others."""
    shape = ctx.shape_of(dest)
    spread = [shape[d] if d in plane_dims else 1 for d in range(len(shape))]
    hit_t = ctx.broadcast(ctx.reshape(const(ctx, hit), spread), shape)
    pos_t = ctx.broadcast(ctx.reshape(const(ctx, pos), spread), shape)
    gathered = gather_along(ctx, src, pos_t, dim)
    return select(ctx, _is_true(ctx, hit_t), gathered, dest)


@import_rule(aten.slice_scatter.default)
def _slice_scatter(ctx, node):
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape = ctx.shape_of(dest)
    src = ctx.cast(ctx.tensor(a.src), ctx.dtype_of(dest))
    dim = a.dim % len(shape)
    n, count, step = shape[dim], ctx.shape_of(src)[dim], a.step
    start = a.start if a.start is not None else 0
    start = min(max(start + n if start < 0 else start, 0), n)
    if count == 0 or numel(shape) == 0:
        return dest
    k, r = np.divmod(np.arange(n) - start, step)
    hit = (np.arange(n) >= start) & (r == 0) & (k < count)
    return _select_gathered(ctx, dest, src, dim, hit, np.where(hit, k, 0), [dim])


@import_rule(aten.diagonal_scatter.default)
def _diagonal_scatter(ctx, node):
    """src (others..., L) goes to the diagonal of the (dim1, dim2) plane: move its last dim to
    dim1 and spread it along dim2, then gather along dim1 where the position is on the diagonal."""
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape = ctx.shape_of(dest)
    rank = len(shape)
    offset, d1, d2 = a.offset, a.dim1 % rank, a.dim2 % rank
    src = ctx.cast(ctx.tensor(a.src), ctx.dtype_of(dest))
    length = ctx.shape_of(src)[-1]
    if length == 0 or numel(shape) == 0:
        return dest
    others = [d for d in range(rank) if d not in (d1, d2)]
    x = ctx.reshape(src, ctx.shape_of(src) + [1])  # dims: others..., L, 1
    where = {d: i for i, d in enumerate(others)}
    where[d1], where[d2] = len(others), len(others) + 1
    x = permute(ctx, x, [where[d] for d in range(rank)])
    x = ctx.broadcast(x, [length if d == d1 else shape[d] for d in range(rank)])
    i, j = np.meshgrid(np.arange(shape[d1]), np.arange(shape[d2]), indexing="ij")
    hit = (j - i) == offset
    pos = np.where(hit, np.minimum(i, j), 0)
    lo, hi = sorted((d1, d2))
    if d1 > d2:
        hit, pos = hit.T, pos.T
    return _select_gathered(ctx, dest, x, d1, hit, pos, [lo, hi])


@import_rule(aten.as_strided_scatter.default)
def _as_strided_scatter(ctx, node):
    """self.clone(), with src copied into its strided view: the clone has the layout the op's
    result has (self's strides where self is dense, else contiguous), and the view addresses
    the clone's storage, so the element each view position lands on is a constant."""
    a = bind(node)
    dest = ctx.tensor(a.self)
    shape, out_val = ctx.shape_of(dest), node.meta["val"]
    size, stride = list(a.size), list(a.stride)
    offset = out_val.storage_offset() if a.storage_offset is None else a.storage_offset
    n, total = numel(size), numel(shape)
    if n == 0:
        return dest
    # Positions off the clone's elements (gaps of a non-dense layout) change nothing it shows.
    at = storage_index(out_val, size, stride, offset).reshape(-1)
    src = ctx.reshape(ctx.cast(ctx.tensor(a.src), ctx.dtype_of(dest)), [n])
    if int(at.min()) < 0:
        kept = np.flatnonzero(at >= 0)
        if kept.size == 0:
            return dest
        src, at = dy.GatherOp(src, const(ctx, kept), out=ctx.type_like(src, shape=[kept.size])).out, at[kept]
    flat = ctx.reshape(dest, [total])
    out = dy.IndexPutOp(flat, src, [const(ctx, at)], i64(0), out=ctx.type_like(flat)).out
    return ctx.reshape(out, shape)


# ----------------------------------------------------------------------------- segment_reduce

# segment_reduce's reduce -> (dynamo.scatter's reduce, the start value when `initial` is not given)
_SEGMENT = {"max": ("amax", -np.inf), "min": ("amin", np.inf), "sum": ("sum", 0), "prod": ("prod", 1),
            "mean": ("sum", 0)}


def _segment_ids(ctx, ends, start, n):
    """The segment of each of the n positions: how many segment ends are <= it (segments are
    [end_{j-1}, end_j) from `start`); positions outside every segment get id L (a spare row)."""
    count = ctx.shape_of(ends)[0]
    pos = const(ctx, np.arange(n).reshape(n, 1))
    grid = [n, count]
    past = compare(ctx, ctx.broadcast(pos, grid), ctx.broadcast(ctx.reshape(ends, [1, count]), grid), "ge")
    ids = reduce(ctx, ctx.cast(past, I64), "sum", [1])
    if start is not None:
        before = compare(ctx, ctx.reshape(pos, [n]), ctx.broadcast(ctx.reshape(start, []), [n]), "lt")
        ids = select(ctx, before, ctx.broadcast(ctx.scalar(count, I64), [n]), ids)
    return ids


def _segments(ctx, a):
    """(ends, start, lengths) of the segments, i64 [L], [1] or None, [L]."""
    if a.lengths is not None:
        lengths = ctx.cast(ctx.tensor(a.lengths), I64)
        if len(ctx.shape_of(lengths)) != 1:
            raise Unsupported("segment_reduce with multi-dim lengths")
        count = ctx.shape_of(lengths)[0]
        tri = const(ctx, np.tri(count, dtype=np.int64))  # ends = running sum of lengths
        spread = ctx.broadcast(ctx.reshape(lengths, [1, count]), [count, count])
        return reduce(ctx, emit_like(ctx, "mul", spread, tri), "sum", [1]), None, lengths
    if a.offsets is not None:
        offsets = ctx.cast(ctx.tensor(a.offsets), I64)
        if len(ctx.shape_of(offsets)) != 1:
            raise Unsupported("segment_reduce with multi-dim offsets")
        count = ctx.shape_of(offsets)[0] - 1
        ends, begins = slice_along(ctx, offsets, 0, 1, count), slice_along(ctx, offsets, 0, 0, count)
        return ends, slice_along(ctx, offsets, 0, 0, 1), emit_like(ctx, "sub", ends, begins)
    raise Unsupported("segment_reduce without lengths or offsets")


@import_rule(aten.segment_reduce.default)
def _segment_reduce(ctx, node):
    """Segments along axis 0 given by 1-d lengths or offsets: a dynamo.scatter of the data into
    one row per segment (plus a spare row for data outside every segment) that starts from
    `initial`; mean then divides by the length (an empty one stays `initial`, or NaN)."""
    a = bind(node)
    data = ctx.tensor(a.data)
    shape, dtype = ctx.shape_of(data), ctx.dtype_of(data)
    if not shape or a.axis % len(shape) != 0 or not dtype.is_floating_point:
        raise Unsupported("segment_reduce: only float data reduced along axis 0")
    reduce = a.reduce  # (eager combines bf16/f16 serially in the half type too, as dynamo.scatter)
    ends, start, lengths = _segments(ctx, a)
    count = ctx.shape_of(ends)[0]
    kind, default = _SEGMENT[reduce]
    initial = a.initial if a.initial is not None else default
    n, rest = shape[0], shape[1:]
    ids = ctx.broadcast(ctx.reshape(_segment_ids(ctx, ends, start, n), [n] + [1] * len(rest)), shape)
    dest = ctx.broadcast(ctx.scalar(initial, dtype), [count + 1] + rest)
    out = _scatter_op(ctx, dest, ids, data, 0, kind, True)
    out = slice_box(ctx, out, [0] * len(shape), [count] + rest)
    if reduce != "mean":
        return out
    lengths = ctx.broadcast(ctx.reshape(ctx.cast(lengths, dtype), [count] + [1] * len(rest)), ctx.shape_of(out))
    empty = compare(ctx, lengths, ctx.broadcast(ctx.scalar(0, dtype), ctx.shape_of(out)), "le")
    mean = emit_like(ctx, "div", out, lengths)
    fill = ctx.broadcast(ctx.scalar(float("nan"), dtype), ctx.shape_of(out)) if a.initial is None else out
    return select(ctx, empty, fill, mean)


# ----------------------------------------------------------------------------- embedding_bag

_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


@import_rule(aten._embedding_bag_forward_only.default, aten._embedding_bag.default)
def _embedding_bag(ctx, node):
    """Bags of rows: gather the rows (times per_sample_weights), then a dynamo.scatter into one
    row per bag (bag ids as in segment_reduce; padding_idx entries go to a spare row). mean
    divides by the bag's size; empty bags are 0. Only the output itself is produced (offset2bag,
    bag_size and max_indices are left to eager where a graph uses them)."""
    a = bind(node)
    weight, indices, offsets = ctx.tensor(a.weight), ctx.tensor(a.indices), ctx.tensor(a.offsets)
    mode, out_dtype = _BAG_MODES[a.mode], ctx.dtype_of(weight)
    dtype = F32 if out_dtype in HALF else out_dtype  # eager sums half bags in float32, rounding once
    weight = ctx.cast(weight, dtype)
    (rows_in, dim), (n,), (n_off,) = ctx.shape_of(weight), ctx.shape_of(indices), ctx.shape_of(offsets)
    bags = n_off - 1 if a.include_last_offset else n_off
    if not n or not bags or not rows_in:
        raise Unsupported("embedding_bag with no indices, bags or rows")
    if a.include_last_offset and mode != "sum":
        # eager's max bag and mean divisor then run to the end of the indices, past the last offset
        raise Unsupported(f"embedding_bag {mode} with include_last_offset")
    idx = ctx.cast(indices, I64)
    wrapped = emit_like(ctx, "rem", idx, ctx.broadcast(ctx.scalar(rows_in, I64), [n]))
    rows = dy.GatherOp(weight, wrapped, out=ctx.type_like(weight, shape=[n, dim])).out
    if a.per_sample_weights is not None:
        psw = ctx.broadcast(ctx.reshape(ctx.cast(ctx.tensor(a.per_sample_weights), dtype), [n, 1]), [n, dim])
        rows = emit_like(ctx, "mul", rows, psw)
    offsets = ctx.cast(offsets, I64)
    ends = slice_along(ctx, offsets, 0, 1, n_off - 1) if n_off > 1 and (bags > 1 or a.include_last_offset) else None
    if ends is not None and not a.include_last_offset:
        ends = slice_along(ctx, ends, 0, 0, bags - 1) if bags > 1 else None
    ids = _segment_ids(ctx, ends, None, n) if ends is not None else ctx.full(0, [n], I64)
    pad = a.padding_idx
    if pad is not None and pad >= 0:
        skip = compare(ctx, idx, ctx.broadcast(ctx.scalar(pad, I64), [n]), "eq")
        ids = select(ctx, skip, ctx.broadcast(ctx.scalar(bags, I64), [n]), ids)
    spread = ctx.broadcast(ctx.reshape(ids, [n, 1]), [n, dim])
    start = ctx.broadcast(ctx.scalar(-np.inf if mode == "max" else 0, dtype), [bags + 1, dim])
    out = _scatter_op(ctx, start, spread, rows, 0, "amax" if mode == "max" else "sum", True)
    out = slice_box(ctx, out, [0, 0], [bags, dim])
    if mode != "sum":
        ones = ctx.broadcast(ctx.scalar(1, dtype), [n])
        size = _scatter_op(ctx, ctx.broadcast(ctx.scalar(0, dtype), [bags + 1]), ids, ones, 0, "sum", True)
        size = ctx.broadcast(ctx.reshape(slice_along(ctx, size, 0, 0, bags), [bags, 1]), [bags, dim])
        empty = compare(ctx, size, ctx.broadcast(ctx.scalar(0, dtype), [bags, dim]), "eq")
        if mode == "mean":
            out = emit_like(ctx, "div", out, size)
        out = select(ctx, empty, ctx.broadcast(ctx.scalar(0, dtype), [bags, dim]), out)
    return ctx.cast(out, out_dtype), None, None, None
