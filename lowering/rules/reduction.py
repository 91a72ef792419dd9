"""Reductions -> linalg.generic with reduction iterators over a filled accumulator.

Float sums are cascaded. One running f32 sum over n elements loses accuracy as n grows: its
rounding errors add up (worst case n * eps relative), and once the total dwarfs the terms each
add rounds most of a term away (8M values near 100 came out 7% low, the variance of 1024x8192
values in [100, 101] off by 58). Eager sums in a cascade instead (pairwise/blocked partial
sums). Here a sum over a dim longer than SUM_BLOCK is cut into blocks of at most SUM_BLOCK
consecutive elements, each block summed on its own (one generic for all blocks), and the block
sums are summed the same way: no running sum spans more than SUM_BLOCK terms, so the error grows
like SUM_BLOCK * log_SUM_BLOCK(n). It stays structured linalg (generics with affine indexing
maps), so every target lowers the same IR and elementwise producers still fuse into the sum.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, highest, identity_of, index, is_float, lowest
from .common import (PARALLEL, REDUCTION, affine_map, dim_value, elementwise, filled, generic, loop_index, ranked,
                     sized_shape, slice_dim)

DYN = dy.DYN

# Longest run of terms one running float sum adds up (see the module docstring).
SUM_BLOCK = 64
# Cascade levels for a dim whose size is only known at run time: SUM_BLOCK**4 = 16M elements
# before the top level's runs grow past SUM_BLOCK.
DYNAMIC_LEVELS = 4

# kind -> (float combiner, integer combiner); the accumulator starts from the combiner's identity
# (scalar.IDENTITIES)
REDUCERS = {
    "sum": (arith.addf, arith.addi),
    "prod": (arith.mulf, arith.muli),
    "max": (arith.maximumf, arith.maxsi),
    "min": (arith.minimumf, arith.minsi),
    "any": (None, arith.ori),
    "all": (None, arith.andi),
}


def _iteration(src_rank: int, dims: list[int], kept_inner: bool = False):
    """Loop order: the kept dims first (parallel), then the reduced ones. With `kept_inner`, kept
    dims after the first reduced one (an NHWC batch norm's channels, kept by a sum over H and W)
    stay innermost, after the reduced ones, when a kept dim comes before them: the innermost
    loop then walks memory contiguously, one accumulator row per step (vector code), where
    reducing innermost walked it with a stride of the kept dims' size; the outermost loop stays
    a parallel one (codegen/cpu/parallel.py runs a nest that starts with a reduction serially).
    The terms each result sums, and their order, are the same either way."""
    kept = [d for d in range(src_rank) if d not in dims]
    outer = [d for d in kept if d < min(dims)] if dims else kept
    inner = [d for d in kept if d not in outer]
    if not (kept_inner and outer and inner):
        outer, inner = kept, []
    order = outer + dims + inner
    position = {d: i for i, d in enumerate(order)}
    in_map = affine_map(src_rank, [position[d] for d in range(src_rank)])
    out_map = affine_map(src_rank, [position[d] for d in kept])
    iterators = [PARALLEL] * len(outer) + [REDUCTION] * len(dims) + [PARALLEL] * len(inner)
    return kept, in_map, out_map, iterators


@register_lowering(dy.ReduceOp)
def _lower_reduce(ctx, op):
    return lower_reduce(op, SUM_BLOCK)


def lower_reduce(op, row_limit: int, kept_inner: bool = False):
    """`row_limit`: the most terms a sum over the operand's innermost dim(s) adds up in one
    generic (a target whose row kernels already sum rows in a tree passes a larger one).
    `kept_inner`: see _iteration (a target whose loops vectorize the innermost loop)."""
    kind, dims = ir.StringAttr(op.kind).value, dy.int_list(op.dims)
    if kind == "sum" and is_float(ranked(op.out).element_type):
        reduced = cascade_sum(op.x, dims, row_limit, kept_inner=kept_inner)
    else:
        reduced = _reduce(op.x, kind, dims, kept_inner)
    # The result may know a size statically that the operand left to run time.
    return reduced if reduced.type == op.out.type else tensor.cast(op.out.type, reduced)


def _reduce(x, kind: str, dims: list[int], kept_inner: bool = False) -> ir.Value:
    """One generic reducing `dims` of x away with `kind`, sequentially (loop order: _iteration)."""
    src = ranked(x)
    float_fn, int_fn = REDUCERS[kind]
    combine = float_fn if is_float(src.element_type) else int_fn
    if combine is None:
        raise NotImplementedError(f"reduce kind {kind} on {src.element_type}")
    kept, in_map, out_map, iterators = _iteration(src.rank, dims, kept_inner)
    out = ir.RankedTensorType.get([src.shape[d] for d in kept], src.element_type)
    acc = filled(out, identity_of(combine, src.element_type), x, kept)
    return generic([x], [acc], [in_map, out_map], iterators, lambda v, a: [combine(v, a)])[0]


def cascade_sum(x, dims: list[int], row_limit: int = SUM_BLOCK, levels: int = DYNAMIC_LEVELS,
                kept_inner: bool = False) -> ir.Value:
    """Sum of x over `dims` in which no running sum spans more than SUM_BLOCK terms (row_limit
    for a run ending at x's innermost dim).

    The innermost reduced dims go first: a run of consecutive dims making at most that many
    terms in one generic, a longer dim blocked (_block_sums, _sum_dynamic_dim). The partial sums then go
    through the outer dims the same way. The dims still to reduce keep their positions: only
    later dims went. `levels`: how many times a run-time-sized dim may still be blocked.
    `kept_inner`: the loop order of each run's generic (_iteration).
    """
    dims = sorted(dims)
    rows = len(dims) < len(ranked(x).shape)  # some dim kept: the sum is per row, not of everything
    while dims:
        shape = ranked(x).shape
        group = [dims.pop()]
        innermost = group[0] == len(shape) - 1
        terms, limit = shape[group[0]], row_limit if innermost else SUM_BLOCK
        if terms == DYN and innermost and rows and row_limit > SUM_BLOCK:
            # The target's row kernel sums a row in a tree of row_limit / SUM_BLOCK shares: a
            # row of run-time length (a softmax's, a mean's) is one generic; no share exceeds
            # SUM_BLOCK terms up to row_limit. A sum of a whole tensor of run-time size, which
            # may be far longer, is still blocked: its blocks sum in parallel.
            x = _reduce(x, "sum", group, kept_inner)
            continue
        if terms == DYN:
            x = _sum_dynamic_dim(x, group[0], row_limit, levels)
            continue
        if terms > limit:
            # The block sums take the dim's place and are summed with the dims before it: a
            # [8, 512, 768] bias gradient is 64-row blocks, then one sum of the 8 x 8 block sums
            # (not one over the 8 blocks and another over the batch: a kernel less each).
            block = _block_size(terms, limit)
            x = _block_sums(x, group[0], block, -(-terms // block), terms)
            dims.append(group[0])
            continue
        while dims and dims[-1] == group[0] - 1 and shape[dims[-1]] != DYN and terms * shape[dims[-1]] <= limit:
            terms *= shape[dims[-1]]
            group.insert(0, dims.pop())
        x = _reduce(x, "sum", group, kept_inner)
    return x


# A row kernel's block (row_limit > SUM_BLOCK) is worth its threads from rows of this many terms.
MIN_ROW_BLOCK = 4 * SUM_BLOCK


def _block_size(n: int, limit: int = SUM_BLOCK) -> int:
    """The largest divisor of n in [SUM_BLOCK/2, SUM_BLOCK], so that the blocks tile the dim
    exactly (no index wraps, no mask), else SUM_BLOCK. Under a target's larger row limit (its
    row kernel sums a row in a tree, no share above SUM_BLOCK terms) the largest divisor of n
    in [MIN_ROW_BLOCK, limit] first: a [tokens, 50257] sum becomes 29 rows of 1733 per token
    for one block each, where blocks of 61 made millions of rows too short for a block."""
    if limit > SUM_BLOCK:
        wide = next((b for b in range(min(limit, n - 1), MIN_ROW_BLOCK - 1, -1) if n % b == 0), None)
        if wide is not None:
            return wide
    return next((b for b in range(SUM_BLOCK, SUM_BLOCK // 2 - 1, -1) if n % b == 0), SUM_BLOCK)


def _block_sums(x, dim: int, block: int, blocks, n) -> ir.Value:
    """x with `dim` replaced by `blocks` sums: block c sums x[.., c * block + i, ..], i < block.

    One generic reading x itself through the affine index c * block + i (loops: x's other dims,
    c, i), so the elementwise ops producing x still fuse into it; a tensor<block> operand (as
    linalg's pooling ops take a window) gives loop i its size. Where the last block runs past
    the end n, its index wraps (mod n) to stay in bounds and the body adds 0 instead.
    """
    src = ranked(x)
    rank, elem = src.rank, src.element_type
    outer = [d for d in range(rank) if d != dim]
    c, i = ir.AffineDimExpr.get(rank - 1), ir.AffineDimExpr.get(rank)
    flat = c * block + i
    ragged = isinstance(blocks, int) and blocks * block != n
    if ragged:
        flat = ir.AffineModExpr.get(flat, ir.AffineConstantExpr.get(n))
    loop_of = {d: ir.AffineDimExpr.get(j) for j, d in enumerate(outer)}
    in_map = ir.AffineMap.get(rank + 1, 0, [flat if d == dim else loop_of[d] for d in range(rank)])
    out_map = ir.AffineMap.get(rank + 1, 0, [c if d == dim else loop_of[d] for d in range(rank)])
    static, sizes = _sizes(x, dim, [blocks])
    acc = linalg.fill(const(elem, 0), outs=[tensor.empty(sized_shape(ir.RankedTensorType.get(static, elem), sizes), elem)])
    window = tensor.empty([block], elem)
    maps = [ir.AffineMapAttr.get(in_map), affine_map(rank + 1, [rank]), ir.AffineMapAttr.get(out_map)]

    def body(v, _, a):
        if ragged:
            at = arith.addi(arith.muli(loop_index(rank - 1), index(block)), loop_index(rank))
            v = arith.select(arith.cmpi(arith.CmpIPredicate.ult, at, index(n)), v, const(elem, 0))
        return [arith.addf(a, v)]

    return generic([x, window], [acc], maps, [PARALLEL] * rank + [REDUCTION], body)[0]


def _sum_dynamic_dim(x, dim: int, row_limit: int, levels: int) -> ir.Value:
    """A dim of run-time size n: blocks of SUM_BLOCK over its first n - n % SUM_BLOCK elements,
    plus the rest summed on its own (a slice of x: the ops producing x then run unfused)."""
    if levels == 0:
        return _reduce(x, "sum", [dim])
    n = dim_value(x, dim)
    blocks = arith.divui(n, index(SUM_BLOCK))
    whole = arith.muli(blocks, index(SUM_BLOCK))
    partial = _block_sums(x, dim, SUM_BLOCK, blocks, None)
    total = cascade_sum(partial, [dim], row_limit, levels - 1)
    tail = _reduce(slice_dim(x, dim, whole, arith.subi(n, whole)), "sum", [dim])
    return elementwise([total, tail], ranked(total), arith.addf)


def _sizes(x, dim: int, replaced: list) -> tuple[list[int], list[ir.Value]]:
    """Static sizes (DYN marks a run-time one) and the run-time size values of x's shape with
    `dim` replaced by the sizes `replaced` (ints or index values)."""
    static, values = [], []
    for d, s in enumerate(ranked(x).shape):
        for size in (replaced if d == dim else [s]):
            if isinstance(size, int) and size != DYN:
                static.append(size)
            else:
                static.append(DYN)
                values.append(size if not isinstance(size, int) else dim_value(x, d))
    return static, values


@register_lowering(dy.ArgReduceOp)
def _lower_arg_reduce(ctx, op):
    src, out = ranked(op.x), ranked(op.out)
    kind, dim = ir.StringAttr(op.kind).value, ir.IntegerAttr(op.dim).value
    elem, i64 = src.element_type, ir.IntegerType.get_signless(64)
    kept, in_map, out_map, iterators = _iteration(src.rank, [dim])
    val_type = ir.RankedTensorType.get(out.shape, elem)
    start = lowest(elem) if kind == "max" else highest(elem)
    best = filled(val_type, start, op.x, kept)
    index = filled(out, const(i64, 0), op.x, kept)
    loop_dim = len(kept)

    def body(x, best_v, best_i):
        i = arith.index_cast(i64, loop_index(loop_dim))
        if is_float(elem):
            better = arith.cmpf(arith.CmpFPredicate.OGT if kind == "max" else arith.CmpFPredicate.OLT, x, best_v)
            # NaN wins (torch.argmax treats NaN as the maximum), the first NaN is kept.
            x_nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
            best_nan = arith.cmpf(arith.CmpFPredicate.UNO, best_v, best_v)
            better = arith.andi(arith.ori(better, x_nan), arith.xori(best_nan, const(best_nan.type, 1)))
        else:
            better = arith.cmpi(arith.CmpIPredicate.sgt if kind == "max" else arith.CmpIPredicate.slt, x, best_v)
        return [arith.select(better, x, best_v), arith.select(better, i, best_i)]

    return generic([op.x], [best, index], [in_map, out_map, out_map], iterators, body)[1]
