"""Elementwise ATen ops: PyTorch's promotion made explicit (casts), broadcasts made explicit,
half types computed in float32 and rounded back (as PyTorch's kernels do)."""

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..dtypes import UPCAST_DTYPES
from ..importer import fake_value, static_shape
from ..registry import Unsupported, import_rule

aten = torch.ops.aten

# ATen op -> dynamo binary op. Scalar overloads (add.Scalar, ...) are covered by the packet.
BINARY = {
    aten.add: "add", aten.sub: "sub", aten.mul: "mul", aten.maximum: "max", aten.minimum: "min",
    aten.fmax: "fmax", aten.fmin: "fmin", aten.remainder: "rem", aten.fmod: "fmod", aten.atan2: "atan2",
    aten.bitwise_and: "and", aten.bitwise_or: "or", aten.bitwise_xor: "xor", aten.logical_and: "and",
    aten.logical_or: "or", aten.logical_xor: "xor", aten.copysign: "copysign",
    aten.bitwise_left_shift: "shl", aten.bitwise_right_shift: "shr",
}
UNARY = {
    aten.neg: "neg", aten.abs: "abs", aten.exp: "exp", aten.exp2: "exp2", aten.expm1: "expm1",
    aten.log: "log", aten.log2: "log2", aten.log1p: "log1p", aten.sqrt: "sqrt", aten.rsqrt: "rsqrt",
    aten.reciprocal: "reciprocal", aten.sin: "sin", aten.cos: "cos", aten.tan: "tan", aten.tanh: "tanh",
    aten.atan: "atan", aten.asin: "asin", aten.acos: "acos", aten.sinh: "sinh", aten.cosh: "cosh",
    aten.asinh: "asinh", aten.acosh: "acosh", aten.atanh: "atanh", aten.erf: "erf",
    aten.sigmoid: "sigmoid", aten.relu: "relu", aten.floor: "floor", aten.ceil: "ceil",
    aten.round: "round", aten.trunc: "trunc", aten.sign: "sign", aten.bitwise_not: "not",
}
# Ops whose integer inputs are computed in the (floating) result type.
FLOAT_ONLY = {"exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
              "tan", "tanh", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erf",
              "sigmoid", "atan2", "pow", "div"}
# Ops whose result moves by about a rounding error when an input does: they read a half-precision
# chain's float32 values (ImportContext.rounded). Rounding, comparing, sign and remainder ops read
# the rounded values, as eager does: one rounding can move their result by a whole unit.
CONTINUOUS = {"add", "sub", "mul", "div", "max", "min", "fmax", "fmin", "atan2", "pow", "neg", "abs",
              "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
              "tan", "tanh", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "erf",
              "sigmoid", "relu", "gelu", "gelu_tanh"}
COMPARE = {aten.eq: "eq", aten.ne: "ne", aten.lt: "lt", aten.le: "le", aten.gt: "gt", aten.ge: "ge"}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return UPCAST_DTYPES.get(dtype, dtype)


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


def _alpha(node):
    return node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)


@import_rule(*BINARY)
def _binary(ctx, node):
    name = BINARY[node.target.overloadpacket]
    a, b = node.args[0], node.args[1]
    alpha = _alpha(node) if name in ("add", "sub") else 1
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


@import_rule(aten.div)
def _div(ctx, node):
    mode = node.kwargs.get("rounding_mode")
    name = {None: "div", "floor": "floordiv", "trunc": "truncdiv"}.get(mode)
    val = ctx.out_meta(node)
    if mode is None and not val.dtype.is_floating_point:
        raise Unsupported("true division with an integer result")
    return binary_op(ctx, node, name, node.args[0], node.args[1])


@import_rule(aten.pow)
def _pow(ctx, node):
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("integer pow")
    base, exponent = node.args[0], node.args[1]
    if exponent == 2:  # x*x is exact where powf is not
        return binary_op(ctx, node, "mul", base, base)
    return binary_op(ctx, node, "pow", base, exponent)


