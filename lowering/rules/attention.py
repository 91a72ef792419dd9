"""dynamo.attention and dynamo.attention_grad -> their math form, for every target without a
fused kernel of its own.

The rule expands the op into dynamo ops, which the next lowering round (to_linalg.py) lowers
with each target's own rules: the two contractions are dynamo.matmul (the cpu target's blocked
loops or BLAS call, cuBLAS on cuda), the row max and the cascaded row sum are dynamo.reduce,
the rest elementwise ops that fuse into them. So the math form here is the one every target
already compiles for `F.scaled_dot_product_attention`'s decomposition, not a second copy of it:

    scores = scale * q @ k^T  (+ bias, broadcast)  (-inf above the diagonal when causal)
    p      = exp(scores - rowmax) / rowsum,  0 on a row whose every score is -inf
    out    = p @ v

Half types compute in float32 and round once. The [L, S] score matrix is materialized here; a
target that must avoid that registers its own rule (the cuda target calls torch's fused
attention: codegen/cuda/library_calls.py).
"""

import math

from torch_mlir import ir

from ...dialects import dynamo as dy
from ..registry import register_lowering

_HALF = (ir.F16Type, ir.BF16Type)


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


class _Emitter:
    """Builds dynamo ops of one element type at the current insertion point."""

    def __init__(self, elem: ir.Type):
        self.elem = elem

    def type(self, shape, elem=None) -> ir.RankedTensorType:
        return ir.RankedTensorType.get(list(shape), elem or self.elem)

    @staticmethod
    def shape(x) -> list[int]:
        return list(ir.RankedTensorType(x.type).shape)

    def cast(self, x, elem=None):
        elem = elem or self.elem
        if ir.RankedTensorType(x.type).element_type == elem:
            return x
        return dy.CastOp(x, out=self.type(self.shape(x), elem)).out

    def unary(self, name: str, x):
        return dy.UNARY_CLASSES[name](x, out=x.type).out

    def binary(self, name: str, a, b):
        return dy.BINARY_CLASSES[name](a, b, out=a.type).out

    def full(self, value: float, shape):
        scalar = ir.DenseElementsAttr.get_splat(self.type([]), ir.FloatAttr.get(self.elem, value))
        return self.broadcast(dy.ConstantOp(scalar, out=self.type([])).out, [], shape)

    def broadcast(self, x, dims: list[int], shape):
        return dy.BroadcastOp(x, dims=ir.DenseI64ArrayAttr.get(dims), out=self.type(shape, ir.RankedTensorType(x.type).element_type)).out

    def reshape(self, x, shape):
        return dy.ReshapeOp(x, out=self.type(shape)).out

    def permute(self, x, perm):
        shape = self.shape(x)
        return dy.PermuteOp(x, perm=ir.DenseI64ArrayAttr.get(perm), out=self.type([shape[p] for p in perm])).out

    def reduce_rows(self, x, kind: str):
        """x [B, H, L, S] reduced over S, broadcast back to x's shape."""
        shape = self.shape(x)
        r = dy.ReduceOp(x, ir.StringAttr.get(kind), ir.DenseI64ArrayAttr.get([3]), out=self.type(shape[:3])).out
        return r, self.broadcast(r, [0, 1, 2], shape)

    def batched_matmul(self, a, b):
        """[B, H, M, K] @ [B, H, K, N] as one [B*H]-batched dynamo.matmul."""
        (bs, h, m, k), n = self.shape(a), self.shape(b)[3]
        c = dy.MatmulOp(self.reshape(a, [bs * h, m, k]), self.reshape(b, [bs * h, k, n]), out=self.type([bs * h, m, n])).out
        return self.reshape(c, [bs, h, m, n])

    def causal_keep(self, shape):
        """i1 [B, H, L, S]: key position s <= query position l (top-left aligned, as torch)."""
        i64 = ir.IntegerType.get_signless(64)
        zero = ir.DenseElementsAttr.get_splat(self.type([], i64), ir.IntegerAttr.get(i64, 0))
        one = ir.DenseElementsAttr.get_splat(self.type([], i64), ir.IntegerAttr.get(i64, 1))
        start, step = (dy.ConstantOp(v, out=self.type([], i64)).out for v in (zero, one))
        rows, cols = (dy.IotaOp(start, step, [], _i64(d), out=self.type(shape[2:], i64)).out for d in (0, 1))
        keep = dy.CompareOp(rows, cols, ir.StringAttr.get("ge"), out=self.type(shape[2:], ir.IntegerType.get_signless(1))).out
        return self.broadcast(keep, [2, 3], shape)

    def safe_softmax(self, scores):
        """softmax over S; a row of -inf scores (everything masked) gives zeros, not NaN."""
        shape = self.shape(scores)
        row_max, m = self.reduce_rows(scores, "max")
        e = self.unary("exp", self.binary("sub", scores, m))
        _, total = self.reduce_rows(e, "sum")
        p = self.binary("div", e, total)
        masked = dy.CompareOp(row_max, self.full(-math.inf, shape[:3]), ir.StringAttr.get("eq"),
                              out=self.type(shape[:3], ir.IntegerType.get_signless(1))).out
        return dy.SelectOp(self.broadcast(masked, [0, 1, 2], shape), self.full(0.0, shape), p, out=scores.type).out


