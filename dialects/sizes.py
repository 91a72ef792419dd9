"""Size values in the `dynamo` dialect: the `index` scalars that dynamic dims are made of.

A compiled region gets the sizes it needs from two places: `dynamo.dim` reads one off a tensor
operand, and a function argument of type `index` carries a SymInt graph input (a size no input
tensor has as one of its dims, e.g. the T of a [B*T, C] input that is reshaped to [B, T, C]).
Arithmetic on sizes is upstream `arith` on `index` (muli, addi, floordivsi, remsi): it needs no
lowering, and canonicalization folds it. Ops that make dynamic dims take such values as their
`sizes` operands (`dynamo.reshape`, `dynamo.broadcast`); `dynamo.numel` multiplies sizes into a
0-d tensor (a mean's divisor), and `dynamo.size_tensor` makes one size a 0-d tensor (a SymInt
operand of an elementwise op: `x / (2 * s0)`).
"""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from typing import Any

from .base import Dynamo, VerifyError, _checked, _require, int_list, int_list_attribute, shape_of


class DimOp(Dynamo.Operation, name="dim", traits=[Pure]):
    """The size of `x`'s dim `dim`, as an index.

    Example:
      %t = "dynamo.dim"(%x) {dim = 1 : i64} : (tensor<2x?x64xf32>) -> index
    """

    x: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    out: Result[ir.IndexType]

    @_checked
    def verify_invariants(self):
        dim, rank = ir.IntegerAttr(self.dim).value, len(shape_of(self.x))
        if not 0 <= dim < rank:
            raise VerifyError(f"dim {dim} out of range for rank {rank}")


def dim_attr(dim: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)


class NumelOp(Dynamo.Operation, name="numel", traits=[Pure]):
    """The product of `x`'s sizes along `dims` as a 0-d tensor of the result's element type
    (a mean's divisor when some of those sizes are dynamic).

    Example:
      %n = "dynamo.numel"(%x) {dims = array<i64: 1>} : (tensor<4x?xf32>) -> tensor<f32>
    """

    x: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]
    dims: Any = int_list_attribute()

    @_checked
    def verify_invariants(self):
        _require(shape_of(self.out) == [], "result must be 0-d")
        _require(all(0 <= d < len(shape_of(self.x)) for d in int_list(self.dims)), "dims out of range")


class SizeTensorOp(Dynamo.Operation, name="size_tensor", traits=[Pure]):
    """The index `n` as a 0-d tensor of the result's element type, converted as torch converts
    a Python int (a SymInt operand of an elementwise op: `x / (x.shape[0] * 2)`).

    Example:
      %t = "dynamo.size_tensor"(%n) : (index) -> tensor<f32>
    """

    n: Operand[ir.IndexType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(shape_of(self.out) == [], "result must be 0-d")
