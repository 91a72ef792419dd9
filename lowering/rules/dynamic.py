"""Ops that read dynamic sizes off an operand at run time: broadcast_like, numel, dim."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ...dialects import sizes
from ..registry import register_lowering
from ..scalar import convert, index
from .common import PARALLEL, affine_map, empty, generic, identity, ranked


@register_lowering(dy.BroadcastLikeOp)
def _lower_broadcast_like(op):
    src, out = ranked(op.x), ranked(op.out)
    dims = dy.int_list(op.dims)
    # A size-1 operand dim facing a result dim that is not statically 1 is stretched (index 0).
    exprs = [None if (src.shape[i] == 1 and out.shape[d] != 1) else d for i, d in enumerate(dims)]
    init = empty(out, op.like)
    return generic([op.x], [init], [affine_map(out.rank, exprs), identity(out.rank)],
                   [PARALLEL] * out.rank, lambda x, _: [x])[0]


@register_lowering(dy.NumelOp)
def _lower_numel(op):
    n = index(1)
    for d in dy.int_list(op.dims):
        n = arith.muli(n, tensor.dim(op.x, index(d)))
    out = ranked(op.out)
    value = convert(arith.index_cast(ir.IntegerType.get_signless(64), n), out.element_type)
    return tensor.from_elements(out, [value])


@register_lowering(sizes.DimOp)
def _lower_dim(op):
    return tensor.dim(op.x, index(ir.IntegerAttr(op.dim).value))
