"""Contractions, windows and gathers: matmul, conv (2-d/3-d), pool (2-d/3-d), gather, gather_along."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible, int_list


# ----------------------------------------------------------------------------- contractions, windows


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


class Conv2dOp(Dynamo.Operation, name="conv2d", traits=[Pure]):
    """Convolution over 2 or 3 spatial dims (the name predates 3-d): NC[D]HW input, FC[D]HW weight
    (C = in channels / groups); no bias (add it after). The spatial rank is the input's rank - 2.

    Example:
      %y = "dynamo.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
             dilation = array<i64: 1, 1>, groups = 1 : i64}
             : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
    """

    x: Operand[ir.RankedTensorType]
    weight: Operand[ir.RankedTensorType]
    stride: Any
    padding: Any
    dilation: Any
    groups: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, w, y = shape_of(self.x), shape_of(self.weight), shape_of(self.out)
        groups = ir.IntegerAttr(self.groups).value
        _require(len(x) == len(w) == len(y) and len(x) in (4, 5), "input, weight and result must be rank 4 or 5 (NC[D]HW/FC[D]HW)")
        _require(groups >= 1 and x[1] == w[1] * groups and w[0] % groups == 0, f"channels do not match groups={groups}")
        spatial = len(x) - 2
        for name in ("stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == spatial, f"{name} must have {spatial} entries")
        for i in range(spatial):
            k = (w[2 + i] - 1) * int_list(self.dilation)[i] + 1
            expect = (x[2 + i] + 2 * int_list(self.padding)[i] - k) // int_list(self.stride)[i] + 1
            _require(y[2 + i] == expect, f"spatial dim {i}: expected size {expect}, got {y[2 + i]}")
        _require(y[0] == x[0] and y[1] == w[0], "result batch/channels mismatch")


POOL_KINDS = ("max", "avg", "sum")


class Pool2dOp(Dynamo.Operation, name="pool2d", traits=[Pure]):
    """Max, average or sum pooling over 2 or 3 spatial dims (the name predates 3-d) of NC[D]HW
    (`kind` = "max" | "avg" | "sum"); avg divides by the window size, padding included
    (PyTorch's count_include_pad=True); sum leaves other divisors to the caller. Windows must fit
    the symmetrically padded input (pad the high side first for ceil_mode).

    Example:
      %y = "dynamo.pool2d"(%x) {kind = "max", kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>,
             padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>}
             : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    kernel: Any
    stride: Any
    padding: Any
    dilation: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, y = shape_of(self.x), shape_of(self.out)
        _require(ir.StringAttr(self.kind).value in POOL_KINDS, "kind must be max, avg or sum")
        _require(len(x) == len(y) and len(x) in (4, 5) and x[:2] == y[:2],
                 "input and result must be NC[D]HW with equal N, C")
        spatial = len(x) - 2
        for name in ("kernel", "stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == spatial, f"{name} must have {spatial} entries")
        k, s, p, d = (int_list(getattr(self, n)) for n in ("kernel", "stride", "padding", "dilation"))
        for i in range(spatial):
            reach = (y[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1
            _require(y[2 + i] >= 0 and reach <= x[2 + i] + 2 * p[i] or y[2 + i] == 0,
                     f"spatial dim {i}: {y[2 + i]} windows reach past the padded input")


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
