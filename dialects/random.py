"""Random numbers: counter-based bits (the distributions are built from elementwise ops)."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, elem_of, shape_of


class RandomBitsOp(Dynamo.Operation, name="random_bits", traits=[Pure]):
    """63 uniformly random bits per element, as a non-negative i64.

    Element `i` (its row-major linear index) is a hash of (seed, stream, i), so the op is pure:
    the same seed gives the same tensor, and distinct streams of one seed are independent.
    Non-negative values let signed shifts and remainders turn them into uniforms and ranges.

    Example:
      %b = "dynamo.random_bits"(%seed) {stream = 3 : i64} : (tensor<i64>) -> tensor<4x8xi64>
    """

    seed: Operand[ir.RankedTensorType]
    stream: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        i64 = ir.IntegerType.get_signless(64, context=self.seed.type.context)
        _require(shape_of(self.seed) == [] and elem_of(self.seed) == i64, "seed must be a 0-d tensor of i64")
        _require(elem_of(self.out) == i64, "result must be a tensor of i64")
        _require(all(s >= 0 for s in shape_of(self.out)), "result shape must be static")
