"""F.scaled_dot_product_attention kept as one op whose kernel is picked when it runs: in graphs of
symbolic sizes, and in training graphs, where its backward is one op too.

An inference graph on a target that runs attention as a library call keeps SDPA whole
(backend.keeps_fused_attention), and AOTAutograd traces the fused op torch's dispatcher picks
for the example inputs. With symbolic sizes the dispatcher cannot always show that the fused
kernels take the inputs: BERT's mask (a boolean [1, 1, L, 1] broadcast to [B, 1, L, L]) made
it trace the math form, two batched matmuls around a softmax with the attention matrix in
memory (BERT-base's sweep on an H200: six kernels and 6.5 of 47 ms, where eager's fused kernel
took 1.6 ms). Inductor traces the math form there too. A training graph cannot keep the
dispatcher's fused op at all (its backward's meta function raises: backend.prepare_attention).

Such graphs call `dynamo_mlir::attention` instead, an op AOTAutograd does not look into. The
importer makes it the same dynamo.attention as the fused ops (frontend/aten/attention.py), and
the cuda target's library call runs F.scaled_dot_product_attention on the tensors of each call,
which picks the kernel eager picks. Its autograd formula is `dynamo_mlir::attention_grad`, the
fused kernel's backward (dynamo.attention_grad, one library call on cuda), so a training step's
attention matrix never reaches memory either. Where a node stays eager, the ops run those same
functions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def additive_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """A boolean mask (True: attend) as the additive one torch's SDPA makes of it (0 or -inf)."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.where(mask, 0.0, float("-inf")).to(dtype)  # ops that compile at symbolic sizes too


@torch.library.custom_op("dynamo_mlir::attention", mutates_args=())
def attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None,
              dropout_p: float, is_causal: bool, scale: float | None, enable_gqa: bool) -> torch.Tensor:
    """F.scaled_dot_product_attention, contiguous (the layout the fake result promises)."""
    return F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                          enable_gqa=enable_gqa).contiguous()


@attention.register_fake
def _(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    return query.new_empty((*query.shape[:-1], value.shape[-1]))


@torch.library.custom_op("dynamo_mlir::attention_grad", mutates_args=())
def attention_grad(grad: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attn_mask: torch.Tensor | None, is_causal: bool,
                   scale: float | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients of `attention` (no dropout) with respect to query, key and value: torch's
    own backward of F.scaled_dot_product_attention, which on CUDA is the fused kernel's backward
    (flash, memory-efficient or cuDNN, the one eager's autograd runs). Its forward is run again
    here to reach it: the backward kernels need the forward's row statistics, which the forward
    op does not return (one forward attention more per backward, the price activation
    checkpointing pays, for a forward op that stays one opaque output)."""
    _, backward = torch.func.vjp(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, is_causal, scale=scale),
        query, key, value)
    return backward(grad)


@attention_grad.register_fake
def _(grad, query, key, value, attn_mask, is_causal, scale):
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape)


def _save(ctx, inputs, output):
    query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa = inputs
    if dropout_p or enable_gqa:  # _call traces those as `otherwise`: attention_grad does not take them
        raise NotImplementedError("dynamo_mlir::attention's backward with dropout or grouped-query attention")
    ctx.save_for_backward(query, key, value, attn_mask)
    ctx.is_causal, ctx.scale = is_causal, scale


def _backward(ctx, grad):
    query, key, value, attn_mask = ctx.saved_tensors
    grads = attention_grad(grad, query, key, value, attn_mask, ctx.is_causal, ctx.scale)
    return (*grads, None, None, None, None, None)


attention.register_autograd(_backward, setup_context=_save)


def _call(otherwise, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """What an SDPA node of the Dynamo graph calls instead (use_attention_call). The mask goes in
    additive, as the fused ops take it (dynamo.attention adds it to the scores). What the op does
    not take (grouped-query attention, which transformers' LLaMA and Qwen2 ask of SDPA when they
    pass no mask; dropout; a mask that needs a gradient) is traced as `otherwise`: SDPA itself in
    an inference graph (the op would only run eagerly), its math form in a training graph."""
    if enable_gqa or dropout_p or (isinstance(attn_mask, torch.Tensor) and attn_mask.requires_grad):
        return otherwise(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    query, key, value, attn_mask = _autocast(query, key, value, attn_mask)
    return attention(query, key, value, additive_mask(attn_mask, query.dtype), dropout_p, is_causal, scale, False)


def _autocast(*tensors):
    """The casts autocast makes for SDPA (a lower-precision op: every float tensor to the
    autocast type), which a custom op does not get: inside an autocast region a float32 query
    would otherwise run the float32 kernel, and the output would not have eager's type."""
    device = tensors[0].device.type
    if not torch.is_autocast_enabled(device):
        return tensors
    low = torch.get_autocast_dtype(device)
    return tuple(t.to(low) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in tensors)


def _calling(otherwise):
    def attention_call(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                       enable_gqa=False):
        return _call(otherwise, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    return attention_call


attention_call = _calling(F.scaled_dot_product_attention)

_SDPA_TARGETS = {torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention}


def use_attention_call(gm: torch.fx.GraphModule, otherwise=None) -> int:
    """Every SDPA node of gm (Dynamo's graph, before AOTAutograd traces it) -> attention_call
    (`otherwise`: what the cases the op does not take trace instead; default SDPA itself).
    Returns how many."""
    target = attention_call if otherwise is None else _calling(otherwise)
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _SDPA_TARGETS]
    for node in nodes:
        node.target = target
    if nodes:
        gm.recompile()
    return len(nodes)
