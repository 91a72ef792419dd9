"""F.scaled_dot_product_attention of symbolic sizes kept as one op whose kernel is picked when it runs.

An inference graph on a target that runs attention as a library call keeps SDPA whole
(backend.keeps_fused_attention), and AOTAutograd traces the fused op torch's dispatcher picks
for the example inputs. With symbolic sizes the dispatcher cannot always show that the fused
kernels take the inputs: BERT's mask (a boolean [1, 1, L, 1] broadcast to [B, 1, L, L]) made
it trace the math form, two batched matmuls around a softmax with the attention matrix in
memory (BERT-base's sweep on an H200: six kernels and 6.5 of 47 ms, where eager's fused kernel
took 1.6 ms). Inductor traces the math form there too.

Such a graph calls `dynamo_mlir::attention` instead, an op AOTAutograd does not look into. The
importer makes it the same dynamo.attention as the fused ops (frontend/aten/attention.py), and
the cuda target's library call runs F.scaled_dot_product_attention on the tensors of each call,
which picks the kernel eager picks. Where a node stays eager (grouped-query attention), the op
runs that same function.
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


def attention_call(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """What an SDPA node of the Dynamo graph calls instead (use_attention_call). The mask goes in
    additive, as the fused ops take it (dynamo.attention adds it to the scores). What
    dynamo.attention does not take (grouped-query attention, which transformers' LLaMA and Qwen2
    ask of SDPA when they pass no mask; dropout) is traced as before, SDPA itself: the op would
    only run eagerly."""
    if enable_gqa or dropout_p:
        return F.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                              enable_gqa=enable_gqa)
    return attention(query, key, value, additive_mask(attn_mask, query.dtype), dropout_p, is_causal, scale, False)


_SDPA_TARGETS = {torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention}


def use_attention_call(gm: torch.fx.GraphModule) -> int:
    """Every SDPA node of gm (Dynamo's graph, before AOTAutograd traces it) -> attention_call.
    Returns how many."""
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _SDPA_TARGETS]
    for node in nodes:
        node.target = attention_call
    if nodes:
        gm.recompile()
    return len(nodes)
