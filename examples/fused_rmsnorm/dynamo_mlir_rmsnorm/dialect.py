"""The `fused` dialect and its one op, `fused.rms_norm`, defined on torch_mlir.dialects.ext and
registered with dynamo-mlir so that every context it makes loads it."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Dialect, Operand, Pure, Result

from dynamo_mlir import plugin

# Element types the op is defined for: half types are normalized in float32 (see op.py).
FLOAT_TYPES = ("f32", "bf16", "f16")


@plugin.register_dialect
class Fused(Dialect, name="fused"):
    """Fused ops a model routes to through torch.library custom ops (namespace `fused`)."""


def _same_size(a: int, b: int) -> bool:
    dynamic = ir.ShapedType.get_dynamic_size()
    return a == b or dynamic in (a, b)


@plugin.verifier
def _verify_rms_norm(op):
    x, w = plugin.shape_of(op.x), plugin.shape_of(op.weight)
    elem = str(plugin.elem_of(op.x))
    if not x:
        raise plugin.VerifyError("x must have at least one dim (the normalized one)")
    if len(w) != 1 or not _same_size(w[0], x[-1]):
        raise plugin.VerifyError(f"weight must be 1-d of x's last dim {x[-1]}, got shape {w}")
    if elem not in FLOAT_TYPES:
        raise plugin.VerifyError(f"element type {elem} is not one of {FLOAT_TYPES}")
    if str(plugin.elem_of(op.weight)) != elem:
        raise plugin.VerifyError(f"weight's element type {plugin.elem_of(op.weight)} differs from x's {elem}")
    if op.out.type != op.x.type:
        raise plugin.VerifyError(f"result type {op.out.type} must be x's type {op.x.type}")


class RMSNormOp(Fused.Operation, name="rms_norm", traits=[Pure]):
    """weight * (x * rsqrt(mean(x^2, last dim) + eps)), normalized in float32 and rounded to x's
    element type once before the weight scales it (transformers' LlamaRMSNorm).

    Example:
      %y = "fused.rms_norm"(%x, %w) {eps = 1.0e-06 : f64}
             : (tensor<2x16x128xf32>, tensor<128xf32>) -> tensor<2x16x128xf32>
    """

    x: Operand[ir.RankedTensorType]
    weight: Operand[ir.RankedTensorType]
    eps: ir.FloatAttr
    out: Result[ir.RankedTensorType]
    verify_invariants = _verify_rms_norm


def eps_of(op) -> float:
    return ir.FloatAttr(op.eps).value
