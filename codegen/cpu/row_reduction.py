"""The cpu rule for float sums, maxima and minima over a tensor's innermost dim (a softmax's
row max and row sum, a layer norm's mean and variance): the row is reduced in LANES interleaved
partial results, then the lanes are reduced.

Why: the generic rule (lowering/rules/reduction.py) reduces a row into one running scalar (or
into blocks of consecutive elements, each one running scalar). Each step depends on the one
before, and float adds are not associative, so LLVM keeps them in order: one scalar add per
element. Here lane j accumulates elements j, j + LANES, j + 2 * LANES, ...: the innermost loop
runs over the lanes, contiguous in memory and independent of each other, so LLVM's vectorizer
turns it into whole-register loads and adds (the accumulator of one row block is LANES floats).
The order of the additions is a choice made here, in the IR, not a reassociation LLVM is asked
to do: the code is exact to the IR, and each lane's partial sum spans fewer terms than one
running sum over the row would, so it is at least as accurate.

Sums keep reduction.py's accuracy rule: no running sum adds up more than SUM_BLOCK terms. A row
longer than LANES * SUM_BLOCK is cut into blocks of LANES * K elements (K <= SUM_BLOCK lane
steps), each block giving LANES partial sums; the block partials are then summed by the generic
cascade. Elements after the last whole block (n not a multiple of LANES, or of the block) are
reduced on their own and combined at the end.

Maxima and minima are exact in any order (maximumf/minimumf propagate NaN whichever lane sees it
first), so they take one block of any length.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ...lowering import register_lowering
from ...lowering.rules.common import (PARALLEL, REDUCTION, affine_map, elementwise, generic, ranked, sized_shape,
                                      slice_dim)
from ...lowering.rules.reduction import REDUCERS, SUM_BLOCK, cascade_sum, lower_reduce
from ...lowering.scalar import identity_of, index, is_float
from .lane_vectors import LANES  # the loops stage turns the lane loops into vector code

DYN = dy.DYN


@register_lowering(dy.ReduceOp, target="cpu")
def lower_reduce_in_lanes(ctx, op):
    kind, dims = ir.StringAttr(op.kind).value, dy.int_list(op.dims)
    src = ranked(op.x)
    if not _lanes_apply(src, kind, dims):
        return lower_reduce(op, SUM_BLOCK, kept_inner=True)  # (our loops vectorize the innermost one)
    reduced = row_sum(op.x) if kind == "sum" else row_extreme(op.x, kind)
    return reduced if reduced.type == op.out.type else tensor.cast(op.out.type, reduced)


def _lanes_apply(src: ir.RankedTensorType, kind: str, dims: list[int]) -> bool:
    """A float sum/max/min over only the innermost dim, of a static size with two lane steps at least."""
    n = src.shape[-1] if src.rank else DYN
    return (kind in ("sum", "max", "min") and is_float(src.element_type) and dims == [src.rank - 1]
            and n != DYN and n >= 2 * LANES)


def row_sum(x) -> ir.Value:
    """x summed over its innermost dim, in lanes, blocks of at most SUM_BLOCK lane steps."""
    n, dim = ranked(x).shape[-1], ranked(x).rank - 1
    steps = n // LANES
    k = steps if steps <= SUM_BLOCK else _block_steps(steps)
    blocks = steps // k
    whole = blocks * k * LANES
    partial = _lane_partials(x, whole, blocks, k, arith.addf)  # [..., blocks, LANES]
    total = cascade_sum(partial, [dim, dim + 1])
    if whole == n:
        return total
    rest = cascade_sum(slice_dim(x, dim, whole, n - whole), [dim])
    return elementwise([total, rest], ranked(total), arith.addf)


def _block_steps(steps: int) -> int:
    """Lane steps per block: a divisor of `steps` in [SUM_BLOCK/2, SUM_BLOCK] (the blocks then
    cover every whole lane step), else SUM_BLOCK (the rest is summed on its own)."""
    return next((b for b in range(SUM_BLOCK, SUM_BLOCK // 2 - 1, -1) if steps % b == 0), SUM_BLOCK)


def row_extreme(x, kind: str) -> ir.Value:
    """x's max or min over its innermost dim, in lanes."""
    n, dim = ranked(x).shape[-1], ranked(x).rank - 1
    combine = REDUCERS[kind][0]
    steps = n // LANES
    whole = steps * LANES
    partial = _lane_partials(x, whole, 1, steps, combine)  # [..., 1, LANES]
    result = _reduce_trailing(partial, 2, combine)
    if whole == n:
        return result
    rest = _reduce_trailing(slice_dim(x, dim, whole, n - whole), 1, combine)
    return elementwise([result, rest], ranked(result), combine)


def _lane_partials(x, whole: int, blocks: int, steps: int, combine) -> ir.Value:
    """[..., blocks, LANES]: lane j of block b combines x[..., b * steps * LANES + s * LANES + j]
    for s < steps (x's first `whole` elements of the innermost dim). Loops: x's outer dims,
    b (parallel), s (reduction), j (parallel, innermost: the vector lanes). A tensor<steps>
    operand gives loop s its size, as the pooling ops' window does."""
    src = ranked(x)
    if whole != src.shape[-1]:
        x = slice_dim(x, src.rank - 1, 0, whole)
    outer, elem = src.rank - 1, src.element_type
    b, s, j = (ir.AffineDimExpr.get(outer + i) for i in range(3))
    at = b * (steps * LANES) + s * LANES + j
    in_map = affine_map(outer + 3, [*range(outer), at])
    out_map = affine_map(outer + 3, [*range(outer), outer, outer + 2])
    out_type = ir.RankedTensorType.get([*src.shape[:-1], blocks, LANES], elem)
    sizes = [tensor.dim(x, index(d)) for d in range(outer) if src.shape[d] == DYN]
    acc = _fill(out_type, identity_of(combine, elem), sizes)
    window = tensor.empty([steps], elem)
    iterators = [PARALLEL] * outer + [PARALLEL, REDUCTION, PARALLEL]
    maps = [in_map, affine_map(outer + 3, [outer + 1]), out_map]
    return generic([x, window], [acc], maps, iterators, lambda v, _, a: [combine(a, v)])[0]


def _reduce_trailing(x, count: int, combine) -> ir.Value:
    """x combined over its last `count` dims, in order (short: at most LANES terms, or a rest)."""
    src = ranked(x)
    kept = src.rank - count
    out_type = ir.RankedTensorType.get(src.shape[:kept], src.element_type)
    sizes = [tensor.dim(x, index(d)) for d in range(kept) if src.shape[d] == DYN]
    acc = _fill(out_type, identity_of(combine, src.element_type), sizes)
    maps = [affine_map(src.rank, range(src.rank)), affine_map(src.rank, range(kept))]
    return generic([x], [acc], maps, [PARALLEL] * kept + [REDUCTION] * count, lambda v, a: [combine(a, v)])[0]


def _fill(t: ir.RankedTensorType, value: ir.Value, sizes: list) -> ir.Value:
    """A tensor of type t (dynamic dims sized by `sizes`) filled with value."""
    return linalg.fill(value, outs=[tensor.empty(sized_shape(t, sizes), t.element_type)])
