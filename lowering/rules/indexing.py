"""Gather-style reads -> generics whose body extracts the element an index names (the index
kept inside the tensor: common.index_in_range)."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from .common import PARALLEL, affine_map, dim_value, empty, empty_from, generic, identity, index_in_range, loop_index, ranked


@register_lowering(dy.GatherOp)
def _lower_gather(ctx, op):
    out, idx = ranked(op.out), ranked(op.indices)
    n_idx = idx.rank
    rows = dim_value(op.x, 0)

    def body(i, _):
        row = index_in_range(i, rows)
        rest = [loop_index(d) for d in range(n_idx, out.rank)]
        return [tensor.extract(op.x, [row, *rest])]

    # A dynamic result dim has the size of the indices' dim it comes from, or of x's.
    sources = [(op.indices, d) if d < n_idx else (op.x, d - n_idx + 1) for d in range(out.rank)]
    return generic([op.indices], [empty_from(out, sources)], [affine_map(out.rank, range(n_idx)), identity(out.rank)],
                   [PARALLEL] * out.rank, body)[0]


@register_lowering(dy.GatherAlongOp)
def _lower_gather_along(ctx, op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    size = dim_value(op.x, dim)

    def body(i, _):
        coords = [loop_index(d) for d in range(out.rank)]
        coords[dim] = index_in_range(i, size)
        return [tensor.extract(op.x, coords)]

    return generic([op.indices], [empty(out, op.indices)], [identity(out.rank)] * 2, [PARALLEL] * out.rank, body)[0]
