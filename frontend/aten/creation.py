"""Tensors made from nothing: fills, scalar tensors, aranges."""

import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import compute_dtype, i64

aten = torch.ops.aten

# Fill ops with a fixed value (empty ones are zero-filled: any value is theirs).
FIXED_FILL = {aten.zeros: 0, aten.zeros_like: 0, aten.new_zeros: 0, aten.ones: 1, aten.ones_like: 1,
              aten.new_ones: 1, aten.empty: 0, aten.empty_like: 0, aten.new_empty: 0, aten.empty_strided: 0,
              aten.empty_permuted: 0, aten.new_empty_strided: 0}


@import_rule(aten.full, aten.full_like, aten.zeros, aten.ones, aten.zeros_like, aten.ones_like,
             aten.empty.memory_format, aten.empty_like, aten.new_zeros, aten.new_ones, aten.new_full,
             aten.new_empty, aten.scalar_tensor, aten.empty_strided, aten.empty_permuted, aten.new_empty_strided)
def _fill(ctx, node):
    val = ctx.out_meta(node)
    value = FIXED_FILL.get(node.target.overloadpacket)
    if value is None:  # full(size, v), full_like(x, v), new_full(x, size, v), scalar_tensor(v)
        a = bind(node)
        value = a.s if node.target.overloadpacket is aten.scalar_tensor else a.fill_value
    if not isinstance(value, (int, float, bool)):
        raise Unsupported("fill value is not a Python number")
    return ctx.full(value, val.shape, val.dtype)  # SymInt sizes make a dynamic fill


# Accumulation type of torch's CPU arange kernel (start + step * i is computed in it).
ARANGE_ACC = {torch.float32: torch.float64, torch.float64: torch.float64}


@import_rule(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(ctx, node):
    """The length comes from torch's own meta (its ceil((end - start) / step) in double); the
    values are start + step * i computed in the kernel's accumulation type and rounded."""
    a = bind(node)
    val = ctx.out_meta(node)
    if val.dtype in (torch.uint8, torch.bool):
        raise Unsupported(f"arange of {val.dtype}")
    acc = ARANGE_ACC.get(val.dtype, compute_dtype(val.dtype))
    zero = ctx.scalar(0, acc)
    start, step = ctx.scalar(a.get("start", 0), acc), ctx.scalar(a.get("step", 1), acc)
    # A symbolic length (arange(0, s0)) comes with a fill of that length to read it from.
    like = [ctx.full(0, list(val.shape), acc)] if any(isinstance(s, torch.SymInt) for s in val.shape) else []
    values = dy.IotaOp(start, step, like, i64(0), out=ctx.type_like(zero, acc, list(static_shape(val)))).out
    return ctx.cast(values, val.dtype)
