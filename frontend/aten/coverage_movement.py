"""Data-movement ops as one gather with a constant index: flip, roll, diagonal, as_strided, ...

A pure data-movement op with static shapes picks, for every output element, one input element.
Which one does not depend on the data, so the import rule runs the op itself on
`arange(numel)` (real tensors, at import time) and gets the source index of every output
element; the result is `dynamo.gather` of the flattened input with that constant index.
One rule covers every op in the table below, with ATen's exact semantics. as_strided, which
reads its input's storage rather than its value, has its own rule (_as_strided).
"""

import numpy as np
import torch
from torch_mlir import ir

from torch.utils._python_dispatch import _disable_current_modes

from ...dialects import dynamo as dy
from ..importer import fake_value, static_shape
from ..registry import Unsupported, import_rule

aten = torch.ops.aten

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
    args = [_real_source(a) for a in node.args[1:]]
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


def gather_const(ctx, x, index: np.ndarray, out_type: ir.RankedTensorType):
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
    itype = ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(64))
    attr = ir.DenseElementsAttr.get(np.ascontiguousarray(index, dtype=np.int64), type=itype.element_type, shape=shape)
    idx = dy.ConstantOp(attr, out=itype).out
    return dy.GatherOp(flat, idx, out=out_type).out


@import_rule(*MOVEMENT_OPS)
def _movement(ctx, node):
    x_node = node.args[0]
    x_val = fake_value(x_node)
    x = ctx.tensor(x_node)
    arrays, is_list, _ = _index_map(node, x_val)
    values = [gather_const(ctx, x, a, ctx.out_type(node, i if is_list else None)) for i, a in enumerate(arrays)]
    return tuple(values) if is_list else values[0]


@import_rule(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(ctx, node):
    """as_strided(x, size, stride, offset) picks elements of x's storage: x is the tensor that
    owns it (frontend/storage_views.py rewrote views of it to x), with the strides and storage
    offset x really has (a graph input: channels-last, a slice of a larger tensor, ...).
    Storage positions holding none of x's elements stay eager, which reads the real storage."""
    x_node, size, stride = node.args[:3]
    x_val = fake_value(x_node)
    offset = node.args[3] if len(node.args) > 3 and node.args[3] is not None else x_val.storage_offset()
    index = storage_index(x_val, list(size), list(stride), offset)
    if index.size and int(index.min()) < 0:
        raise Unsupported("as_strided reads storage outside its input's elements")
    return gather_const(ctx, ctx.tensor(x_node), index, ctx.out_type(node))


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


@import_rule(aten.copy)
def _copy(ctx, node):
    """copy(dst, src): functional form of dst.copy_(src): src cast and broadcast to dst's shape."""
    val = ctx.out_meta(node)
    src = ctx.cast(ctx.tensor(node.args[1]), val.dtype)
    return ctx.broadcast(src, static_shape(val))