@import_rule(*UNARY)
def _unary(ctx, node):
    name = UNARY[node.target.overloadpacket]
    val, shape = _out(ctx, node)
    compute = compute_dtype(val.dtype)
    x = ctx.operand(node.args[0], compute, shape, fused=name in CONTINUOUS)
    if name in ("abs", "neg", "relu", "sign") and val.dtype == torch.bool:
        raise Unsupported(f"{name} on bool")
    return ctx.rounded(ctx.emit(name, x, out=ctx.type_like(x)), val.dtype)


@import_rule(aten.logical_not)
def _logical_not(ctx, node):
    _, shape = _out(ctx, node)
    x = ctx.operand(node.args[0], torch.bool, shape)
    return ctx.emit("not", x, out=ctx.type_like(x))


@import_rule(aten.isnan, aten.isinf)
def _float_predicate(ctx, node):
    x = ctx.tensor(node.args[0])
    compute = compute_dtype(ctx.dtype_of(x))
    x = ctx.cast(x, compute)
    name = "isnan" if node.target.overloadpacket is aten.isnan else "isinf"
    return ctx.emit(name, x, out=ctx.type_like(x, torch.bool))


@import_rule(aten.gelu)
def _gelu(ctx, node):
    approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    val, shape = _out(ctx, node)
    x = ctx.operand(node.args[0], compute_dtype(val.dtype), shape, fused=True)
    name = "gelu_tanh" if approximate == "tanh" else "gelu"
    return ctx.rounded(ctx.emit(name, x, out=ctx.type_like(x)), val.dtype)


@import_rule(*COMPARE)
def _compare(ctx, node):
    a, b = node.args[0], node.args[1]
    common = compute_dtype(torch.result_type(fake_value(a), fake_value(b)))
    _, shape = _out(ctx, node)
    lhs, rhs = ctx.operand(a, common, shape), ctx.operand(b, common, shape)
    pred = COMPARE[node.target.overloadpacket]
    return dy.CompareOp(lhs, rhs, ir.StringAttr.get(pred), out=ctx.type_like(lhs, torch.bool)).out


@import_rule(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx, node):
    cond, a, b = node.args
    val, shape = _out(ctx, node)
    compute = val.dtype
    c = ctx.operand(cond, torch.bool, shape)
    lhs, rhs = ctx.operand(a, compute, shape), ctx.operand(b, compute, shape)
    return dy.SelectOp(c, lhs, rhs, out=ctx.type_like(lhs)).out


@import_rule(aten.clamp, aten.clamp_min, aten.clamp_max)
def _clamp(ctx, node):
    val, shape = _out(ctx, node)
    compute = compute_dtype(val.dtype)
    packet = node.target.overloadpacket
    lo = node.args[1] if packet in (aten.clamp, aten.clamp_min) and len(node.args) > 1 else node.kwargs.get("min")
    hi = (node.args[2] if len(node.args) > 2 else node.kwargs.get("max")) if packet is aten.clamp else None
    if packet is aten.clamp_max:
        hi, lo = node.args[1], None
    x = ctx.operand(node.args[0], compute, shape, fused=True)
    if lo is not None:
        x = ctx.emit("max", x, ctx.operand(lo, compute, shape, fused=True), out=ctx.type_like(x))
    if hi is not None:
        x = ctx.emit("min", x, ctx.operand(hi, compute, shape, fused=True), out=ctx.type_like(x))
    return ctx.rounded(x, val.dtype)


@import_rule(aten._to_copy, aten.to, aten.clone, aten.alias, aten.lift_fresh_copy, aten.detach)
def _copy_like(ctx, node):
    """Value semantics: a copy or alias is the value itself, cast to the result's dtype."""
    val, src = ctx.out_meta(node), fake_value(node.args[0])
    if isinstance(src, torch.Tensor) and src.device.type != val.device.type:
        raise Unsupported("device transfer")
    return ctx.cast(ctx.tensor(node.args[0]), val.dtype)
