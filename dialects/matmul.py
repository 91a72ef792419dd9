"""Contractions: matmul (batched or not)."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible


class MatmulOp(Dynamo.Operation, name="matmul", traits=[Pure]):
    """Matrix product [M,K] x [K,N] -> [M,N], or batched [B,M,K] x [B,K,N] -> [B,M,N].

    Example:
      %c = "dynamo.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    """

    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        a, b, c = shape_of(self.lhs), shape_of(self.rhs), shape_of(self.out)
        _require(len(a) == len(b) == len(c) and len(a) in (2, 3), "operands must both be rank 2 or rank 3")
        _require(dims_compatible([a[-1]], [b[-2]]), f"contraction sizes differ ({a[-1]} vs {b[-2]})")
        _require(dims_compatible(a[:-1] + [b[-1]], c) and dims_compatible(a[:-2], b[:-2]), "result shape mismatch")
        _require(elem_of(self.lhs) == elem_of(self.rhs) == elem_of(self.out), "element types differ")
