"""Gather-style reads -> generics whose body extracts the element an index names."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from .common import PARALLEL, affine_map, empty, generic, identity, loop_index, ranked


@register_lowering(dy.GatherOp)
def _lower_gather(op):
    out, idx = ranked(op.out), ranked(op.indices)
    n_idx = idx.rank
    index_t = ir.IndexType.get()

    def body(i, _):
        row = arith.index_cast(index_t, i)
        rest = [loop_index(d) for d in range(n_idx, out.rank)]
        return [tensor.extract(op.x, [row, *rest])]

    return generic([op.indices], [empty(out)], [affine_map(out.rank, range(n_idx)), identity(out.rank)],
                   [PARALLEL] * out.rank, body)[0]


@register_lowering(dy.GatherAlongOp)
def _lower_gather_along(op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    index_t = ir.IndexType.get()

    def body(i, _):
        coords = [loop_index(d) for d in range(out.rank)]
        coords[dim] = arith.index_cast(index_t, i)
        return [tensor.extract(op.x, coords)]

    return generic([op.indices], [empty(out)], [identity(out.rank)] * 2, [PARALLEL] * out.rank, body)[0]
