"""Math ops found missing by the OpInfo coverage sweep (benchmarks/op_coverage.py), each built from
existing dynamo ops: round(decimals), log10, vector norms, cumulative scans, erfc, ..."""

import math

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype
from .reduction import reduce

aten = torch.ops.aten


def _out(ctx, node):
    val = ctx.out_meta(node)
    return val, list(static_shape(val)), compute_dtype(val.dtype)


def _float_input(ctx, node, compute):
    return ctx.cast(ctx.tensor(node.args[0]), compute)


def _emit(ctx, name, *xs):
    return ctx.emit(name, *xs, out=ctx.type_like(xs[0]))


def _const_like(ctx, number, x):
    return ctx.broadcast(ctx.scalar(number, ctx.dtype_of(x)), ctx.shape_of(x))


@import_rule(aten.round.decimals)
def _round_decimals(ctx, node):
    """ATen's kernel: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d < 0."""
    val, _, compute = _out(ctx, node)
    if not val.dtype.is_floating_point:
        raise Unsupported("round(decimals) of an integer tensor")
    decimals = node.kwargs.get("decimals", node.args[1] if len(node.args) > 1 else 0)
    x = _float_input(ctx, node, compute)
    ten = _const_like(ctx, 10.0 ** abs(decimals), x)
    first, second = ("mul", "div") if decimals >= 0 else ("div", "mul")
    y = _emit(ctx, second, _emit(ctx, "round", _emit(ctx, first, x, ten)), ten)
    return ctx.cast(y, val.dtype)


# op -> (dynamo unary op, constant factor applied after it)
SCALED_UNARY = {aten.log10: ("log", 1 / math.log(10))}


@import_rule(*SCALED_UNARY)
def _scaled_unary(ctx, node):
    val, _, compute = _out(ctx, node)
    name, factor = SCALED_UNARY[node.target.overloadpacket]
    x = _float_input(ctx, node, compute)
    return ctx.cast(_emit(ctx, "mul", _emit(ctx, name, x), _const_like(ctx, factor, x)), val.dtype)


@import_rule(aten.erfc)
def _erfc(ctx, node):
    val, _, compute = _out(ctx, node)
    if compute == torch.float32 and val.dtype == torch.float32:
        # 1 - erf(x) cancels catastrophically for large x; compute in f64 and round back.
        compute = torch.float64
    x = _float_input(ctx, node, compute)
    return ctx.cast(_emit(ctx, "sub", _const_like(ctx, 1.0, x), _emit(ctx, "erf", x)), val.dtype)


@import_rule(aten.linalg_vector_norm)
def _vector_norm(ctx, node):
    val, _, compute = _out(ctx, node)
    ord_ = node.args[1] if len(node.args) > 1 else node.kwargs.get("ord", 2)
    dims = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim")
    keep = bool(node.args[3] if len(node.args) > 3 else node.kwargs.get("keepdim", False))
    x = _emit(ctx, "abs", ctx.cast(_float_input(ctx, node, compute), compute))
    rank = len(ctx.shape_of(x))
    dims = list(range(rank)) if dims is None or dims == [] else [dims] if isinstance(dims, int) else list(dims)
    dims = sorted({d % rank for d in dims}) if rank else []
    if 0 in [ctx.shape_of(x)[d] for d in dims] and ord_ not in (0, 1, 2):
        raise Unsupported("norm over an empty dim")
    return ctx.cast(_norm(ctx, x, float(ord_), dims, keep), val.dtype)


def _norm(ctx, x, p: float, dims, keep):
    if p == math.inf:
        return reduce(ctx, x, "max", dims, keep)
    if p == -math.inf:
        return reduce(ctx, x, "min", dims, keep)
    if p == 0:
        nonzero = ctx.cast(dy.CompareOp(x, _const_like(ctx, 0.0, x), ir.StringAttr.get("ne"),
                                        out=ctx.type_like(x, torch.bool)).out, ctx.dtype_of(x))
        return reduce(ctx, nonzero, "sum", dims, keep)
    if p == 1:
        return reduce(ctx, x, "sum", dims, keep)
    if p == 2:
        return _emit(ctx, "sqrt", reduce(ctx, _emit(ctx, "mul", x, x), "sum", dims, keep))
    powered = reduce(ctx, _emit(ctx, "pow", x, _const_like(ctx, p, x)), "sum", dims, keep)
    return _emit(ctx, "pow", powered, _const_like(ctx, 1.0 / p, powered))


# ----------------------------------------------------------------------------- scans
# out[..., i, ...] = reduce_{j <= i} x[..., j, ...], as a masked [.., n(i), n(j), ..] reduction:
# quadratic in the scanned dim, which is fine at the sizes where a scan is not the bottleneck.
MAX_SCAN = 4096
SCANS = {aten.cumsum: ("sum", 0.0), aten.cumprod: ("prod", 1.0)}


