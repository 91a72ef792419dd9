"""Convolution over 2 or 3 spatial dims (NC[D]HW), grouped or not."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, _verify_layout, as_nchw, shape_of, int_list


class Conv2dOp(Dynamo.Operation, name="conv2d", traits=[Pure]):
    """Convolution over 2 or 3 spatial dims (the name predates 3-d): NC[D]HW input, FC[D]HW weight
    (C = in channels / groups); no bias (add it after). The spatial rank is the input's rank - 2.
    With the optional attribute `layout = "nhwc"` (2-d only) input and result are channels-last,
    NHWC; the weight stays FCHW. On bf16/f16 operands the sums accumulate in float32 and the
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
        groups = ir.IntegerAttr(self.groups).value
        _require(len(x) == len(w) == len(y) and len(x) in (4, 5), "input, weight and result must be rank 4 or 5 (NC[D]HW/FC[D]HW)")
        layout = _verify_layout(self, len(x))
        x, y = as_nchw(x, layout), as_nchw(y, layout)
        _require(groups >= 1 and x[1] == w[1] * groups and w[0] % groups == 0, f"channels do not match groups={groups}")
        spatial = len(x) - 2
        for name in ("stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == spatial, f"{name} must have {spatial} entries")
        for i in range(spatial):
            k = (w[2 + i] - 1) * int_list(self.dilation)[i] + 1
            expect = (x[2 + i] + 2 * int_list(self.padding)[i] - k) // int_list(self.stride)[i] + 1
            _require(y[2 + i] == expect, f"spatial dim {i}: expected size {expect}, got {y[2 + i]}")
        _require(y[0] == x[0] and y[1] == w[0], "result batch/channels mismatch")
