"""Size ops, which read sizes off an operand at run time: numel, dim."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import convert, index
from .common import ranked


@register_lowering(dy.NumelOp)
def _lower_numel(ctx, op):
    n = index(1)
    for d in dy.int_list(op.dims):
        n = arith.muli(n, tensor.dim(op.x, index(d)))
    out = ranked(op.out)
    value = convert(arith.index_cast(ir.IntegerType.get_signless(64), n), out.element_type)
    return tensor.from_elements(out, [value])


@register_lowering(dy.DimOp)
def _lower_dim(ctx, op):
    return tensor.dim(op.x, index(ir.IntegerAttr(op.dim).value))