def _emitter(op) -> "_Emitter":
    out_elem = ir.RankedTensorType(op.query.type).element_type
    return _Emitter(ir.F32Type.get() if isinstance(out_elem, _HALF) else out_elem)


def _probabilities(em: _Emitter, op, q, k):
    """softmax(scale * q @ k^T + bias, causal mask) [B, H, L, S] of dynamo.attention or its grad."""
    scores = em.batched_matmul(q, em.permute(k, [0, 1, 3, 2]))
    shape = em.shape(scores)
    scores = em.binary("mul", scores, em.full(ir.FloatAttr(op.scale).value, shape))
    for bias in op.bias:
        scores = em.binary("add", scores, em.broadcast(em.cast(bias), [0, 1, 2, 3], shape))
    if ir.IntegerAttr(op.is_causal).value:
        scores = dy.SelectOp(em.causal_keep(shape), scores, em.full(-math.inf, shape), out=scores.type).out
    return em.safe_softmax(scores)


@register_lowering(dy.AttentionOp)
def _lower_attention(ctx, op):
    em = _emitter(op)
    q, k, v = (em.cast(x) for x in (op.query, op.key, op.value))
    out_elem = ir.RankedTensorType(op.out.type).element_type
    return em.cast(em.batched_matmul(_probabilities(em, op, q, k), v), out_elem)


@register_lowering(dy.AttentionGradOp)
def _lower_attention_grad(ctx, op):
    """The backward of the math form, the probabilities p recomputed:
    dv = p^T @ g,  ds = p * (g @ v^T - rowsum(p * (g @ v^T))),  dq = scale * ds @ k,  dk = scale * ds^T @ q."""
    em = _emitter(op)
    g, q, k, v = (em.cast(x) for x in (op.grad, op.query, op.key, op.value))
    p = _probabilities(em, op, q, k)
    transposed = lambda x: em.permute(x, [0, 1, 3, 2])  # noqa: E731
    dv = em.batched_matmul(transposed(p), g)
    dp = em.batched_matmul(g, transposed(v))
    _, rowdot = em.reduce_rows(em.binary("mul", dp, p), "sum")
    ds = em.binary("mul", p, em.binary("sub", dp, rowdot))
    ds = em.binary("mul", ds, em.full(ir.FloatAttr(op.scale).value, em.shape(ds)))
    dq, dk = em.batched_matmul(ds, k), em.batched_matmul(transposed(ds), q)
    return [em.cast(grad, ir.RankedTensorType(x.type).element_type) for grad, x in ((dq, op.query), (dk, op.key), (dv, op.value))]
