"""Special functions: gamma family (lgamma, digamma, polygamma), zeta, incomplete gamma, erfinv,
ndtri, erfcx, Bessel functions (i0, special.i0e, special.bessel_j0, ...) and orthogonal
polynomials (torch.special.*_polynomial_*): the special-function ops of the dialect.

The special-function ops compute in f64 inside their bodies, which makes float32/bfloat16/float16
results correctly rounded or nearly so; float64 inputs would need more care than those
algorithms take, so they stay eager.
"""

import math

import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import compare, emit_like, like, select

aten = torch.ops.aten

# Result dtypes whose values the f64 bodies compute accurately enough.
F64_COMPUTED = (torch.float32, torch.bfloat16, torch.float16)

SPECIAL_UNARY = {aten.lgamma: "lgamma", aten.digamma: "digamma", aten.erfinv: "erfinv",
                 aten.special_ndtri: "ndtri", aten.special_erfcx: "erfcx"}
SPECIAL_BINARY = {aten.special_zeta: "zeta", aten.igamma: "igamma", aten.igammac: "igammac"}


def _special(ctx, name: str, *xs):
    """The special-function op `name` (dialects/special.py) with its first operand's type."""
    cls = dy.SPECIAL_UNARY_CLASSES.get(name) or dy.SPECIAL_BINARY_CLASSES[name]
    return cls(*xs, out=ctx.type_like(xs[0])).out


def _float_result(ctx, node) -> tuple[torch.Tensor, list]:
    val = ctx.out_meta(node)
    if val.dtype not in F64_COMPUTED:
        raise Unsupported(f"{val.dtype} result (computed in f64: exact enough only for narrower floats)")
    return val, list(static_shape(val))


# The ops see float32 for the half types (rounded back by a cast, as eager's kernels do): a
# bfloat16 body widened straight to f64 around scf loops once made LLVM call a compiler-rt
# routine (__truncsfbf2) the JIT does not have.
COMPUTE = torch.float32


@import_rule(*SPECIAL_UNARY)
def _special_unary(ctx, node):
    val, shape = _float_result(ctx, node)
    x = ctx.operand(bind(node).first, COMPUTE, shape)
    return ctx.cast(_special(ctx, SPECIAL_UNARY[node.target.overloadpacket], x), val.dtype)


@import_rule(*SPECIAL_BINARY)
def _special_binary(ctx, node):
    a = bind(node)
    val, shape = _float_result(ctx, node)
    x, y = ctx.operand(a.self, COMPUTE, shape), ctx.operand(a.other, COMPUTE, shape)
    return ctx.cast(_special(ctx, SPECIAL_BINARY[node.target.overloadpacket], x, y), val.dtype)


@import_rule(aten.polygamma)
def _polygamma(ctx, node):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1. Eager computes n = 1 with its own
    trigamma kernel, whose values at +-inf differ from zeta's: 0 at +inf, NaN at -inf."""
    a = bind(node)
    n = a.n
    if not isinstance(n, int) or n < 0:
        raise Unsupported(f"polygamma order {n!r}")
    val, shape = _float_result(ctx, node)
    # zeta * n! rounds twice: in float32, then once more to a half type
    x = ctx.operand(a.self, COMPUTE, shape)
    if n == 0:
        return ctx.cast(_special(ctx, "digamma", x), val.dtype)
    if n >= 4 and val.dtype != torch.float32:
        # eager's half-type kernel loses the cancelling terms +-2^(n+1) of zeta at negative
        # half-integers by more than the bfloat16/float16 tolerance (ours keeps them): checked
        # over every bfloat16 and float16 value in (-60, 60), n <= 3 agrees, n = 4 does not
        raise Unsupported(f"polygamma order {n} of {val.dtype}: eager's kernel is less accurate than its tolerance")
    factor = (-1) ** (n + 1) * math.factorial(n)
    if abs(factor) > 2 ** 24:
        raise Unsupported(f"polygamma order {n}: n! is not exact in float32")
    z = _special(ctx, "zeta", like(ctx, n + 1, x), x)
    y = emit_like(ctx, "mul", z, like(ctx, factor, x))
    return ctx.cast(_trigamma_as_eager(ctx, x, y) if n == 1 else y, val.dtype)


def _trigamma_as_eager(ctx, x, y):
    """Eager computes n = 1 with a float32 trigamma kernel: for x < 0 it reflects,
    psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x), with pi x rounded to float32. That rounding makes
    it differ from the exact value by more than its tolerance (and gives large finite values at
    negative integers), so x < 0 is computed the same way here, in float32; and it gives 0 at
    +inf where zeta(2, inf) is NaN."""
    f = lambda name, *xs: emit_like(ctx, name, *xs)  # noqa: E731
    s = f("sin", f("mul", x, like(ctx, math.pi, x)))
    pole = f("div", like(ctx, math.pi * math.pi, x), f("mul", s, s))
    reflected = f("sub", pole, _special(ctx, "zeta", like(ctx, 2.0, x), f("sub", like(ctx, 1.0, x), x)))
    y = select(ctx, compare(ctx, x, like(ctx, 0.0, x), "lt"), reflected, y)
    return select(ctx, compare(ctx, x, like(ctx, math.inf, x), "eq"), like(ctx, 0.0, x), y)


# ----------------------------------------------------------------------------- Bessel functions, polynomials

# aten op -> dynamo op name. Every overload (Tensor/Scalar x, Tensor/Scalar n) promotes both to
# the result's float dtype, as eager's kernel sees them.
POLYNOMIALS = {
    getattr(aten, f"special_{name}"): name for name in dy.POLYNOMIAL_OPS
}
# The polynomial bodies repeat eager's f32 operations exactly, its fused multiply-adds emulated
# in f64 (exact for f32 only); eager has no bf16/f16 kernel.
POLYNOMIAL_DTYPES = (torch.float32,)


@import_rule(*POLYNOMIALS)
def _polynomial(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    if val.dtype not in POLYNOMIAL_DTYPES:
        raise Unsupported(f"{node.target} on {val.dtype}")
    shape = list(static_shape(val))
    x, n = ctx.operand(a.x, val.dtype, shape), ctx.operand(a.n, val.dtype, shape)
    cls = dy.POLYNOMIAL_CLASSES[POLYNOMIALS[node.target.overloadpacket]]
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
    x = ctx.cast(ctx.tensor(bind(node).first), val.dtype)
    cls = dy.BESSEL_CLASSES[BESSEL[node.target.overloadpacket]]
    return cls(x, out=ctx.type_like(x)).out
