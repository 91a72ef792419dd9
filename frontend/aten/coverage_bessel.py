"""Orthogonal polynomials (torch.special.*_polynomial_*) and Bessel functions (i0, special.i0e,
special.bessel_j0, ...), imported as the ops of dialects/bessel.py."""

import torch

from ...dialects import bessel as bz
from ..importer import static_shape
from ..registry import Unsupported, import_rule

aten = torch.ops.aten

# aten op -> dynamo op name. Every overload (Tensor/Scalar x, Tensor/Scalar n) promotes both to
# the result's float dtype, as eager's kernel sees them.
POLYNOMIALS = {
    getattr(aten, f"special_{name}"): name for name in bz.POLYNOMIAL_OPS
}
# The polynomial bodies repeat eager's f32 operations exactly, its fused multiply-adds emulated
# in f64 (exact for f32 only); eager has no bf16/f16 kernel.
POLYNOMIAL_DTYPES = (torch.float32,)


@import_rule(*POLYNOMIALS)
def _polynomial(ctx, node):
    val = ctx.out_meta(node)
    if val.dtype not in POLYNOMIAL_DTYPES:
        raise Unsupported(f"{node.target} on {val.dtype}")
    shape = list(static_shape(val))
    x, n = (ctx.operand(a, val.dtype, shape) for a in node.args[:2])
    cls = bz.POLYNOMIAL_CLASSES[POLYNOMIALS[node.target.overloadpacket]]
    return cls(x, n, out=ctx.type_like(x)).out
