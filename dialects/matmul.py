"""Contractions: matmul (batched or not)."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible


class MatmulOp(Dynamo.Operation, name="matmul", traits=[Pure]):
    """Matrix product [M,K] x [K,N] -> [M,N], or batched [B,M,K] x [B,K,N] -> [B,M,N].

    On bf16/f16 operands the products accumulate in float32 and each result element is rounded
    once to the half type: what cuBLAS and every tensor-core kernel compute, so a target may hand
    the op to them as it is, and one without fast half kernels widens it first
    (codegen/contraction_precision.py). Half operands with a float32 result give the float32
    sums themselves, unrounded: the product of two widened half tensors, which tensor cores
    compute exactly so (codegen/cuda/widened_matmuls.py). A float32 matmul follows torch's
    float32 matmul precision (TF32 or not) wherever a target runs it through torch.

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
        _require(elem_of(self.lhs) == elem_of(self.rhs), "operand element types differ")
        _require(elem_of(self.out) == elem_of(self.lhs)
                 or (isinstance(elem_of(self.lhs), (ir.BF16Type, ir.F16Type)) and isinstance(elem_of(self.out), ir.F32Type)),
                 "the result's element type must be the operands' (or float32, for half operands)")
