"""Reductions: dynamo.reduce and dynamo.arg_reduce."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible, int_list


# ----------------------------------------------------------------------------- reductions

REDUCE_KINDS = ("sum", "prod", "max", "min", "any", "all")


class ReduceOp(Dynamo.Operation, name="reduce", traits=[Pure]):
    """Reduces `dims` away with `kind` (sum prod max min any all); max/min propagate NaN.

    Example (row sums):
      %y = "dynamo.reduce"(%x) {kind = "sum", dims = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    dims: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out, dims = shape_of(self.x), shape_of(self.out), int_list(self.dims)
        _require(ir.StringAttr(self.kind).value in REDUCE_KINDS, f"unknown kind; expected one of {REDUCE_KINDS}")
        _require(dims == sorted(set(dims)) and all(0 <= d < len(src) for d in dims), f"bad dims {dims}")
        kept = [s for i, s in enumerate(src) if i not in dims]
        _require(dims_compatible(kept, out), f"result shape {out} must be the operand's without dims {dims}")
        _require(elem_of(self.x) == elem_of(self.out), "reduce keeps the element type; cast first")


class ArgReduceOp(Dynamo.Operation, name="arg_reduce", traits=[Pure]):
    """Index (i64) of the first max (`kind = "max"`) or min along `dim`, which is removed.

    Example:
      %i = "dynamo.arg_reduce"(%x) {kind = "max", dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out, dim = shape_of(self.x), shape_of(self.out), ir.IntegerAttr(self.dim).value
        _require(ir.StringAttr(self.kind).value in ("max", "min"), "kind must be max or min")
        _require(0 <= dim < len(src) and dims_compatible(src[:dim] + src[dim + 1:], out), "result shape mismatch")
        _require(str(elem_of(self.out)) == "i64", "result must be i64")
