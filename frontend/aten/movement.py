"""Views and data movement: reshape, permute, transpose, expand, slice, select, cat, split, pad,
copy, and (as one gather with a constant index) flip, roll, diagonal, repeat, as_strided, ...

Functionalized graphs give us value semantics, so a view is a reshape/slice/permute of a value.
A pure data-movement op with static shapes picks, for every output element, one input element.
Which one does not depend on the data, so the rule for the ops in MOVEMENT_OPS runs the op
itself on `arange(numel)` (real tensors, at import time) and gets the source index of every
output element; the result is `dynamo.gather` of the flattened input with that constant index,
with ATen's exact semantics. as_strided, which reads its input's storage rather than its value,
has its own rule (_as_strided).
"""

import numpy as np
import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.utils._python_dispatch import _disable_current_modes
from torch_mlir import ir
from torch_mlir.dialects import arith

from ...dialects import dynamo as dy
from ..importer import DYN, fake_value, static_shape
from ..registry import Unsupported, import_rule
from .args import bind, norm_dim
from .builders import const, i64, i64s, slice_box

aten = torch.ops.aten


@import_rule(aten.view, aten._unsafe_view, aten.reshape, aten.unsqueeze, aten.squeeze, aten.flatten,
             aten.view_copy, aten.unflatten)
def _reshape(ctx, node):
    return ctx.reshape(ctx.tensor(bind(node).self), ctx.out_meta(node).shape)


