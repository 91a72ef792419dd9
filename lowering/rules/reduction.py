"""Reductions -> linalg.generic with reduction iterators over a filled accumulator."""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, highest, is_float, lowest
from .common import PARALLEL, REDUCTION, affine_map, empty, filled, generic, identity, ranked, loop_index

# kind -> (initial value builder, float combiner, integer combiner)
REDUCERS = {
    "sum": (lambda t: const(t, 0), arith.addf, arith.addi),
    "prod": (lambda t: const(t, 1), arith.mulf, arith.muli),
    "max": (lowest, arith.maximumf, arith.maxsi),
    "min": (highest, arith.minimumf, arith.minsi),
    "any": (lambda t: const(t, 0), None, arith.ori),
    "all": (lambda t: const(t, 1), None, arith.andi),
}


def _iteration(src_rank: int, dims: list[int]):
    """Loop order: the kept dims first (parallel), then the reduced ones."""
    kept = [d for d in range(src_rank) if d not in dims]
    order = kept + dims
    position = {d: i for i, d in enumerate(order)}
    in_map = affine_map(src_rank, [position[d] for d in range(src_rank)])
    out_map = affine_map(src_rank, list(range(len(kept))))
    iterators = [PARALLEL] * len(kept) + [REDUCTION] * len(dims)
    return kept, in_map, out_map, iterators


@register_lowering(dy.ReduceOp)
def _lower_reduce(op):
    src, out = ranked(op.x), ranked(op.out)
    kind, dims = ir.StringAttr(op.kind).value, dy.int_list(op.dims)
    init_fn, float_fn, int_fn = REDUCERS[kind]
    combine = float_fn if is_float(out.element_type) else int_fn
    if combine is None:
        raise NotImplementedError(f"reduce kind {kind} on {out.element_type}")
    kept, in_map, out_map, iterators = _iteration(src.rank, dims)
    acc = filled(out, init_fn(out.element_type), op.x, kept)
    return generic([op.x], [acc], [in_map, out_map], iterators, lambda x, a: [combine(x, a)])[0]


@register_lowering(dy.ArgReduceOp)
def _lower_arg_reduce(op):
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
