"""SDPA's math form for half-precision training graphs, at the precision of the fused kernels.

A training graph cannot keep torch's fused attention (frontend/backend.py says why), so the
backend swaps F.scaled_dot_product_attention for its math form before AOTAutograd
differentiates it. torch's math kernel (`_scaled_dot_product_attention_math`) widens half
q, k, v to float32 and runs all of it, its four backward matmuls included, in float32: on a
GPU those are float32 GEMMs on CUDA cores, not tensor cores (the bf16 GPT-2 small training step
spent about 15 ms of its 61 ms of kernels in them, 2026-11-27, H200).

`HalfMathAttention` computes what FlashAttention and cuDNN's attention compute, in the same
precisions, as torch ops that we compile:

    forward                                            backward (dO half)
    S  = scale * float(q) @ float(k)^T  (+ bias)       dV = P_h^T @ dO                 half, f32 sums
    P  = softmax(S)                     float32        dP = float(dO) @ float(v)^T     float32
    P_h = half(P)                                       D  = rowsum(float(dO) * float(O))
    O  = P_h @ v             half, float32 sums        dS = P * (dP - D) * scale       float32
    (saved: q, k, v, O and the row log-sum-exp;        dQ = half(dS) @ k, dK = half(dS)^T @ q
     P is recomputed from them, not stored)

The float32 matmuls of widened half tensors are exact products summed in float32; the cuda
target runs them on cuBLAS's tensor-core kernels with float32 output
(codegen/cuda/widened_matmuls.py). Used for half q, k, v on a CUDA device with no dropout, no
grouped-query broadcast and a mask (if any) that needs no gradient; anything else keeps torch's
math form.
"""

from __future__ import annotations

import math

import torch

_HALF = (torch.bfloat16, torch.float16)


def applies(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether this call can take the half math form (module docstring)."""
    return (query.dtype in _HALF and key.dtype == value.dtype == query.dtype and query.is_cuda
            and dropout_p == 0.0 and query.dim() >= 3 and key.shape[-3] == query.shape[-3]
            and (attn_mask is None or not attn_mask.requires_grad) and not enable_gqa)


def _scores(q, k, bias, is_causal, scale):
    s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
    if bias is not None:
        s = s + bias.float()
    if is_causal:
        L, S = s.shape[-2], s.shape[-1]
        keep = torch.ones(L, S, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(keep.logical_not(), float("-inf"))
    return s


def _no_autocast():
    """The precisions above are the point: an autocast region around the attention must not
    turn the float32 scores into half ones."""
    return torch.autocast("cuda", enabled=False)


class HalfMathAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, bias, is_causal: bool, scale: float):
        with _no_autocast():
            return HalfMathAttention._forward(ctx, q, k, v, bias, is_causal, scale)

    @staticmethod
    def _forward(ctx, q, k, v, bias, is_causal, scale):
        s = _scores(q, k, bias, is_causal, scale)
        lse = torch.logsumexp(s, dim=-1, keepdim=True)
        out = torch.matmul(torch.exp(s - lse).to(q.dtype), v)
        ctx.save_for_backward(q, k, v, bias, out, lse)
        ctx.is_causal, ctx.scale = is_causal, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        with _no_autocast():
            return HalfMathAttention._backward(ctx, grad_out)

    @staticmethod
    def _backward(ctx, grad_out):
        q, k, v, bias, out, lse = ctx.saved_tensors
        p = torch.exp(_scores(q, k, bias, ctx.is_causal, ctx.scale) - lse)
        grad_v = torch.matmul(p.to(q.dtype).transpose(-2, -1), grad_out)
        grad_p = torch.matmul(grad_out.float(), v.float().transpose(-2, -1))
        delta = (grad_out.float() * out.float()).sum(dim=-1, keepdim=True)
        grad_s = (p * (grad_p - delta) * ctx.scale).to(q.dtype)
        grad_q = torch.matmul(grad_s, k)
        grad_k = torch.matmul(grad_s.transpose(-2, -1), q)
        return grad_q, grad_k, grad_v, None, None, None


def half_math_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    """F.scaled_dot_product_attention's result (an additive or absent mask) by HalfMathAttention."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    return HalfMathAttention.apply(query, key, value, attn_mask, is_causal, scale)
