"""Special functions (gamma, zeta, error-function family) and a few float utilities (hypot,
nextafter, signbit, angle) found missing by the OpInfo coverage sweep.

The special-function ops (dialects/special.py) compute in f64 inside their bodies, which makes
float32/bfloat16/float16 results correctly rounded or nearly so; float64 inputs would need more
care than those algorithms take, so they stay eager. The utilities are compositions of existing
ops (hypot: in f64; signbit/angle: exact in every type)."""

import math

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule

aten = torch.ops.aten

# Result dtypes whose values the f64 bodies compute accurately enough.
F64_COMPUTED = (torch.float32, torch.bfloat16, torch.float16)

SPECIAL_UNARY = {aten.lgamma: "lgamma", aten.digamma: "digamma", aten.erfinv: "erfinv",
                 aten.special_ndtri: "ndtri", aten.special_erfcx: "erfcx"}
SPECIAL_BINARY = {aten.special_zeta: "zeta", aten.igamma: "igamma", aten.igammac: "igammac"}


def _op_class(name: str) -> type:
    return dy.SPECIAL_UNARY_CLASSES.get(name) or dy.SPECIAL_BINARY_CLASSES[name]


def _float_result(ctx, node) -> tuple[torch.Tensor, list]:
    val = ctx.out_meta(node)
    if val.dtype not in F64_COMPUTED:
        raise Unsupported(f"{val.dtype} result (computed in f64: exact enough only for narrower floats)")
    return val, list(static_shape(val))


def _emit(ctx, name: str, *xs) -> ir.Value:
    return _op_class(name)(*xs, out=ctx.type_like(xs[0])).out


def _like(ctx, number, x) -> ir.Value:
    return ctx.broadcast(ctx.scalar(number, ctx.dtype_of(x)), ctx.shape_of(x))


def _compare(ctx, a, b, predicate: str) -> ir.Value:
    return dy.CompareOp(a, b, ir.StringAttr.get(predicate), out=ctx.type_like(a, torch.bool)).out


def _select(ctx, cond, a, b) -> ir.Value:
    return dy.SelectOp(cond, a, b, out=ctx.type_like(a)).out


# The ops see float32 for the half types (rounded back by a cast, as eager's kernels do): a
# bfloat16 body widened straight to f64 around scf loops once made LLVM call a compiler-rt
# routine (__truncsfbf2) the JIT does not have.
COMPUTE = torch.float32


@import_rule(*SPECIAL_UNARY)
def _special_unary(ctx, node):
    val, shape = _float_result(ctx, node)
    x = ctx.operand(node.args[0], COMPUTE, shape)
    return ctx.cast(_emit(ctx, SPECIAL_UNARY[node.target.overloadpacket], x), val.dtype)


@import_rule(*SPECIAL_BINARY)
def _special_binary(ctx, node):
    val, shape = _float_result(ctx, node)
    a, b = (ctx.operand(arg, COMPUTE, shape) for arg in node.args[:2])
    return ctx.cast(_emit(ctx, SPECIAL_BINARY[node.target.overloadpacket], a, b), val.dtype)


@import_rule(aten.polygamma)
def _polygamma(ctx, node):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 1. Eager computes n = 1 with its own
    trigamma kernel, whose values at +-inf differ from zeta's: 0 at +inf, NaN at -inf."""
    n, arg = node.args[0], node.args[1]
    if not isinstance(n, int) or n < 0:
        raise Unsupported(f"polygamma order {n!r}")
    val, shape = _float_result(ctx, node)
    # zeta * n! rounds twice: in float32, then once more to a half type
    x = ctx.operand(arg, COMPUTE, shape)
    if n == 0:
        return ctx.cast(_emit(ctx, "digamma", x), val.dtype)
    if n >= 4 and val.dtype != torch.float32:
        # eager's half-type kernel loses the cancelling terms +-2^(n+1) of zeta at negative
        # half-integers by more than the bfloat16/float16 tolerance (ours keeps them): checked
        # over every bfloat16 and float16 value in (-60, 60), n <= 3 agrees, n = 4 does not
        raise Unsupported(f"polygamma order {n} of {val.dtype}: eager's kernel is less accurate than its tolerance")
    factor = (-1) ** (n + 1) * math.factorial(n)
    if abs(factor) > 2 ** 24:
        raise Unsupported(f"polygamma order {n}: n! is not exact in float32")
    z = _emit(ctx, "zeta", _like(ctx, n + 1, x), x)
    y = ctx.emit("mul", z, _like(ctx, factor, x), out=ctx.type_like(x))
    return ctx.cast(_trigamma_as_eager(ctx, x, y) if n == 1 else y, val.dtype)


