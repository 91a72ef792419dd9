"""dynamo.sort -> a bottom-up merge sort written as scf.for loops over tensors.

Each line along `dim` is sorted independently: an outer loop walks the other dims (one linear
counter, split into coordinates), and the merge sort runs on a scratch pair of tensors whose `dim`
is doubled: the lower half [0, n) and the upper half [n, 2n) take turns as source and destination
of a merge pass (pass p merges runs of width 2^p), so no copy is needed between passes and the
result lies in the half the last pass wrote (known statically: ceil(log2 n) passes). Merging takes
the left run's element unless the right one sorts strictly before it, which makes the sort stable.
O(n log n) per line. Reads are tensor.extract and writes tensor.insert on loop-carried tensors,
which one-shot bufferization turns into in-place memref code.

The rule requires "serial_loops": the loops run outside any linalg op, which the CUDA pipeline
does not map to the GPU, so the CUDA partitioner leaves sort to eager.
"""

import math

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..loops import for_range
from ..registry import register_lowering
from ..scalar import const, is_bool, is_float
from .common import PARALLEL, generic, identity, loop_index, ranked


def _before(elem: ir.Type, descending: bool):
    """before(a, b): a sorts strictly before b. NaN is the largest float (torch's order)."""
    if is_float(elem):
        def before(a, b):
            order = arith.cmpf(arith.CmpFPredicate.OGT if descending else arith.CmpFPredicate.OLT, a, b)
            big, small = (a, b) if descending else (b, a)  # the NaN must be `big`, the other not
            big_nan = arith.cmpf(arith.CmpFPredicate.UNO, big, big)
            small_num = arith.cmpf(arith.CmpFPredicate.ORD, small, small)
            return arith.ori(order, arith.andi(big_nan, small_num))
        return before
    if is_bool(elem):
        pred = arith.CmpIPredicate.ugt if descending else arith.CmpIPredicate.ult
    else:
        pred = arith.CmpIPredicate.sgt if descending else arith.CmpIPredicate.slt
    return lambda a, b: arith.cmpi(pred, a, b)


def _coordinates(r: ir.Value, shape: list[int], dim: int) -> list:
    """The coordinates of line r (row-major over every dim but `dim`); `dim`'s slot is None."""
    index = ir.IndexType.get()
    coords = [None] * len(shape)
    for d in reversed([d for d in range(len(shape)) if d != dim]):
        size = const(index, shape[d])
        coords[d] = arith.remui(r, size)
        r = arith.divui(r, size)
    return coords


def _at(coords: list, position: ir.Value) -> list:
    return [position if c is None else c for c in coords]


@register_lowering(dy.SortOp, requires={"serial_loops"})
def _lower_sort(ctx, op):
    t = ranked(op.x)
    shape, dim = list(t.shape), ir.IntegerAttr(op.dim).value
    if any(s == ir.ShapedType.get_dynamic_size() for s in shape):
        raise NotImplementedError("dynamo.sort with dynamic dims")
    elem, i64, index = t.element_type, ir.IntegerType.get_signless(64), ir.IndexType.get()
    n = shape[dim]
    buf_shape = shape[:dim] + [2 * n] + shape[dim + 1:]
    keys = tensor.insert_slice(op.x, tensor.empty(buf_shape, elem), [], [], [], [0] * len(shape), shape,
                               [1] * len(shape))
    positions = generic([], [tensor.empty(buf_shape, i64)], [identity(len(shape))], [PARALLEL] * len(shape),
                        lambda _: [arith.index_cast(i64, loop_index(dim))])[0]
    passes = math.ceil(math.log2(n)) if n > 1 else 0
    before = _before(elem, bool(ir.IntegerAttr(op.descending).value))
    c = lambda v: const(index, v)
    lines = math.prod(s for d, s in enumerate(shape) if d != dim)

    def line(r, keys, positions):
        coords = _coordinates(r, shape, dim)

        def merge_pass(p, keys, positions):
            width = arith.shli(c(1), p)
            src = arith.muli(arith.andi(p, c(1)), c(n))
            dst = arith.subi(c(n), src)

            def merge(lo, keys, positions):
                mid = arith.minui(arith.addi(lo, width), c(n))
                hi = arith.minui(arith.addi(mid, width), c(n))
                last_left, last_right = arith.subi(mid, c(1)), arith.subi(hi, c(1))

                def step(k, keys, positions, i, j):
                    # Clamped reads stay in bounds once a run is used up; the flags below decide.
                    at_i = _at(coords, arith.addi(src, arith.minui(i, last_left)))
                    at_j = _at(coords, arith.addi(src, arith.minui(j, last_right)))
                    a, b = tensor.extract(keys, at_i), tensor.extract(keys, at_j)
                    left_done = arith.cmpi(arith.CmpIPredicate.uge, i, mid)
                    right_open = arith.cmpi(arith.CmpIPredicate.ult, j, hi)
                    right = arith.ori(left_done, arith.andi(right_open, before(b, a)))
                    pos = arith.select(right, tensor.extract(positions, at_j), tensor.extract(positions, at_i))
                    out = _at(coords, arith.addi(dst, k))
                    taken = arith.select(right, c(1), c(0))
                    return [tensor.insert(arith.select(right, b, a), keys, out), tensor.insert(pos, positions, out),
                            arith.addi(i, arith.subi(c(1), taken)), arith.addi(j, taken)]

                return for_range(lo, hi, [keys, positions, lo, mid], step)[:2]

            return for_range(c(0), c(n), [keys, positions], merge, step=arith.shli(width, c(1)))

        return for_range(c(0), c(passes), [keys, positions], merge_pass)

    keys, positions = for_range(c(0), c(lines), [keys, positions], line)
    offsets = [0] * len(shape)
    offsets[dim] = n * (passes % 2)
    out_elem = ir.RankedTensorType.get(shape, elem)
    out_pos = ir.RankedTensorType.get(shape, i64)
    return [tensor.extract_slice(out_elem, keys, [], [], [], offsets, shape, [1] * len(shape)),
            tensor.extract_slice(out_pos, positions, [], [], [], offsets, shape, [1] * len(shape))]
