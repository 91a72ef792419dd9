"""Elementwise ATen ops: PyTorch's promotion made explicit (casts), broadcasts made explicit,
half types computed in float32 and rounded back (as PyTorch's kernels do). Below the table-driven
rules: elementwise ops composed from several dynamo ops (round(decimals), log10, erfc, frexp,
hypot, nextafter, signbit, angle, fma). Special functions (gamma, zeta, Bessel, ...) are special.py."""

import math

import torch
import torch._inductor.inductor_prims  # noqa: F401  (defines torch.ops.prims.fma, registered below)

from ...dialects import dynamo as dy
from ..importer import fake_value, static_shape
from ..registry import Unsupported, import_rule, overloads
from .args import bind
from .builders import compare, compute_dtype, emit_like, isinf, isnan, like, select

aten = torch.ops.aten

# ATen op -> dynamo elementwise op, from the elementwise spec (dialects/elementwise.py). Scalar
# overloads (add.Scalar, ...) are covered by the packet.
BINARY = {getattr(aten, a): e.name for e in dy.ELEMENTWISE.values() if e.arity == 2 for a in e.aten}
UNARY = {getattr(aten, a): e.name for e in dy.ELEMENTWISE.values() if e.arity == 1 for a in e.aten}
# Ops whose integer inputs are computed in the (floating) result type.
FLOAT_ONLY = {e.name for e in dy.ELEMENTWISE.values() if e.float_only}
# Ops that read a half-precision chain's float32 values (see Elementwise.continuous).
CONTINUOUS = {e.name for e in dy.ELEMENTWISE.values() if e.continuous}
COMPARE = {getattr(aten, p): p for p in dy.COMPARE_PREDICATES}  # the ATen ops are named as the predicates


def _out(ctx, node):
    val = ctx.out_meta(node)
    return val, list(static_shape(val))


def binary_op(ctx, node, name: str, a, b, result_dtype=None):
    val, shape = _out(ctx, node)
    out_dtype = result_dtype or val.dtype
    # bool add/mul are torch's logical or/and (the lowering has them); the rest are not defined
    if out_dtype == torch.bool and name in ("sub", "rem", "fmod", "atan2", "shl", "shr"):
        raise Unsupported(f"{name} on bool tensors")
    compute = compute_dtype(out_dtype)
    if name in ("and", "or", "xor") and node.target.__name__.startswith("logical"):
        compute = torch.bool
    fused = name in CONTINUOUS
    lhs, rhs = ctx.operand(a, compute, shape, fused=fused), ctx.operand(b, compute, shape, fused=fused)
    return ctx.rounded(ctx.emit(name, lhs, rhs, out=ctx.type_like(lhs)), out_dtype)


@import_rule(*BINARY)
def _binary(ctx, node):
    name = BINARY[node.target.overloadpacket]
    args = bind(node)
    a, b = args.leading(2)
    alpha = args.get("alpha", 1) if name in ("add", "sub") else 1
    if alpha != 1:
        if not isinstance(b, torch.fx.Node) and not isinstance(alpha, torch.fx.Node):
            b = b * alpha
        else:
            val, shape = _out(ctx, node)
            compute = compute_dtype(val.dtype)
            rhs = ctx.operand(b, compute, shape, fused=True)
            scaled = ctx.emit("mul", rhs, ctx.operand(alpha, compute, shape), out=ctx.type_like(rhs))
            lhs = ctx.operand(a, compute, shape, fused=True)
            return ctx.rounded(ctx.emit(name, lhs, scaled, out=ctx.type_like(lhs)), val.dtype)
    if _is_times_one(ctx, node, name, a, b):
        return ctx.tensor(a)
    return binary_op(ctx, node, name, a, b)


def _is_times_one(ctx, node, name, a, b) -> bool:
    """`x * 1` (what addmm's decomposition leaves in every linear layer) is exactly x for every
    float, NaN and -0 included, when it changes neither dtype nor shape."""
    if name != "mul" or type(b) not in (int, float) or b != 1 or not isinstance(a, torch.fx.Node):
        return False
    val, x = ctx.out_meta(node), fake_value(a)
    return isinstance(x, torch.Tensor) and x.dtype == val.dtype and tuple(x.shape) == tuple(val.shape)


