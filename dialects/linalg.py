"""Dense factorizations of small matrices: LU with partial pivoting, Cholesky, triangular
solves, and the permutation an LU's pivots describe.

Every op works on a batch of matrices of rank 3 ([batch, rows, cols]); the import rules flatten
leading dims into one and broadcast batches first, so the loops need only one batch counter.

Example:
  %lu, %piv, %info = "dynamo.lu_factor"(%a)
      : (tensor<2x4x5xf64>) -> (tensor<2x4x5xf64>, tensor<2x4xi32>, tensor<2xi32>)
  %l, %info = "dynamo.cholesky"(%a) : (tensor<1x5x5xf64>) -> (tensor<1x5x5xf64>, tensor<1xi32>)
  %x = "dynamo.triangular_solve"(%a, %b) {upper = 1 : i64, unitriangular = 0 : i64}
      : (tensor<1x3x3xf64>, tensor<1x3x2xf64>) -> tensor<1x3x2xf64>
  %perm, %inv = "dynamo.lu_permutation"(%piv) {size = 4 : i64}
      : (tensor<2x4xi32>) -> (tensor<2x4xi64>, tensor<2x4xi64>)
"""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, elem_of, shape_of


def _is_i(value, bits: int) -> bool:
    return str(elem_of(value)) == f"i{bits}"


class LuFactorOp(Dynamo.Operation, name="lu_factor", traits=[Pure]):
    """LU with partial pivoting of each [m, n] matrix (LAPACK getrf): `lu` holds the unit lower
    L below the diagonal and U on and above it; `pivots` (i32, 1-based) says row j was swapped
    with row pivots[j]-1 at step j (the row of largest |value|, the first on ties); `info` (i32)
    is the 1-based index of the first exactly zero pivot, 0 if none."""

    x: Operand[ir.RankedTensorType]
    lu: Result[ir.RankedTensorType]
    pivots: Result[ir.RankedTensorType]
    info: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        b, m, n = (shape_of(self.x) + [0, 0, 0])[:3]
        _require(len(shape_of(self.x)) == 3, "x must be [batch, m, n]")
        _require(shape_of(self.lu) == [b, m, n] and elem_of(self.lu) == elem_of(self.x), "lu takes x's type")
        _require(shape_of(self.pivots) == [b, min(m, n)] and _is_i(self.pivots, 32), "pivots: [batch, min(m, n)] i32")
        _require(shape_of(self.info) == [b] and _is_i(self.info, 32), "info: [batch] i32")


class CholeskyOp(Dynamo.Operation, name="cholesky", traits=[Pure]):
    """Lower Cholesky factor L (A = L L^T) of each [n, n] matrix, read from A's lower triangle;
    the strict upper triangle of L is zero. `info` (i32) is the order of the first leading minor
    that is not positive definite (1-based), 0 if none; L is meaningful only where info is 0."""

    x: Operand[ir.RankedTensorType]
    l: Result[ir.RankedTensorType]
    info: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        s = shape_of(self.x)
        _require(len(s) == 3 and s[1] == s[2], "x must be [batch, n, n]")
        _require(shape_of(self.l) == s and elem_of(self.l) == elem_of(self.x), "l takes x's type")
        _require(shape_of(self.info) == s[:1] and _is_i(self.info, 32), "info: [batch] i32")


class TriangularSolveOp(Dynamo.Operation, name="triangular_solve", traits=[Pure]):
    """X with A X = B for triangular A [batch, n, n] (upper or lower; a unit diagonal is assumed,
    not read, when `unitriangular`), B [batch, n, k]. Only A's triangle is read."""

    a: Operand[ir.RankedTensorType]
    b: Operand[ir.RankedTensorType]
    upper: ir.IntegerAttr
    unitriangular: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        a, b = shape_of(self.a), shape_of(self.b)
        _require(len(a) == 3 and a[1] == a[2], "a must be [batch, n, n]")
        _require(len(b) == 3 and b[:2] == a[:2], "b must be [batch, n, k]")
        _require(elem_of(self.a) == elem_of(self.b), "a and b share an element type")
        _require(shape_of(self.out) == b and elem_of(self.out) == elem_of(self.b), "result takes b's type")


class LuPermutationOp(Dynamo.Operation, name="lu_permutation", traits=[Pure]):
    """The row order LAPACK-style pivots [batch, k] (i32, 1-based) describe on `size` rows:
    applying the swaps in turn to 0..size-1 gives `perm` (row i of P^T A is row perm[i] of A);
    `inverse` is its inverse permutation. Both i64 [batch, size]."""

    pivots: Operand[ir.RankedTensorType]
    size: ir.IntegerAttr
    perm: Result[ir.RankedTensorType]
    inverse: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        p, size = shape_of(self.pivots), ir.IntegerAttr(self.size).value
        _require(len(p) == 2 and _is_i(self.pivots, 32) and p[1] <= size, "pivots: [batch, k <= size] i32")
        for r in (self.perm, self.inverse):
            _require(shape_of(r) == [p[0], size] and _is_i(r, 64), "perm/inverse: [batch, size] i64")
