"""Normalization: batch norm in inference mode. (Training batch norm, layer norm and group norm
reach the importer decomposed into reductions and elementwise ops; half-precision training
batch norm on CPU stays eager: frontend/half_precision.py.)"""

import torch

from ..importer import static_shape
from ..registry import import_rule
from .args import bind
from .builders import compute_dtype, emit_like

aten = torch.ops.aten


@import_rule(aten._native_batch_norm_legit_no_training)
def _batch_norm_inference(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node, 0)
    compute = compute_dtype(val.dtype)
    xv = ctx.cast(ctx.tensor(a.input), compute)
    shape = ctx.shape_of(xv)
    channel = [1, shape[1]] + [1] * (len(shape) - 2)
    mean_c, var_c = ctx.cast(ctx.tensor(a.running_mean), compute), ctx.cast(ctx.tensor(a.running_var), compute)
    inv_c = emit_like(ctx, "rsqrt", emit_like(ctx, "add", var_c, ctx.broadcast(ctx.scalar(a.eps, compute), [shape[1]])))

    def per_channel(v):
        return ctx.broadcast(ctx.reshape(v, channel), shape)

    y = emit_like(ctx, "mul", emit_like(ctx, "sub", xv, per_channel(mean_c)), per_channel(inv_c))
    if a.weight is not None:
        y = emit_like(ctx, "mul", y, per_channel(ctx.cast(ctx.tensor(a.weight), compute)))
    if a.bias is not None:
        y = emit_like(ctx, "add", y, per_channel(ctx.cast(ctx.tensor(a.bias), compute)))
    # Outputs 1 and 2: empty on CPU; on CUDA eager returns the running mean and 1/sqrt(var + eps).
    saved = [ctx.out_meta(node, i) for i in (1, 2)]
    return (ctx.cast(y, val.dtype), *(ctx.cast(v, s.dtype) if s.numel() else ctx.full(0, static_shape(s), s.dtype)
                                      for v, s in zip((mean_c, inv_c), saved)))