@import_rule(aten.div, aten.true_divide)  # true_divide: div without a rounding mode (GPT-2's scaling with symbolic sizes)
def _div(ctx, node):
    a = bind(node)
    mode = a.get("rounding_mode")
    name = {None: "div", "floor": "floordiv", "trunc": "truncdiv"}.get(mode)
    val = ctx.out_meta(node)
    if mode is None and not val.dtype.is_floating_point:
        raise Unsupported("true division with an integer result")
    return binary_op(ctx, node, name, *a.leading(2))


@import_rule(aten.pow)
def _pow(ctx, node):
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("integer pow")
    base, exponent = bind(node).leading(2)
    if not isinstance(exponent, torch.fx.Node) and exponent in _POW_AS_PRODUCT:
        return _power_product(ctx, node, base, int(exponent))
    return binary_op(ctx, node, "pow", base, exponent)


# Exponents eager's CPU pow computes as products ((x*x)*x), as we do: exact where powf is not,
# and a loop of multiplies vectorizes where a libm powf call per element does not (GPT-2's gelu_new).
_POW_AS_PRODUCT = (2, 3)


def _power_product(ctx, node, base, exponent: int):
    val, shape = _out(ctx, node)
    x = ctx.operand(base, compute_dtype(val.dtype), shape, fused=True)
    product = x
    for _ in range(exponent - 1):
        product = ctx.emit("mul", product, x, out=ctx.type_like(x))
    return ctx.rounded(product, val.dtype)


# A packet stands for all its overloads; round.decimals has its own rule (_round_decimals).
_UNARY_OVERLOADS = [o for packet in UNARY for o in overloads(packet) if o is not aten.round.decimals]


@import_rule(*_UNARY_OVERLOADS)
def _unary(ctx, node):
    name = UNARY[node.target.overloadpacket]
    val, shape = _out(ctx, node)
    compute = compute_dtype(val.dtype)
    x = ctx.operand(bind(node).first, compute, shape, fused=name in CONTINUOUS)
    if name in ("abs", "neg", "relu", "sign") and val.dtype == torch.bool:
        raise Unsupported(f"{name} on bool")
    return ctx.rounded(ctx.emit(name, x, out=ctx.type_like(x)), val.dtype)


@import_rule(aten.logical_not)
def _logical_not(ctx, node):
    _, shape = _out(ctx, node)
    x = ctx.operand(bind(node).first, torch.bool, shape)
    return ctx.emit("not", x, out=ctx.type_like(x))


@import_rule(aten.isnan, aten.isinf)
def _float_predicate(ctx, node):
    x = ctx.tensor(bind(node).first)
    compute = compute_dtype(ctx.dtype_of(x))
    x = ctx.cast(x, compute)
    name = "isnan" if node.target.overloadpacket is aten.isnan else "isinf"
    return ctx.emit(name, x, out=ctx.type_like(x, torch.bool))


@import_rule(aten.gelu)
def _gelu(ctx, node):
    a = bind(node)
    val, shape = _out(ctx, node)
    x = ctx.operand(a.self, compute_dtype(val.dtype), shape, fused=True)
    name = "gelu_tanh" if a.approximate == "tanh" else "gelu"
    return ctx.rounded(ctx.emit(name, x, out=ctx.type_like(x)), val.dtype)


@import_rule(*COMPARE)
def _compare(ctx, node):
    a, b = bind(node).leading(2)
    common = compute_dtype(torch.result_type(fake_value(a), fake_value(b)))
    _, shape = _out(ctx, node)
    lhs, rhs = ctx.operand(a, common, shape), ctx.operand(b, common, shape)
    pred = COMPARE[node.target.overloadpacket]
    return compare(ctx, lhs, rhs, pred)


@import_rule(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx, node):
    cond, a, b = bind(node).leading(3)
    val, shape = _out(ctx, node)
    compute = val.dtype
    c = ctx.operand(cond, torch.bool, shape)
    lhs, rhs = ctx.operand(a, compute, shape), ctx.operand(b, compute, shape)
    return select(ctx, c, lhs, rhs)


@import_rule(aten.clamp, aten.clamp_min, aten.clamp_max)
def _clamp(ctx, node):
    val, shape = _out(ctx, node)
    compute = compute_dtype(val.dtype)
    a = bind(node)  # clamp(min=, max=), clamp_min(min), clamp_max(max)
    lo, hi = a.get("min"), a.get("max")
    x = ctx.operand(a.self, compute, shape, fused=True)
    if lo is not None:
        x = ctx.emit("max", x, ctx.operand(lo, compute, shape, fused=True), out=ctx.type_like(x))
    if hi is not None:
        x = ctx.emit("min", x, ctx.operand(hi, compute, shape, fused=True), out=ctx.type_like(x))
    return ctx.rounded(x, val.dtype)


