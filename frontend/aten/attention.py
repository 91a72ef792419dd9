"""Attention: torch's fused scaled-dot-product-attention ops as one `dynamo.attention`, and the
backward of frontend/attention_call.py's op as one `dynamo.attention_grad`.

They reach us only where the backend kept F.scaled_dot_product_attention whole (an inference
graph on a target that runs attention as a library call: frontend/backend.py's
`keeps_fused_attention`); AOTAutograd then traces the op torch's dispatcher picks for the
inputs: `_scaled_dot_product_efficient_attention` (float32, takes a bias),
`_scaled_dot_product_flash_attention` (half types, no bias) or
`_scaled_dot_product_cudnn_attention`. torch has already turned a boolean mask into an additive
one (-inf where False) and, for the efficient kernel, expanded it to [B, H, L, S] (and padded
its rows to an aligned stride): those steps are ordinary ops of the graph before this one.

Only the first result (the attention output) is imported: the others (log-sum-exp, RNG state,
sequence bookkeeping) serve a backward pass, and an inference graph never reads them; where one
is read the node stays eager. Refused too: dropout, a query whose head count differs from the
key's (grouped-query attention, which these ops do not take), and a bias together with
is_causal (torch's public SDPA, which the cuda target calls, refuses that pair).
"""

import math

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from .. import attention_call  # noqa: F401  (registers torch.ops.dynamo_mlir.attention)
from ..registry import Unsupported, import_rule
from .args import bind, output_read
from .builders import i64

aten = torch.ops.aten

# op -> how many results it has (all but the first are left unproduced)
_RESULTS = {
    aten._scaled_dot_product_efficient_attention.default: 4,
    aten._scaled_dot_product_flash_attention.default: 9,
    aten._scaled_dot_product_cudnn_attention.default: 9,
    aten._scaled_dot_product_flash_attention_for_cpu.default: 2,
}


def _unexpanded(ctx, bias: ir.Value) -> ir.Value:
    """The bias before a broadcast to [B, H, L, S], as a rank-4 tensor with size-1 dims where it
    was broadcast: a target then reads the small mask ([B, 1, 1, S] for padding), never the
    expanded one, which would be as large as the attention matrix."""
    owner = bias.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    if not isinstance(owner, ir.Operation) or owner.name != "dynamo.broadcast" or len(owner.operands) != 1:
        return bias
    source = owner.operands[0]
    dims = list(ir.DenseI64ArrayAttr(owner.attributes["dims"]))
    src = ctx.shape_of(source)
    shape = [1] * 4
    for i, d in enumerate(dims):
        shape[d] = src[i]
    return ctx.reshape(source, shape)


def _operands(ctx, query, key, value, bias, is_causal, scale, repeat_heads=False):
    """q, k, v, the bias list and the attributes of dynamo.attention(_grad) (checked)."""
    q, k, v = (ctx.tensor(x) for x in (query, key, value))
    shapes = [ctx.shape_of(x) for x in (q, k, v)]
    if any(len(s) != 4 or s[3] == dy.DYN for s in shapes):
        raise Unsupported(f"attention on shapes {shapes}: rank-4 [B, H, L, E], E static, only")
    if shapes[0][1] != shapes[1][1]:  # grouped-query attention (torch's enable_gqa)
        if not repeat_heads:
            raise Unsupported(f"grouped-query attention ({shapes[0][1]} query heads, {shapes[1][1]} key heads)")
        k, v = (_repeat_heads(ctx, x, shapes[0][1]) for x in (k, v))
    biases = [] if bias is None else [_unexpanded(ctx, ctx.cast(ctx.tensor(bias), ctx.dtype_of(q)))]
    if biases and is_causal:
        raise Unsupported("attention with both a bias and is_causal")
    scale = 1 / math.sqrt(shapes[0][3]) if scale is None else float(scale)
    return q, k, v, biases, i64(bool(is_causal)), ir.FloatAttr.get(ir.F64Type.get(), scale)