def _trigamma_as_eager(ctx, x, y):
    """Eager computes n = 1 with a float32 trigamma kernel: for x < 0 it reflects,
    psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x), with pi x rounded to float32. That rounding makes
    it differ from the exact value by more than its tolerance (and gives large finite values at
    negative integers), so x < 0 is computed the same way here, in float32; and it gives 0 at
    +inf where zeta(2, inf) is NaN."""
    f = lambda name, *xs: ctx.emit(name, *xs, out=ctx.type_like(xs[0]))
    s = f("sin", f("mul", x, _like(ctx, math.pi, x)))
    pole = f("div", _like(ctx, math.pi * math.pi, x), f("mul", s, s))
    reflected = f("sub", pole, _emit(ctx, "zeta", _like(ctx, 2.0, x), f("sub", _like(ctx, 1.0, x), x)))
    y = _select(ctx, _compare(ctx, x, _like(ctx, 0.0, x), "lt"), reflected, y)
    return _select(ctx, _compare(ctx, x, _like(ctx, math.inf, x), "eq"), _like(ctx, 0.0, x), y)


@import_rule(aten.hypot)
def _hypot(ctx, node):
    """sqrt(a^2 + b^2) in f64 (no overflow, one rounding); inf if either is infinite, even NaN."""
    val, shape = _float_result(ctx, node)
    a, b = (ctx.operand(arg, torch.float64, shape) for arg in node.args[:2])
    f64 = ctx.type_like(a)
    total = ctx.emit("add", ctx.emit("mul", a, a, out=f64), ctx.emit("mul", b, b, out=f64), out=f64)
    r = ctx.emit("sqrt", total, out=f64)
    is_inf = lambda v: ctx.emit("isinf", v, out=ctx.type_like(v, torch.bool))
    any_inf = ctx.emit("or", is_inf(a), is_inf(b), out=ctx.type_like(a, torch.bool))
    return ctx.cast(_select(ctx, any_inf, _like(ctx, math.inf, a), r), val.dtype)


@import_rule(aten.nextafter)
def _nextafter(ctx, node):
    """Bit-exact in every float type: a step of the bit pattern in the result's own type."""
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported(f"nextafter of {val.dtype}")
    shape = list(static_shape(val))
    a, b = (ctx.operand(arg, val.dtype, shape) for arg in node.args[:2])
    return _emit(ctx, "nextafter", a, b)


@import_rule(aten.signbit)
def _signbit(ctx, node):
    """The sign bit: copysign(1, x) < 0 for floats (sees -0.0 and -NaN), x < 0 for integers."""
    x = ctx.tensor(node.args[0])
    dtype = ctx.dtype_of(x)
    if dtype == torch.bool:
        return ctx.full(0, ctx.shape_of(x), torch.bool)
    if dtype.is_floating_point:
        x = ctx.emit("copysign", _like(ctx, 1.0, x), x, out=ctx.type_like(x))
    return _compare(ctx, x, _like(ctx, 0, x), "lt")


@import_rule(aten.angle)
def _angle(ctx, node):
    """Of a real x: pi if x < 0, else 0 (also for -0.0); NaN stays NaN."""
    val = ctx.out_meta(node)
    if val.dtype.is_complex or not val.dtype.is_floating_point:
        raise Unsupported(f"angle with a {val.dtype} result")
    x = ctx.operand(node.args[0], val.dtype, list(static_shape(val)))
    zero = _like(ctx, 0.0, x)
    y = _select(ctx, _compare(ctx, x, zero, "lt"), _like(ctx, math.pi, x), zero)
    return _select(ctx, ctx.emit("isnan", x, out=ctx.type_like(x, torch.bool)), x, y)