@import_rule(aten._to_copy, aten.to, aten.clone, aten.alias, aten.lift_fresh_copy, aten.detach)
def _copy_like(ctx, node):
    """Value semantics: a copy or alias is the value itself, cast to the result's dtype."""
    x = bind(node).self
    val, src = ctx.out_meta(node), fake_value(x)
    if isinstance(src, torch.Tensor) and src.device.type != val.device.type:
        raise Unsupported("device transfer")
    return ctx.cast(ctx.tensor(x), val.dtype)


@import_rule(torch.ops.prims.convert_element_type.default)
def _convert_element_type(ctx, node):
    """The cast prims.var's decomposition ends with (var of a bf16 tensor: f32 -> bf16)."""
    return ctx.cast(ctx.tensor(bind(node).a), ctx.out_meta(node).dtype)


# ----------------------------------------------------------------------------- composed elementwise ops


@import_rule(aten.round.decimals)
def _round_decimals(ctx, node):
    """ATen's kernel: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d < 0."""
    a = bind(node)
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("round(decimals) of an integer tensor")
    x = ctx.cast(ctx.tensor(a.self), compute_dtype(val.dtype))
    ten = like(ctx, 10.0 ** abs(a.decimals), x)
    first, second = ("mul", "div") if a.decimals >= 0 else ("div", "mul")
    y = emit_like(ctx, second, emit_like(ctx, "round", emit_like(ctx, first, x, ten)), ten)
    return ctx.cast(y, val.dtype)


# op -> (dynamo unary op, constant factor applied after it)
SCALED_UNARY = {aten.log10: ("log", 1 / math.log(10))}


@import_rule(*SCALED_UNARY)
def _scaled_unary(ctx, node):
    val = ctx.out_meta(node)
    name, factor = SCALED_UNARY[node.target.overloadpacket]
    x = ctx.cast(ctx.tensor(bind(node).self), compute_dtype(val.dtype))
    return ctx.cast(emit_like(ctx, "mul", emit_like(ctx, name, x), like(ctx, factor, x)), val.dtype)


@import_rule(aten.erfc)
def _erfc(ctx, node):
    val = ctx.out_meta(node)
    compute = compute_dtype(val.dtype)
    if compute == torch.float32 and val.dtype == torch.float32:
        # 1 - erf(x) cancels catastrophically for large x; compute in f64 and round back.
        compute = torch.float64
    x = ctx.cast(ctx.tensor(bind(node).self), compute)
    return ctx.cast(emit_like(ctx, "sub", like(ctx, 1.0, x), emit_like(ctx, "erf", x)), val.dtype)


@import_rule(torch.ops.prims.frexp.default)
def _frexp(ctx, node):
    """x = m * 2^e with 0.5 <= |m| < 1, and (x, 0) for 0, inf and NaN, as eager.

    In f64, floor(log2|x|) + 1 is the exponent up to one step either way (log2 rounds near
    powers of two), which one compare on the scaled mantissa corrects; dividing by a power of
    two is exact, so the mantissa is exact too."""
    mantissa_meta, exponent_meta = ctx.out_meta(node, 0), ctx.out_meta(node, 1)
    x = ctx.cast(ctx.tensor(bind(node).self), torch.float64)
    f = lambda name, *xs: emit_like(ctx, name, *xs)  # noqa: E731
    a = f("abs", x)
    one = like(ctx, 1.0, a)
    finite_nonzero = f("and", compare(ctx, a, like(ctx, 0.0, a), "gt"), compare(ctx, a, like(ctx, math.inf, a), "lt"))
    safe = select(ctx, finite_nonzero, a, one)
    e = f("add", f("floor", f("log2", safe)), one)
    m = f("div", safe, f("exp2", e))
    too_big = ctx.cast(compare(ctx, m, one, "ge"), torch.float64)
    too_small = ctx.cast(compare(ctx, m, like(ctx, 0.5, m), "lt"), torch.float64)
    e = f("sub", f("add", e, too_big), too_small)
    m = f("copysign", f("div", safe, f("exp2", e)), x)
    mantissa = select(ctx, finite_nonzero, m, x)
    exponent = select(ctx, finite_nonzero, e, like(ctx, 0.0, e))
    return ctx.cast(mantissa, mantissa_meta.dtype), ctx.cast(exponent, exponent_meta.dtype)


