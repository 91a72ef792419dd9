"""Constants and iota."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import convert, is_float
from .common import PARALLEL, empty, generic, identity, ranked, loop_index


@register_lowering(dy.ConstantOp)
def _lower_constant(ctx, op):
    return arith.constant(op.out.type, op.value)


@register_lowering(dy.IotaOp)
def _lower_iota(ctx, op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    elem = out.element_type
    start, step = tensor.extract(op.start, []), tensor.extract(op.step, [])

    def body(_):
        i = arith.index_cast(ir.IntegerType.get_signless(64), loop_index(dim))
        i = convert(i, elem)
        scaled = arith.mulf(i, step) if is_float(elem) else arith.muli(i, step)
        return [arith.addf(scaled, start) if is_float(elem) else arith.addi(scaled, start)]

    like = op.like[0] if len(op.like) else None
    return generic([], [empty(out, like)], [identity(out.rank)], [PARALLEL] * out.rank, body)[0]
