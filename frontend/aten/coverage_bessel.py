"""Orthogonal polynomials (torch.special.*_polynomial_*) and Bessel functions (i0, special.i0e,
special.bessel_j0, ...), imported as the ops of dialects/bessel.py."""

import torch

from ...dialects import special as bz
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


# aten op -> dynamo op. Computed in f64 and rounded: exact enough for f32/bf16/f16, not for f64.
BESSEL = {
    aten.i0: "bessel_i0", aten.special_i0e: "bessel_i0e", aten.special_i1: "bessel_i1",
    aten.special_i1e: "bessel_i1e", aten.special_modified_bessel_i0: "bessel_i0",
    aten.special_modified_bessel_i1: "bessel_i1", aten.special_modified_bessel_k0: "bessel_k0",
    aten.special_modified_bessel_k1: "bessel_k1", aten.special_scaled_modified_bessel_k0: "bessel_k0e",
    aten.special_scaled_modified_bessel_k1: "bessel_k1e", aten.special_bessel_j0: "bessel_j0",
    aten.special_bessel_j1: "bessel_j1", aten.special_bessel_y0: "bessel_y0",
    aten.special_bessel_y1: "bessel_y1", aten.special_spherical_bessel_j0: "spherical_bessel_j0",
    aten.special_airy_ai: "airy_ai",
}
BESSEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Ops whose eager f32 kernel is off by several ulps (special.i1: ~3e-4 at I1(8) ~ 400), more than
# their OpInfo tolerance allows (atol 1e-4, rtol 0): our correctly rounded result would not
# "match" eager, so f32 stays eager. (modified_bessel_i1 computes the same function within 2 ulps.)
EAGER_F32 = {aten.special_i1}


@import_rule(*BESSEL)
def _bessel(ctx, node):
    val = ctx.out_meta(node)
    if val.dtype not in BESSEL_DTYPES:
        raise Unsupported(f"{node.target} on {val.dtype} (computed in f64: not exact for f64)")
    if val.dtype == torch.float32 and node.target.overloadpacket in EAGER_F32:
        raise Unsupported(f"{node.target} on float32: eager's kernel is less accurate than its tolerance")
    x = ctx.cast(ctx.tensor(node.args[0]), val.dtype)
    cls = bz.BESSEL_CLASSES[BESSEL[node.target.overloadpacket]]
    return cls(x, out=ctx.type_like(x)).out