def scan(ctx, x, dim: int, kind: str, identity: float):
    shape = ctx.shape_of(x)
    n = shape[dim]
    if n > MAX_SCAN:
        raise Unsupported(f"scan over {n} elements")
    # x broadcast to [..., i, j, ...] (j is the source index), masked where j > i.
    wide = shape[:dim] + [n, n] + shape[dim + 1:]
    dims = [d for d in range(len(shape)) if d != dim]
    src = ctx.reshape(x, shape[:dim] + [1, n] + shape[dim + 1:])
    src = ctx.broadcast(src, wide)
    i = _iota(ctx, wide, dim)
    j = _iota(ctx, wide, dim + 1)
    keep = dy.CompareOp(j, i, ir.StringAttr.get("le"), out=ctx.type_like(i, torch.bool)).out
    masked = dy.SelectOp(keep, src, _const_like(ctx, identity, src), out=ctx.type_like(src)).out
    del dims
    return reduce(ctx, masked, kind, [dim + 1], False)


def _iota(ctx, shape, dim):
    zero, one = ctx.scalar(0, torch.int64), ctx.scalar(1, torch.int64)
    attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)
    return dy.IotaOp(zero, one, attr, out=ctx.type_like(zero, shape=shape)).out


@import_rule(*SCANS)
def _scan(ctx, node):
    val = ctx.out_meta(node)
    kind, identity = SCANS[node.target.overloadpacket]
    compute = compute_dtype(val.dtype)
    if compute == torch.bool:
        raise Unsupported("scan of bool")
    x = ctx.cast(ctx.tensor(node.args[0]), compute)
    rank = len(ctx.shape_of(x))
    if rank == 0:
        return ctx.cast(x, val.dtype)
    dim = node.args[1] % rank
    if ctx.shape_of(x)[dim] == 0:
        return ctx.full(0, static_shape(val), val.dtype)
    return ctx.cast(scan(ctx, x, dim, kind, identity), val.dtype)


@import_rule(torch.ops.prims.var.default)
def _prims_var(ctx, node):
    """prims.var(x, dims, correction): two passes (mean, then centered squares), as var_mean."""
    val, out_shape, compute = _out(ctx, node)
    x = ctx.cast(ctx.tensor(node.args[0]), compute)
    shape = ctx.shape_of(x)
    dims = node.args[1]
    dims = list(range(len(shape))) if dims is None else sorted({d % len(shape) for d in dims}) if shape else []
    correction = node.args[2] if len(node.args) > 2 else node.kwargs.get("correction", 1)
    n = int(math.prod(shape[d] for d in dims))  # 0: the divisions give eager's NaN
    mean = reduce(ctx, x, "sum", dims, True)
    mean = _emit(ctx, "div", mean, _const_like(ctx, float(n), mean))
    centered = _emit(ctx, "sub", x, ctx.broadcast(mean, shape))
    sq = reduce(ctx, _emit(ctx, "mul", centered, centered), "sum", dims, False)
    var = _emit(ctx, "div", sq, _const_like(ctx, float(max(n - correction, 0)), sq))
    return ctx.cast(ctx.reshape(var, out_shape), val.dtype)


def _compare(ctx, a, b, predicate: str):
    return dy.CompareOp(a, b, ir.StringAttr.get(predicate), out=ctx.type_like(a, torch.bool)).out


def _select(ctx, cond, a, b):
    return dy.SelectOp(cond, a, b, out=ctx.type_like(a)).out


@import_rule(torch.ops.prims.frexp.default)
def _frexp(ctx, node):
    """x = m * 2^e with 0.5 <= |m| < 1, and (x, 0) for 0, inf and NaN, as eager.

    In f64, floor(log2|x|) + 1 is the exponent up to one step either way (log2 rounds near
    powers of two), which one compare on the scaled mantissa corrects; dividing by a power of
    two is exact, so the mantissa is exact too."""
    mantissa_meta, exponent_meta = ctx.out_meta(node, 0), ctx.out_meta(node, 1)
    x = ctx.cast(ctx.tensor(node.args[0]), torch.float64)
    a = _emit(ctx, "abs", x)
    one = _const_like(ctx, 1.0, a)
    finite_nonzero = _emit(ctx, "and", _compare(ctx, a, _const_like(ctx, 0.0, a), "gt"),
                           _compare(ctx, a, _const_like(ctx, math.inf, a), "lt"))
    safe = _select(ctx, finite_nonzero, a, one)
    e = _emit(ctx, "add", _emit(ctx, "floor", _emit(ctx, "log2", safe)), one)
    m = _emit(ctx, "div", safe, _emit(ctx, "exp2", e))
    too_big = ctx.cast(_compare(ctx, m, one, "ge"), torch.float64)
    too_small = ctx.cast(_compare(ctx, m, _const_like(ctx, 0.5, m), "lt"), torch.float64)
    e = _emit(ctx, "sub", _emit(ctx, "add", e, too_big), too_small)
    m = _emit(ctx, "copysign", _emit(ctx, "div", safe, _emit(ctx, "exp2", e)), x)
    mantissa = _select(ctx, finite_nonzero, m, x)
    exponent = _select(ctx, finite_nonzero, e, _const_like(ctx, 0.0, e))
    return ctx.cast(mantissa, mantissa_meta.dtype), ctx.cast(exponent, exponent_meta.dtype)
