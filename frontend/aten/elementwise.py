"""Elementwise ATen ops: PyTorch's promotion made explicit (casts), broadcasts made explicit,
half types computed in float32 and rounded back (as PyTorch's kernels do)."""

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..dtypes import UPCAST_DTYPES
from ..importer import fake_value, static_shape
from ..registry import Unsupported, import_rule

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
