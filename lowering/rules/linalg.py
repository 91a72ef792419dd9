"""LU, Cholesky, triangular solves and LU permutations as serial scf.for loop nests.

Each op works on [batch, rows, cols] tensors: an outer loop walks the batch and the textbook
right-looking algorithm runs inside it, reading with tensor.extract and writing with
tensor.insert on loop-carried tensors, which one-shot bufferization turns into in-place memref
code. A tensor the loops update starts as a fresh copy (bufferization.alloc_tensor(copy=...)),
never the operand's own buffer, which may be the caller's. Conditional steps (a row swap, the
first failing pivot) are written with arith.select, so every loop has a static trip structure.

The import rules run these in float64 (also for float32 inputs, rounding once at the end), so
the few-ulp differences of another summation order than LAPACK's stay within tolerance.
The rules require "serial_loops": the loops run outside any linalg op.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, math, tensor

from ...dialects import dynamo as dy
from ..loops import for_range
from ..registry import register_lowering
from ..scalar import const, i64, index
from .common import PARALLEL, fresh_copy, generic, identity, ranked

I32 = lambda: ir.IntegerType.get_signless(32)


def _filled(shape, elem, value) -> ir.Value:
    out = tensor.empty(shape, elem)
    return generic([], [out], [identity(len(shape))], [PARALLEL] * len(shape), lambda _: [const(elem, value)])[0]


def _static(*values):
    for v in values:
        if any(s == ir.ShapedType.get_dynamic_size() for s in ranked(v).shape):
            raise NotImplementedError("linalg factorization with a dynamic dim")


def _first_failure(info, j, failed):
    """info stays the first failing step (1-based): set it to j+1 only while it is still 0."""
    fresh = arith.andi(failed, arith.cmpi(arith.CmpIPredicate.eq, info, const(I32(), 0)))
    return arith.select(fresh, arith.addi(arith.index_cast(I32(), j), const(I32(), 1)), info)


@register_lowering(dy.LuFactorOp, requires={"serial_loops"})
def _lower_lu_factor(ctx, op):
    _static(op.x)
    batch, m, n = ranked(op.x).shape
    elem, k = ranked(op.x).element_type, min(m, n)
    zero = const(elem, 0.0)
    lu0, piv0, info0 = fresh_copy(op.x), tensor.empty([batch, k], I32()), tensor.empty([batch], I32())

    def matrix(b, lu, piv, infos):
        at = lambda r, c: [b, r, c]

        def step(j, lu, piv, info):
            def search(i, best_row, best):  # first row of largest |value| (strictly larger wins)
                v = math.absf(tensor.extract(lu, at(i, j)))
                take = arith.cmpf(arith.CmpFPredicate.OGT, v, best)
                return [arith.select(take, i, best_row), arith.select(take, v, best)]

            p, _ = for_range(j, m, [j, math.absf(tensor.extract(lu, at(j, j)))], search)
            piv = tensor.insert(arith.index_cast(I32(), arith.addi(p, index(1))), piv, [b, j])

            def swap(c, lu):
                top, other = tensor.extract(lu, at(j, c)), tensor.extract(lu, at(p, c))
                return [tensor.insert(top, tensor.insert(other, lu, at(j, c)), at(p, c))]

            (lu,) = for_range(0, n, [lu], swap)
            pivot = tensor.extract(lu, at(j, j))
            singular = arith.cmpf(arith.CmpFPredicate.OEQ, pivot, zero)
            info = _first_failure(info, j, singular)
            below = arith.addi(j, index(1))

            def eliminate(i, lu):
                a = tensor.extract(lu, at(i, j))
                l = arith.select(singular, a, arith.divf(a, pivot))  # LAPACK skips a zero pivot
                lu = tensor.insert(l, lu, at(i, j))

                def update(c, lu):
                    v = arith.subf(tensor.extract(lu, at(i, c)), arith.mulf(l, tensor.extract(lu, at(j, c))))
                    return [tensor.insert(v, lu, at(i, c))]

                return for_range(below, n, [lu], update)

            (lu,) = for_range(below, m, [lu], eliminate)
            return [lu, piv, info]

        lu, piv, info = for_range(0, k, [lu, piv, const(I32(), 0)], step)
        return [lu, piv, tensor.insert(info, infos, [b])]

    return for_range(0, batch, [lu0, piv0, info0], matrix)


@register_lowering(dy.CholeskyOp, requires={"serial_loops"})
def _lower_cholesky(ctx, op):
    _static(op.x)
    batch, n, _ = ranked(op.x).shape
    elem = ranked(op.x).element_type
    zero = const(elem, 0.0)

    def matrix(b, l, infos):
        def dot(l, i, j, start):
            """start - sum_{p<j} L[i,p] L[j,p], in column order."""
            return for_range(0, j, [start], lambda p, s: [arith.subf(s, arith.mulf(
                tensor.extract(l, [b, i, p]), tensor.extract(l, [b, j, p])))])[0]

        def column(j, l, info):
            d2 = dot(l, j, j, tensor.extract(op.x, [b, j, j]))
            failed = arith.cmpf(arith.CmpFPredicate.ULE, d2, zero)  # <= 0 or NaN: not positive definite
            info = _first_failure(info, j, failed)
            d = math.sqrt(d2)
            l = tensor.insert(d, l, [b, j, j])

            def row(i, l):
                return [tensor.insert(arith.divf(dot(l, i, j, tensor.extract(op.x, [b, i, j])), d), l, [b, i, j])]

            (l,) = for_range(arith.addi(j, index(1)), n, [l], row)
            return [l, info]

        l, info = for_range(0, n, [l, const(I32(), 0)], column)
        return [l, tensor.insert(info, infos, [b])]

    return for_range(0, batch, [_filled([batch, n, n], elem, 0.0), tensor.empty([batch], I32())], matrix)


@register_lowering(dy.TriangularSolveOp, requires={"serial_loops"})
def _lower_triangular_solve(ctx, op):
    _static(op.a, op.b)
    batch, n, k = ranked(op.b).shape
    upper = bool(ir.IntegerAttr(op.upper).value)
    unit = bool(ir.IntegerAttr(op.unitriangular).value)

    def matrix(b, x):
        def column(c, x):
            def solve_row(r, x):
                i = arith.subi(index(n - 1), r) if upper else r
                lo, hi = (arith.addi(i, index(1)), index(n)) if upper else (index(0), i)
                s = for_range(lo, hi, [tensor.extract(x, [b, i, c])], lambda p, s: [arith.subf(s, arith.mulf(
                    tensor.extract(op.a, [b, i, p]), tensor.extract(x, [b, p, c])))])[0]
                if not unit:
                    s = arith.divf(s, tensor.extract(op.a, [b, i, i]))
                return [tensor.insert(s, x, [b, i, c])]

            return for_range(0, n, [x], solve_row)

        return for_range(0, k, [x], column)

    return for_range(0, batch, [fresh_copy(op.b)], matrix)[0]


@register_lowering(dy.LuPermutationOp, requires={"serial_loops"})
def _lower_lu_permutation(ctx, op):
    _static(op.pivots)
    batch, k = ranked(op.pivots).shape
    size = ir.IntegerAttr(op.size).value

    def matrix(b, perm, inverse):
        perm = for_range(0, size, [perm], lambda i, perm: [tensor.insert(arith.index_cast(i64(), i), perm, [b, i])])[0]

        def swap(j, perm):
            p = arith.subi(arith.index_cast(ir.IndexType.get(), tensor.extract(op.pivots, [b, j])), index(1))
            top, other = tensor.extract(perm, [b, j]), tensor.extract(perm, [b, p])
            return [tensor.insert(top, tensor.insert(other, perm, [b, j]), [b, p])]

        (perm,) = for_range(0, k, [perm], swap)

        def invert(i, inverse):
            source = arith.index_cast(ir.IndexType.get(), tensor.extract(perm, [b, i]))
            return [tensor.insert(arith.index_cast(i64(), i), inverse, [b, source])]

        (inverse,) = for_range(0, size, [inverse], invert)
        return [perm, inverse]

    empty = lambda: tensor.empty([batch, size], i64())
    return for_range(0, batch, [empty(), empty()], matrix)
