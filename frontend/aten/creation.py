"""Tensors made from nothing: fills, scalar tensors, aranges."""

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..registry import Unsupported, import_rule

aten = torch.ops.aten


@import_rule(aten.full, aten.full_like, aten.zeros, aten.ones, aten.zeros_like, aten.ones_like,
             aten.empty.memory_format, aten.empty_like, aten.new_zeros, aten.new_ones, aten.new_full,
             aten.new_empty, aten.scalar_tensor, aten.empty_strided, aten.empty_permuted, aten.new_empty_strided)
def _fill(ctx, node):
    val = ctx.out_meta(node)
    packet = node.target.overloadpacket
    value = {aten.zeros: 0, aten.zeros_like: 0, aten.new_zeros: 0, aten.ones: 1, aten.ones_like: 1,
             aten.new_ones: 1, aten.empty: 0, aten.empty_like: 0, aten.new_empty: 0, aten.empty_strided: 0,
             aten.empty_permuted: 0, aten.new_empty_strided: 0}.get(packet)
    if value is None:  # full(size, v), full_like(x, v), new_full(x, size, v), scalar_tensor(v)
        value = node.args[0] if packet is aten.scalar_tensor else node.args[-1] if packet is not aten.new_full else node.args[2]
    if not isinstance(value, (int, float, bool)):
        raise Unsupported("fill value is not a Python number")
    return ctx.full(value, val.shape, val.dtype)  # SymInt sizes make a dynamic fill


@import_rule(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(ctx, node):
    val = ctx.out_meta(node)
    args = list(node.args)
    start, step = (0, 1) if node.target is aten.arange.default else (args[0], args[2] if len(args) > 2 else 1)
    if val.dtype.is_floating_point:
        raise Unsupported("float arange (rounding of the length is torch's)")
    one = lambda v: ctx.scalar(v, val.dtype)
    dim = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
    return dy.IotaOp(one(start), one(step), dim, out=ctx.out_type(node)).out
