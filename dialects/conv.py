"""Convolution over 2 or 3 spatial dims (NC[D]HW), grouped or not."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, _verify_layout, _verify_weight_layout, as_nchw, shape_of, int_list


class Conv2dOp(Dynamo.Operation, name="conv2d", traits=[Pure]):
    """Convolution over 2 or 3 spatial dims (the name predates 3-d): NC[D]HW input, FC[D]HW weight
    (C = in channels / groups); no bias (add it after). The spatial rank is the input's rank - 2.
    With the optional attribute `layout = "nhwc"` (2-d only) input and result are channels-last,
    NHWC; the weight stays FCHW unless `weight_layout = "fhwc"` says it is channels-last too. On bf16/f16 operands the sums accumulate in float32 and the
    result is rounded once to the half type (as cuDNN's kernels; see dialects/matmul.py).

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
        _require(len(x) == len(y) and len(x) in (4, 5), "input and result must be rank 4 or 5")
        layout = _verify_layout(self, len(x))
        _verify_forward(self, as_nchw(x, layout), as_nchw(w, _verify_weight_layout(self, len(w))), as_nchw(y, layout))


def _verify_forward(op, x, w, y) -> None:
    """The convolution's shapes (NC[D]HW input x, FC[D]HW weight w, result y) agree with the op's
    stride, padding, dilation and groups (for the gradient ops, y is the result's gradient)."""
    groups = ir.IntegerAttr(op.groups).value
    _require(len(x) == len(w) == len(y) and len(x) in (4, 5), "input, weight and result must be rank 4 or 5 (NC[D]HW/FC[D]HW)")
    _require(groups >= 1 and x[1] == w[1] * groups and w[0] % groups == 0, f"channels do not match groups={groups}")
    spatial = len(x) - 2
    stride, padding, dilation = (int_list(getattr(op, name)) for name in ("stride", "padding", "dilation"))
    _require(len(stride) == len(padding) == len(dilation) == spatial, f"stride, padding and dilation must have {spatial} entries")
    for i in range(spatial):
        expect = (x[2 + i] + 2 * padding[i] - (w[2 + i] - 1) * dilation[i] - 1) // stride[i] + 1
        _require(y[2 + i] == expect, f"spatial dim {i}: expected size {expect}, got {y[2 + i]}")
    _require(y[0] == x[0] and y[1] == w[0], "result batch/channels mismatch")


class ConvGradInputOp(Dynamo.Operation, name="conv_grad_input", traits=[Pure]):
    """The input gradient of `dynamo.conv2d` (NC[D]HW, any groups): given the gradient of the
    convolution's result and its weight, the gradient of its input, whose shape the result type
    gives (the forward's rounding down of the output size loses it). Half operands accumulate in
    float32 and round once, as conv2d's. A target runs it whole (cuDNN's backward on cuda) or
    as its generic rule: a convolution of the stride-dilated gradient with the flipped,
    transposed weight (lowering/rules/conv.py). With `layout = "nhwc"` (2-d only) the result's
    gradient and the input gradient are channels-last, as conv2d's input and result
    (and `weight_layout = "fhwc"`, as conv2d's).

    Example:
      %dx = "dynamo.conv_grad_input"(%dy, %w) {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
              dilation = array<i64: 1, 1>, groups = 1 : i64}
              : (tensor<8x16x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<8x3x32x32xf32>
    """

    grad: Operand[ir.RankedTensorType]
    weight: Operand[ir.RankedTensorType]
    stride: Any
    padding: Any
    dilation: Any
    groups: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        layout, w = _verify_layout(self, len(shape_of(self.out))), shape_of(self.weight)
        _verify_forward(self, as_nchw(shape_of(self.out), layout), as_nchw(w, _verify_weight_layout(self, len(w))),
                        as_nchw(shape_of(self.grad), layout))


class ConvGradWeightOp(Dynamo.Operation, name="conv_grad_weight", traits=[Pure]):
    """The weight gradient of `dynamo.conv2d` (NC[D]HW, any groups): given the gradient of the
    convolution's result and its input, the gradient of its weight (the result type's shape).
    Half operands accumulate in float32 and round once. A target runs it whole (cuDNN's backward
    on cuda) or as its generic rule: a convolution of the input by the gradient with batch and
    channels swapped, the forward stride becoming a dilation (lowering/rules/conv.py). With
    `layout = "nhwc"` (2-d only) the result's gradient and the input are channels-last.

    Example:
      %dw = "dynamo.conv_grad_weight"(%dy, %x) {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>,
              dilation = array<i64: 1, 1>, groups = 1 : i64}
              : (tensor<8x16x16x16xf32>, tensor<8x3x32x32xf32>) -> tensor<16x3x3x3xf32>
    """

    grad: Operand[ir.RankedTensorType]
    x: Operand[ir.RankedTensorType]
    stride: Any
    padding: Any
    dilation: Any
    groups: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        layout = _verify_layout(self, len(shape_of(self.x)))
        _verify_forward(self, as_nchw(shape_of(self.x), layout), shape_of(self.out),
                        as_nchw(shape_of(self.grad), layout))
