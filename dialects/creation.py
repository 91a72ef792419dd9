"""Tensor creation: constants (literals, fills) and iota (arange)."""

from typing import Any, Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, dims_compatible, shape_of, elem_of


class ConstantOp(Dynamo.Operation, name="constant", traits=[Pure]):
    """A tensor literal (a splat for fills).

    Example:
      %z = "dynamo.constant"() {value = dense<0.0> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
    """

    value: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(ir.DenseElementsAttr(self.value).type == self.out.type, "value type must equal the result type")


class IotaOp(Dynamo.Operation, name="iota", traits=[Pure]):
    """start + step * index along `dim` (torch.arange when rank 1). A result with dynamic dims
    reads their sizes off `like` (zero or one operand, of the result's shape; any element type).

    Example:
      %r = "dynamo.iota"(%start, %step) {dim = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}
             : (tensor<i64>, tensor<i64>) -> tensor<8xi64>
    """

    start: Operand[ir.RankedTensorType]
    step: Operand[ir.RankedTensorType]
    like: Sequence[Operand[ir.RankedTensorType]]
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(0 <= ir.IntegerAttr(self.dim).value < len(shape_of(self.out)), "dim out of range")
        _require(shape_of(self.start) == shape_of(self.step) == [], "start and step are 0-d tensors")
        _require(elem_of(self.start) == elem_of(self.step) == elem_of(self.out), "element types differ")
        _require(len(self.like) <= 1, "at most one `like` operand")
        dynamic = any(d == ir.ShapedType.get_dynamic_size() for d in shape_of(self.out))
        _require(not dynamic or len(self.like) == 1, "a dynamic result needs a `like` operand for its sizes")
        for like in self.like:
            _require(dims_compatible(shape_of(like), shape_of(self.out)), "`like` must have the result's shape")
