"""Scatters: writes whose target positions come from index tensors or a mask.

Each op returns a new tensor: a copy of `dest` with the updates applied in the serial order of
the update's iteration space (row-major), which is the order PyTorch's CPU kernels apply them in;
so duplicate targets end as eager's do (the last write wins, or the combines run in that order).
Indices may be negative (they wrap once, like eager's); they are taken modulo the dim size, so an
out-of-range index can never write outside the tensor (eager raises there instead).
"""

from typing import Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible, is_i1

# How an update combines with the value at its target (scatter_reduce's names; `assign` overwrites).
SCATTER_REDUCE_KINDS = ("assign", "sum", "prod", "mean", "amax", "amin")


def _is_int(value) -> bool:
    t = elem_of(value)
    return isinstance(t, ir.IntegerType) and not is_i1(t)


class IndexPutOp(Dynamo.Operation, name="index_put", traits=[Pure]):
    """dest[wrap(i0[b]), ..., wrap(ik[b]), r...] = values[b..., r...] (or += with accumulate = 1):
    the k index tensors (one shape B) address dest's k leading dims; values has shape B + the
    rest of dest's dims.

    Example (rows 2 and 0 of a 4x8 matrix, accumulating):
      %y = "dynamo.index_put"(%x, %v, %i) {accumulate = 1 : i64}
             : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    """

    dest: Operand[ir.RankedTensorType]
    values: Operand[ir.RankedTensorType]
    indices: Sequence[Operand[ir.RankedTensorType]]
    accumulate: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        dest, values, k = shape_of(self.dest), shape_of(self.values), len(self.indices)
        _require(k >= 1 and k <= len(dest), f"{k} index tensors for a rank-{len(dest)} dest")
        b = shape_of(self.indices[0])
        for i in self.indices:
            _require(_is_int(i), "indices must be integer tensors")
            _require(dims_compatible(shape_of(i), b), "index tensors must share one shape")
        _require(dims_compatible(values, b + dest[k:]), f"values must have shape {b} + {dest[k:]}, got {values}")
        _require(dims_compatible(shape_of(self.out), dest), "result takes dest's shape")
        _require(elem_of(self.values) == elem_of(self.dest) == elem_of(self.out), "element types differ")


class ScatterOp(Dynamo.Operation, name="scatter", traits=[Pure]):
    """torch.scatter_reduce along `dim`: for every position p of `index`, the target is p with
    p[dim] replaced by wrap(index[p]); src[p] is combined there with `reduce` (assign sum prod
    mean amax amin). With include_self = 0 the targets' old values are left out of the combine;
    mean divides by the number of combined values (positions never written keep dest's value).

    Example:
      %y = "dynamo.scatter"(%x, %i, %s) {dim = 0 : i64, reduce = "sum", include_self = 1 : i64}
             : (tensor<10x5xf32>, tensor<3x5xi64>, tensor<4x5xf32>) -> tensor<10x5xf32>
    """

    dest: Operand[ir.RankedTensorType]
    index: Operand[ir.RankedTensorType]
    src: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    reduce: ir.StringAttr
    include_self: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        dest, index, src = shape_of(self.dest), shape_of(self.index), shape_of(self.src)
        dim = ir.IntegerAttr(self.dim).value
        _require(ir.StringAttr(self.reduce).value in SCATTER_REDUCE_KINDS,
                 f"unknown reduce; expected one of {SCATTER_REDUCE_KINDS}")
        _require(len(dest) == len(index) == len(src), "dest, index and src must have one rank")
        _require(0 <= dim < len(dest), f"dim {dim} out of range")
        _require(_is_int(self.index), "index must be an integer tensor")
        # index may not exceed src anywhere, nor dest outside `dim` (eager's rule).
        _require(all(i <= s for i, s in zip(index, src)), f"index {index} larger than src {src}")
        _require(all(i <= d for n, (i, d) in enumerate(zip(index, dest)) if n != dim),
                 f"index {index} larger than dest {dest} outside dim {dim}")
        _require(dims_compatible(shape_of(self.out), dest), "result takes dest's shape")
        _require(elem_of(self.src) == elem_of(self.dest) == elem_of(self.out), "element types differ")


class MaskedScatterOp(Dynamo.Operation, name="masked_scatter", traits=[Pure]):
    """torch.masked_scatter: the k-th true position of `mask` (row-major; mask has dest's shape)
    takes source[k] (source is 1-d); the other positions keep dest's value.

    Example:
      %y = "dynamo.masked_scatter"(%x, %m, %s)
             : (tensor<4x8xf32>, tensor<4x8xi1>, tensor<32xf32>) -> tensor<4x8xf32>
    """

    dest: Operand[ir.RankedTensorType]
    mask: Operand[ir.RankedTensorType]
    source: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(is_i1(elem_of(self.mask)), "mask must be a tensor of i1")
        _require(dims_compatible(shape_of(self.mask), shape_of(self.dest)), "mask must have dest's shape")
        _require(len(shape_of(self.source)) == 1, "source must be 1-d (flatten it)")
        _require(dims_compatible(shape_of(self.out), shape_of(self.dest)), "result takes dest's shape")
        _require(elem_of(self.source) == elem_of(self.dest) == elem_of(self.out), "element types differ")
