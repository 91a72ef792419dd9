"""The user-facing op: `fused::rms_norm(Tensor x, Tensor weight, float eps) -> Tensor`.

Its eager implementation is transformers' LlamaRMSNorm: half inputs are normalized in float32,
the normalized row is rounded back to x's dtype once, then scaled by the weight in that dtype.
The fake implementation lets Dynamo and AOTAutograd trace it; the autograd formula makes it
trainable (AOTAutograd traces the backward below into ATen ops, which the core compiles)."""

import torch


@torch.library.custom_op("fused::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * y.to(x.dtype)


@rms_norm.register_fake
def _(x, weight, eps):
    torch._check(weight.dim() == 1 and weight.shape[0] == x.shape[-1],
                 lambda: f"weight must be 1-d of x's last dim {x.shape[-1]}, got {tuple(weight.shape)}")
    return x.new_empty(x.shape, dtype=torch.promote_types(x.dtype, weight.dtype))


def _setup_context(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _backward(ctx, grad):
    """With n = x * r, r = rsqrt(mean(x^2) + eps) (float32), out = weight * n:
    d weight = sum over rows of grad * n (n rounded to x's dtype, as the forward used it),
    d x = r * (g - n * mean(g * n)) with g = grad * weight (the rounding passes the gradient)."""
    x, weight = ctx.saved_tensors
    x32 = x.float()
    r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + ctx.eps)
    n = x32 * r
    g = grad.float() * weight.float()
    dx = r * (g - n * (g * n).mean(-1, keepdim=True))
    dw = (grad.float() * n.to(x.dtype).float()).reshape(-1, x.shape[-1]).sum(0)
    return dx.to(x.dtype), dw.to(weight.dtype), None


rms_norm.register_autograd(_backward, setup_context=_setup_context)