def _attention(ctx, node, query, key, value, bias, dropout_p, is_causal, scale, repeat_heads=False):
    """dynamo.attention of the fused op `node`; grouped-query attention with `repeat_heads` (the
    CPU op, whose GQA torch's CPU dispatch picks) repeats the key and value heads, else is refused."""
    if any(output_read(node, i) for i in range(1, _RESULTS.get(node.target, 1))):
        raise Unsupported("an output besides the attention's (log-sum-exp, RNG state) is read: "
                          "only an inference graph's attention is imported")
    if dropout_p:
        raise Unsupported(f"attention with dropout ({dropout_p})")
    q, k, v, biases, causal, scale = _operands(ctx, query, key, value, bias, is_causal, scale, repeat_heads)
    shape = ctx.shape_of(q)[:3] + ctx.shape_of(v)[3:]
    return dy.AttentionOp(q, k, v, biases, causal, scale, out=ctx.type_like(q, shape=shape)).out


def _repeat_heads(ctx, x: ir.Value, heads: int) -> ir.Value:
    """Keys or values [B, Hk, S, E] -> [B, heads, S, E], each head repeated heads // Hk times in
    place: query head h reads key head h // (heads // Hk), as torch's enable_gqa does."""
    b, hk, s, e = ctx.shape_of(x)
    if dy.DYN in (b, hk, s, heads) or heads % hk:
        raise Unsupported(f"grouped-query attention of {heads} query heads over {hk} key heads "
                          f"with these shapes ({[b, hk, s, e]})")
    grouped = ctx.reshape(x, [b, hk, 1, s, e])
    wide = ctx.broadcast(grouped, [b, hk, heads // hk, s, e], source=(b, hk, 1, s, e))
    return ctx.reshape(wide, [b, heads, s, e])


def _results(node, out) -> tuple:
    return (out,) + (None,) * (_RESULTS[node.target] - 1)


@import_rule(aten._scaled_dot_product_efficient_attention.default, aten._scaled_dot_product_cudnn_attention.default)
def _with_bias(ctx, node):
    a = bind(node)
    out = _attention(ctx, node, a.query, a.key, a.value, a.attn_bias, a.dropout_p, a.is_causal, a.scale)
    return _results(node, out)


@import_rule(aten._scaled_dot_product_flash_attention.default)
def _flash(ctx, node):
    a = bind(node)
    out = _attention(ctx, node, a.query, a.key, a.value, None, a.dropout_p, a.is_causal, a.scale)
    return _results(node, out)


@import_rule(torch.ops.dynamo_mlir.attention.default)
def _attention_call(ctx, node):
    """frontend/attention_call.py's op (SDPA of symbolic sizes, its kernel picked per call): the
    attention output alone, its mask additive already."""
    a = bind(node)
    return _attention(ctx, node, a.query, a.key, a.value, a.attn_mask, a.dropout_p, a.is_causal, a.scale)


@import_rule(torch.ops.dynamo_mlir.attention_grad.default)
def _attention_grad_call(ctx, node):
    """The backward of frontend/attention_call.py's op in a training graph: q, k and v's gradients."""
    a = bind(node)
    q, k, v, biases, causal, scale = _operands(ctx, a.query, a.key, a.value, a.attn_mask, a.is_causal, a.scale)
    op = dy.AttentionGradOp(ctx.tensor(a.grad), q, k, v, biases, causal, scale, grad_query=q.type, grad_key=k.type,
                            grad_value=v.type)
    return op.grad_query, op.grad_key, op.grad_value


@import_rule(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _flash_for_cpu(ctx, node):
    """The CPU fused op (kept by CPUOptions.keeps_fused_attention): float32/float64 only; a half
    type runs eager's kernel, whose float32 accumulation and rounding the dialect's op does not
    promise."""
    a = bind(node)
    if a.query.meta["val"].dtype not in (torch.float32, torch.float64):
        raise Unsupported(f"the CPU fused attention in {a.query.meta['val'].dtype}")
    out = _attention(ctx, node, a.query, a.key, a.value, a.get("attn_mask"), a.dropout_p, a.is_causal, a.get("scale"),
                     repeat_heads=True)
    return _results(node, out)