@import_rule(aten.permute, aten.permute_copy)
def _permute(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    perm = [norm_dim(d, len(ctx.shape_of(x))) for d in a.dims]
    return dy.PermuteOp(x, perm=i64s(perm), out=ctx.out_type(node)).out


@import_rule(aten.t, aten.transpose, aten.numpy_T)
def _transpose(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    rank = len(ctx.shape_of(x))
    perm = list(range(rank))
    if "dim0" in a:  # transpose.int; t and numpy_T swap the first and last dims
        d0, d1 = norm_dim(a.dim0, rank), norm_dim(a.dim1, rank)
    else:
        d0, d1 = 0, max(rank - 1, 0)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return dy.PermuteOp(x, perm=i64s(perm), out=ctx.out_type(node)).out


@import_rule(aten.expand, aten.broadcast_to, aten.expand_as)
def _expand(ctx, node):
    return ctx.broadcast(ctx.tensor(bind(node).self), ctx.out_meta(node).shape)


def _strided_slice(ctx, node, x, dim: int, start: int, step: int):
    """The slice of x from `start` along dim, every `step`-th element, sized as node's result."""
    rank = len(ctx.shape_of(x))
    starts, steps = [0] * rank, [1] * rank
    starts[dim], steps[dim] = start, step
    return slice_box(ctx, x, starts, static_shape(ctx.out_meta(node)), steps)


@import_rule(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice_tensor(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    shape = ctx.shape_of(x)
    dim = norm_dim(a.dim, len(shape))
    start, step = 0 if a.start is None else a.start, a.step
    if not isinstance(step, int):
        raise Unsupported("symbolic slice step")
    if shape[dim] == DYN or not isinstance(start, int) or static_shape(ctx.out_meta(node))[dim] == DYN:
        return _slice_symbolic(ctx, node, x, dim, fake_value(a.start), fake_value(a.end), step)
    start = max(0, min(start + shape[dim] if start < 0 else start, shape[dim]))
    return _strided_slice(ctx, node, x, dim, start, step)


# torch passes sys.maxsize for an open end (x[k:]): a bound this large is the dim's end.
OPEN_END = 1 << 62


def _slice_symbolic(ctx, node, x, dim: int, start, end, step: int):
    n = fake_value(node.args[0]).shape[dim]
    return slice_symbolic(ctx, x, dim, start, end, step, n, ctx.out_meta(node).shape)


def slice_symbolic(ctx, x, dim: int, start, end, step: int, n, out_shape) -> ir.Value:
    """x[start:end:step] along dim (bounds: ints, SymInts or None; n: the dim's size; out_shape:
    torch's result shape) where a bound or size is symbolic. The offset and the result's size
    become index values (dynamo.slice's run-time bounds), normalized with Python's slicing rules:
    on the expressions where the symbols' ranges decide a bound's sign and clamping, else at
    run time (`_run_time_bound`). Never a guess."""
    lo, hi = _known_bound(0 if start is None else start, n), _known_bound(OPEN_END if end is None else end, n)
    rank = len(ctx.shape_of(x))
    starts, steps, offsets = [0] * rank, [1] * rank, []
    steps[dim], starts[dim] = step, _constant(lo)
    out_type = ctx.type_like(x, shape=[DYN if isinstance(s, torch.SymInt) else s for s in out_shape])
    if starts[dim] is not None and step == 1 and ctx.shape_of(x)[dim] == DYN and statically_known_true(hi == n):
        # x[k:] of a `?` dim: the lowering reads the size off the operand, no size values
        return dy.SliceOp(x, i64s(starts), i64s(steps), out=out_type).out
    lo_value = ctx.sizes.index(lo) if lo is not None else _run_time_bound(ctx, start, n)
    if starts[dim] is None:
        starts[dim] = DYN
        offsets.append(lo_value)
    sizes = []  # one per `?` result dim: the sliced one's computed here, the others' torch's
    for d, size in enumerate(out_shape):
        if isinstance(size, torch.SymInt):
            sizes.append(_slice_length(ctx, lo, hi, lo_value, end, n, step) if d == dim else ctx.sizes.index(size))
    return dy.SliceOp(x, i64s(starts), i64s(steps), offsets, sizes, out=out_type).out


def _constant(size) -> int | None:
    """A size's value where it is one number (an int, or a SymInt whose expression is)."""
    if isinstance(size, torch.SymInt):
        return int(size.node.expr) if size.node.expr.is_Integer else None
    return size


def _known_bound(bound, n):
    """A slice bound normalized as Python does against size n (a negative bound counts from the
    end, then it is clamped to [0, n]), as an int or SymInt, where the symbols' value ranges
    decide each step for every size the graph serves; None where only run time can."""
    if isinstance(bound, int) and bound >= OPEN_END:
        return n
    if statically_known_true(bound < 0):
        bound = bound + n
    elif not statically_known_true(bound >= 0):
        return None
    if statically_known_true(bound >= n):
        return n
    if statically_known_true(bound <= 0):
        return 0
    return bound if statically_known_true(bound >= 0) and statically_known_true(bound <= n) else None


def _run_time_bound(ctx, bound, n) -> ir.Value:
    """Python's normalization of a slice bound whose sign the symbols' ranges leave open, on
    index values at run time: bound + n where bound < 0, then clamped to [0, n]."""
    value, size, zero = ctx.sizes.index(bound), ctx.sizes.index(n), ctx.sizes.index(0)
    negative = arith.cmpi(arith.CmpIPredicate.slt, value, zero)
    value = arith.select(negative, arith.addi(value, size), value)
    return arith.maxsi(arith.minsi(value, size), zero)


def _slice_length(ctx, lo, hi, lo_value, end, n, step: int) -> ir.Value:
    """The element count of lo:hi:step for normalized bounds, ceil(max(hi - lo, 0) / step): on
    the expressions where they are known and ordered, else at run time."""
    if lo is not None and hi is not None and statically_known_true(hi >= lo):
        return ctx.sizes.index((hi - lo + step - 1) // step)
    hi_value = ctx.sizes.index(hi) if hi is not None else _run_time_bound(ctx, end, n)
    length = arith.maxsi(arith.subi(hi_value, lo_value), ctx.sizes.index(0))
    if step == 1:
        return length
    return arith.divsi(arith.addi(length, ctx.sizes.index(step - 1)), ctx.sizes.index(step))


@import_rule(aten.select.int, aten.select_copy.int)
def _select(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    shape = ctx.shape_of(x)
    dim = norm_dim(a.dim, len(shape))
    if shape[dim] == DYN:
        raise Unsupported("select on a dynamic dim")
    index = a.index + shape[dim] if a.index < 0 else a.index
    starts = [0] * len(shape)
    starts[dim] = index
    sliced = slice_box(ctx, x, starts, shape[:dim] + [1] + shape[dim + 1:])
    return ctx.reshape(sliced, ctx.out_meta(node).shape)


@import_rule(aten.cat)
def _cat(ctx, node):
    a = bind(node)
    out = ctx.out_meta(node)
    tensors = [t for t in a.tensors if static_shape(t.meta["val"]) != (0,)]
    dim = norm_dim(a.dim, out.dim())
    values = [ctx.cast(ctx.tensor(t), out.dtype) for t in tensors]
    result = values[0]
    for v in values[1:]:  # a chain of binary concats
        shape, extra = ctx.shape_of(result), ctx.shape_of(v)[dim]
        shape[dim] = DYN if DYN in (shape[dim], extra) else shape[dim] + extra
        result = dy.ConcatOp(result, v, i64(dim), out=ctx.type_like(result, shape=shape)).out
    return result


@import_rule(aten.split_with_sizes, aten.split.Tensor)
def _split(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    rank = len(ctx.shape_of(x))
    dim = norm_dim(a.dim, rank)
    if ctx.shape_of(x)[dim] == DYN:  # the pieces' offsets would be symbolic
        raise Unsupported("split along a dynamic dim")
    parts, start = [], 0
    for i, piece in enumerate(ctx.out_meta(node)):
        starts = [0] * rank
        starts[dim] = start
        parts.append(slice_box(ctx, x, starts, static_shape(piece)))
        start += piece.shape[dim]
    return tuple(parts)


@import_rule(aten.constant_pad_nd)
def _pad(ctx, node):
    a = bind(node)
    x = ctx.tensor(a.self)
    rank = len(ctx.shape_of(x))
    low, high = [0] * rank, [0] * rank
    if not all(isinstance(p, int) for p in a.pad):  # PadOp's amounts are attributes
        return _pad_by_concat(ctx, a, x)
    for i in range(len(a.pad) // 2):  # pads list the last dim first
        low[rank - 1 - i], high[rank - 1 - i] = a.pad[2 * i], a.pad[2 * i + 1]
    if min(low + high) < 0:
        raise Unsupported("negative padding")
    fill = ctx.scalar(a.value, ctx.dtype_of(x))
    return dy.PadOp(x, fill, i64s(low), i64s(high), out=ctx.out_type(node)).out


def _pad_by_concat(ctx, a, x):
    """constant_pad_nd by symbolic amounts (a mask padded to a multiple of 8 along a symbolic
    length): fills of the pads' sizes concatenated around x, dim by dim."""
    shape = list(a.self.meta["val"].shape)
    amounts = [p.meta["val"] if isinstance(p, torch.fx.Node) else p for p in a.pad]
    if any(isinstance(p, int) and p < 0 for p in amounts):
        raise Unsupported("negative padding")
    result, dtype, rank = x, ctx.dtype_of(x), len(shape)
    for i in range(len(amounts) // 2):  # pads list the last dim first
        dim = rank - 1 - i
        for before, amount in ((True, amounts[2 * i]), (False, amounts[2 * i + 1])):
            if isinstance(amount, int) and amount == 0:
                continue
            fill = ctx.full(a.value, shape[:dim] + [amount] + shape[dim + 1:], dtype)
            out = ctx.shape_of(result)
            out[dim] = DYN
            pair = (fill, result) if before else (result, fill)
            result = dy.ConcatOp(*pair, i64(dim), out=ctx.type_like(result, shape=out)).out
            shape[dim] = shape[dim] + amount
    return result


@import_rule(aten.copy)
def _copy(ctx, node):
    """copy(dst, src): the functional form of dst.copy_(src) (what `param.copy_(new)` becomes):
    src cast and broadcast to dst's shape."""
    val, src = ctx.out_meta(node), bind(node).src
    return ctx.broadcast(ctx.cast(ctx.tensor(src), val.dtype), static_shape(val))


@import_rule(torch.ops.prims.broadcast_in_dim.default)
def _broadcast_in_dim(ctx, node):
    """prims.broadcast_in_dim(a, shape, dims): a's dim i becomes result dim dims[i]."""
    a = bind(node)
    x = ctx.tensor(a.a)
    shape = list(static_shape(ctx.out_meta(node)))
    placed = [1] * len(shape)
    for i, d in enumerate(a.broadcast_dimensions):
        placed[d] = ctx.shape_of(x)[i]
    return ctx.broadcast(ctx.reshape(x, placed), shape)


# ----------------------------------------------------------------------------- as one constant gather

# Index constants beyond this many elements would bloat the IR; such nodes run eagerly.
MAX_INDEX_ELEMENTS = 1 << 20

# By name: an op missing from this torch build is skipped, not an import error.
MOVEMENT_NAMES = (
    "flip", "roll", "diagonal", "diagonal_copy", "unfold", "unfold_copy", "repeat", "narrow",
    "narrow_copy", "movedim", "rot90", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "tile",
    "swapaxes", "swapdims", "moveaxis", "squeeze_copy", "unsqueeze_copy", "transpose_copy", "t_copy",
    "expand_copy", "alias_copy", "detach_copy", "unbind", "unbind_copy", "split_copy", "tensor_split",
    "chunk", "hsplit", "vsplit", "dsplit", "unsafe_split", "unsafe_chunk", "fliplr", "flipud", "ravel",
    "im2col", "split_with_sizes_copy", "unsafe_split_with_sizes",
)
MOVEMENT_OPS = [getattr(aten, n) for n in MOVEMENT_NAMES if hasattr(aten, n)]
MOVEMENT_OPS += [aten.split.sizes, aten.repeat_interleave.self_int]


def _real_source(arg) -> object:
    """A real stand-in for an FX argument: Python values pass through (a second tensor
    argument is not a data-movement op's)."""
    if isinstance(arg, (list, tuple)):
        return type(arg)(_real_source(a) for a in arg)
    val = fake_value(arg)
    if not isinstance(val, torch.Tensor):
        return val
    raise Unsupported("more than one tensor argument")


# Ops that address the input's storage rather than its value: the contiguous stand-in gives their
# index map only for an input whose storage is laid out like its value. The others (diagonal of
# a column-major LU factor, ...) read by value, whatever the strides (a region's inputs are
# made contiguous before the call).
_READS_STORAGE = ("as_strided", "as_strided_copy")


def _index_map(node, x_val: torch.Tensor):
    """Run node.target on a real index tensor shaped like x; returns its output(s)."""
    shape = static_shape(x_val)
    numel = int(np.prod(shape)) if shape else 1
    reads_storage = getattr(node.target, "__name__", "").split(".")[0] in _READS_STORAGE
    if reads_storage and (not x_val.is_contiguous() or x_val.storage_offset() != 0):
        raise Unsupported("strided or offset input (storage layout differs from the value's)")
    _, *rest = node.args  # the op's own arguments, passed on as the call gave them
    args = [_real_source(a) for a in rest]
    kwargs = {k: _real_source(v) for k, v in node.kwargs.items()}
    try:
        # The compile runs under FakeTensorMode; the index map needs real tensors.
        with _disable_current_modes():
            source = torch.arange(numel, dtype=torch.int64).reshape(shape)
            out = node.target(source, *args, **kwargs)
            is_list = isinstance(out, (list, tuple))
            arrays = [o.contiguous().numpy().copy() for o in (out if is_list else [out])]
    except Exception as e:
        raise Unsupported(f"index map failed: {type(e).__name__}: {e}") from None
    return arrays, is_list, numel


def gather_const(ctx, x, index: np.ndarray, out_type):
    """out[i...] = flat(x)[index[i...]] for a constant int64 index array."""
    shape = list(index.shape)
    if index.size == 0:
        return ctx.full(0, shape, ctx.dtype_of(x))
    if index.size > MAX_INDEX_ELEMENTS:
        raise Unsupported(f"index of {index.size} elements is too large to inline")
    numel = int(np.prod(ctx.shape_of(x))) if ctx.shape_of(x) else 1
    if int(index.min()) < 0 or int(index.max()) >= numel:
        raise Unsupported("index map reads outside the input's elements")
    flat = ctx.reshape(x, [numel])
    return dy.GatherOp(flat, const(ctx, index), out=out_type).out


@import_rule(*MOVEMENT_OPS)
def _movement(ctx, node):
    x_node = bind(node).self
    arrays, is_list, _ = _index_map(node, fake_value(x_node))
    x = ctx.tensor(x_node)
    values = [gather_const(ctx, x, a, ctx.out_type(node, i if is_list else None)) for i, a in enumerate(arrays)]
    return tuple(values) if is_list else values[0]


@import_rule(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(ctx, node):
    """as_strided(x, size, stride, offset) picks elements of x's storage: x is the tensor that
    owns it (frontend/storage_views.py rewrote views of it to x), with the strides and storage
    offset x really has (a graph input: channels-last, a slice of a larger tensor, ...).
    Storage positions holding none of x's elements stay eager, which reads the real storage."""
    a = bind(node)
    x_val = fake_value(a.self)
    offset = a.storage_offset if a.storage_offset is not None else x_val.storage_offset()
    index = storage_index(x_val, list(a.size), list(a.stride), offset)
    if index.size and int(index.min()) < 0:
        raise Unsupported("as_strided reads storage outside its input's elements")
    return gather_const(ctx, ctx.tensor(a.self), index, ctx.out_type(node))


def _positions(size, stride, offset) -> np.ndarray:
    """The storage position of every element of a strided view, shaped like the view."""
    pos = np.full(size, offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape([n if e == d else 1 for e in range(len(size))])
    return pos


def storage_index(holder: torch.Tensor, size, stride, offset) -> np.ndarray:
    """For each element of the view (size, stride, offset) of `holder`'s storage: the flat
    (row-major) index of the element of `holder` stored there, -1 where none is. (Where
    `holder` overlaps itself, expand's way, a shared position holds equal values: any will do.)"""
    held = _positions(list(static_shape(holder)), list(holder.stride()), holder.storage_offset())
    wanted = _positions(size, stride, offset)
    if wanted.size == 0:
        return wanted
    extent = max(int(wanted.max()), int(held.max()) if held.size else 0) + 1
    if extent > 4 * MAX_INDEX_ELEMENTS:
        raise Unsupported("as_strided over a storage too large to map")
    storage = np.full(extent, -1, dtype=np.int64)
    storage[held.reshape(-1)] = np.arange(held.size, dtype=np.int64)
    return storage[wanted]
