"""Gather-style reads: rows by index (gather), elements along a dim (gather_along)."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible


class GatherOp(Dynamo.Operation, name="gather", traits=[Pure]):
    """Row gather (embedding, index_select on dim 0): result[i..., j...] = x[idx[i...], j...].

    Example:
      %e = "dynamo.gather"(%table, %ids) : (tensor<100x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
    """

    x: Operand[ir.RankedTensorType]
    indices: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, idx, y = shape_of(self.x), shape_of(self.indices), shape_of(self.out)
        _require(isinstance(elem_of(self.indices), ir.IntegerType), "indices must be integers")
        _require(dims_compatible(idx + x[1:], y), f"result must be indices' shape {idx} + {x[1:]}")


class GatherAlongOp(Dynamo.Operation, name="gather_along", traits=[Pure]):
    """torch.gather: result[..., i, ...] = x[..., idx[..., i, ...], ...] along `dim`.

    Example:
      %y = "dynamo.gather_along"(%x, %idx) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
    """

    x: Operand[ir.RankedTensorType]
    indices: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(len(shape_of(self.x)) == len(shape_of(self.indices)), "x and indices must have one rank")
        _require(dims_compatible(shape_of(self.indices), shape_of(self.out)), "result takes the indices' shape")
