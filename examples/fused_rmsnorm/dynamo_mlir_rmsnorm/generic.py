"""The generic lowering: fused.rms_norm expanded into core dynamo ops (cast, mul, reduce, div,
add, rsqrt, broadcast). Every target lowers those already, so this rule makes the op run
anywhere; the lowering runs in rounds, so the core ops built here are lowered next."""

from torch_mlir import ir

from dynamo_mlir import plugin

from .dialect import RMSNormOp, eps_of

ops = plugin.core_ops


def _ranked(value) -> ir.RankedTensorType:
    return ir.RankedTensorType(value.type)


def _with_elem(value, elem) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(_ranked(value).shape, elem)


def _cast(value, elem):
    return value if _ranked(value).element_type == elem else ops.CastOp(value, out=_with_elem(value, elem)).out


def _splat_like(number: float, like):
    """A constant of like's (static) type: the core refuses symbolic sizes for plugin ops."""
    t = _ranked(like)
    return ops.ConstantOp(value=ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(t.element_type, number)), out=t).out


def _broadcast_like(value, like, dims):
    """value's dims become like's `dims`; the others are repeated."""
    out = _with_elem(like, _ranked(value).element_type)
    return ops.BroadcastOp(value, dims=ir.DenseI64ArrayAttr.get(dims), out=out).out


def inverse_rms(x32, eps: float):
    """rsqrt(mean(x32^2, last dim) + eps), one value per row (x32's shape less its last dim)."""
    t = _ranked(x32)
    rank, n = t.rank, t.shape[-1]
    rows = ir.RankedTensorType.get(t.shape[:-1], t.element_type)
    squares = ops.MulOp(x32, x32, out=t).out
    sums = ops.ReduceOp(squares, ir.StringAttr.get("sum"), ir.DenseI64ArrayAttr.get([rank - 1]), out=rows).out
    mean = ops.DivOp(sums, _splat_like(float(n), sums), out=rows).out
    return ops.RsqrtOp(ops.AddOp(mean, _splat_like(eps, mean), out=rows).out, out=rows).out


@plugin.register_lowering(RMSNormOp)
def expand_rms_norm(ctx, op):
    f32 = ir.F32Type.get()
    elem, rank = _ranked(op.x).element_type, _ranked(op.x).rank
    x32 = _cast(op.x, f32)
    inv = _broadcast_like(inverse_rms(x32, eps_of(op)), x32, list(range(rank - 1)))
    normed = _cast(ops.MulOp(x32, inv, out=_ranked(x32)).out, elem)  # rounded once, as eager does
    weight = _broadcast_like(op.weight, op.x, [rank - 1])
    scaled = ops.MulOp(_cast(weight, f32), _cast(normed, f32), out=_ranked(x32)).out
    return _cast(scaled, elem)
