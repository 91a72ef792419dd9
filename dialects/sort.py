"""Sorting: dynamo.sort (values and their source indices along one dim)."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible


class SortOp(Dynamo.Operation, name="sort", traits=[Pure]):
    """Stable sort along `dim`: `values` is x sorted (ascending, or descending when `descending`
    is nonzero), `indices` (i64) the position along `dim` each value came from. Equal values keep
    their input order; NaN sorts as the largest value (last ascending, first descending), as in
    torch.sort(stable=True).

    Example:
      %v, %i = "dynamo.sort"(%x) {dim = 1 : i64, descending = 0 : i64}
             : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
    """

    x: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    descending: ir.IntegerAttr
    values: Result[ir.RankedTensorType]
    indices: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, dim = shape_of(self.x), ir.IntegerAttr(self.dim).value
        _require(0 <= dim < len(src), f"dim {dim} out of range for rank {len(src)}")
        _require(dims_compatible(src, shape_of(self.values)) and elem_of(self.values) == elem_of(self.x),
                 "values must have the operand's type")
        _require(dims_compatible(src, shape_of(self.indices)), "indices must have the operand's shape")
        _require(str(elem_of(self.indices)) == "i64", "indices must be i64")
