"""Size ops, which read sizes off an operand at run time: numel, dim; and a size as a tensor."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import convert, index
from .common import ranked


def _as_tensor(n: ir.Value, out: ir.RankedTensorType) -> ir.Value:
    """Index `n` as a 0-d tensor of out's element type. A non-bool integer type is one
    index_cast (the cuda host schedule has a step for it, not for a trunci after one)."""
    elem = out.element_type
    if isinstance(elem, ir.IntegerType) and elem.width > 1:
        return tensor.from_elements(out, [arith.index_cast(elem, n)])
    return tensor.from_elements(out, [convert(arith.index_cast(ir.IntegerType.get_signless(64), n), elem)])


@register_lowering(dy.NumelOp)
def _lower_numel(ctx, op):
    n = index(1)
    for d in dy.int_list(op.dims):
        n = arith.muli(n, tensor.dim(op.x, index(d)))
    return _as_tensor(n, ranked(op.out))


@register_lowering(dy.SizeTensorOp)
def _lower_size_tensor(ctx, op):
    return _as_tensor(op.n, ranked(op.out))


@register_lowering(dy.DimOp)
def _lower_dim(ctx, op):
    return tensor.dim(op.x, index(ir.IntegerAttr(op.dim).value))
