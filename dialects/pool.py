"""Pooling (max, avg, sum) over 2 or 3 spatial dims (NC[D]HW)."""

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, _verify_layout, as_nchw, shape_of, int_list


POOL_KINDS = ("max", "avg", "sum")


class Pool2dOp(Dynamo.Operation, name="pool2d", traits=[Pure]):
    """Max, average or sum pooling over 2 or 3 spatial dims (the name predates 3-d) of NC[D]HW
    (`kind` = "max" | "avg" | "sum"); avg divides by the window size, padding included
    (PyTorch's count_include_pad=True); sum leaves other divisors to the caller. Windows must fit
    the symmetrically padded input (pad the high side first for ceil_mode). With the optional
    attribute `layout = "nhwc"` (2-d only) input and result are channels-last, NHWC.

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
        _require(len(x) == len(y) and len(x) in (4, 5), "input and result must be rank 4 or 5")
        layout = _verify_layout(self, len(x))
        x, y = as_nchw(x, layout), as_nchw(y, layout)
        _require(x[:2] == y[:2], "input and result must have equal N, C")
        spatial = len(x) - 2
        for name in ("kernel", "stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == spatial, f"{name} must have {spatial} entries")
        k, s, p, d = (int_list(getattr(self, n)) for n in ("kernel", "stride", "padding", "dilation"))
        for i in range(spatial):
            reach = (y[2 + i] - 1) * s[i] + (k[i] - 1) * d[i] + 1
            _require(y[2 + i] >= 0 and reach <= x[2 + i] + 2 * p[i] or y[2 + i] == 0,
                     f"spatial dim {i}: {y[2 + i]} windows reach past the padded input")