# Result dtypes hypot computes exactly enough in f64.
HYPOT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@import_rule(aten.hypot)
def _hypot(ctx, node):
    """sqrt(a^2 + b^2) in f64 (no overflow, one rounding); inf if either is infinite, even NaN."""
    a = bind(node)
    val = ctx.out_meta(node)
    if val.dtype not in HYPOT_DTYPES:
        raise Unsupported(f"{val.dtype} result (computed in f64: exact enough only for narrower floats)")
    shape = list(static_shape(val))
    x, y = ctx.operand(a.self, torch.float64, shape), ctx.operand(a.other, torch.float64, shape)
    total = emit_like(ctx, "add", emit_like(ctx, "mul", x, x), emit_like(ctx, "mul", y, y))
    r = emit_like(ctx, "sqrt", total)
    any_inf = emit_like(ctx, "or", isinf(ctx, x), isinf(ctx, y))
    return ctx.cast(select(ctx, any_inf, like(ctx, math.inf, x), r), val.dtype)


@import_rule(aten.nextafter)
def _nextafter(ctx, node):
    """Bit-exact in every float type: a step of the bit pattern in the result's own type."""
    a = bind(node)
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported(f"nextafter of {val.dtype}")
    shape = list(static_shape(val))
    x, y = ctx.operand(a.self, val.dtype, shape), ctx.operand(a.other, val.dtype, shape)
    return dy.SPECIAL_BINARY_CLASSES["nextafter"](x, y, out=ctx.type_like(x)).out


@import_rule(aten.signbit)
def _signbit(ctx, node):
    """The sign bit: copysign(1, x) < 0 for floats (sees -0.0 and -NaN), x < 0 for integers."""
    x = ctx.tensor(bind(node).self)
    dtype = ctx.dtype_of(x)
    if dtype == torch.bool:
        return ctx.full(0, ctx.shape_of(x), torch.bool)
    if dtype.is_floating_point:
        x = emit_like(ctx, "copysign", like(ctx, 1.0, x), x)
    return compare(ctx, x, like(ctx, 0, x), "lt")


@import_rule(aten.angle)
def _angle(ctx, node):
    """Of a real x: pi if x < 0, else 0 (also for -0.0); NaN stays NaN."""
    val = ctx.out_meta(node)
    if val.dtype.is_complex or not val.dtype.is_floating_point:
        raise Unsupported(f"angle with a {val.dtype} result")
    x = ctx.operand(bind(node).self, val.dtype, list(static_shape(val)))
    zero = like(ctx, 0.0, x)
    y = select(ctx, compare(ctx, x, zero, "lt"), like(ctx, math.pi, x), zero)
    return select(ctx, isnan(ctx, x), x, y)


@import_rule(torch.ops.prims.fma.default)
def _fma(ctx, node):
    """a * b + c (from lerp's decomposition); rounded twice, within the optimizers' tolerance."""
    a = bind(node)
    val = ctx.out_meta(node)
    compute, shape = compute_dtype(val.dtype), list(static_shape(val))
    x, y, z = (ctx.operand(v, compute, shape) for v in (a.a, a.b, a.c))
    return ctx.cast(emit_like(ctx, "add", emit_like(ctx, "mul", x, y), z), val.dtype)


# ----------------------------------------------------------------------------- decompositions


def _threshold_backward(grad_output, self, threshold):
    """eager's kernel: grad_output where self > threshold, else 0, in the dtype both promote to,
    self compared in it with threshold converted to it (an integer dtype truncates, as
    Scalar.to<int64_t>). torch's own decomposition keeps grad's dtype (int64 grad and float self
    gave int64) and compares an integer self with the float threshold."""
    dtype = torch.result_type(grad_output, self)
    if not dtype.is_floating_point:
        threshold = int(threshold)
    return torch.where(self.to(dtype) <= threshold, 0, grad_output.to(dtype))


def decompositions() -> dict:
    """Ours, where core ATen's differ from eager (backend.decompositions applies them last)."""
    return {aten.threshold_backward.default: _threshold_backward}
