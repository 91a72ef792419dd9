"""Half-precision decompositions: where eager's CPU and CUDA kernels round differently.

Eager's CUDA kernels compute half inputs in float32 ("opmath") and round the result once, as
torch's reference decompositions do. A few eager CPU kernels round in between instead, and on
CPU they are followed here:
- batch norm in training mode stores mean and inverse std in the input dtype (save_mean /
  save_invstd) and normalizes with those rounded statistics; the rounding depends on the
  float32 sums' vectorized order, so that op is left to eager for half inputs on CPU;
- logit and cross compute in scalar_t (c10::BFloat16 arithmetic rounds every operation) on CPU.
The other wrappers keep torch's decomposition for other dtypes and, for half inputs, traces
eager's roundings as ops on half tensors: our importer computes each such op in float32 and
rounds its result, which is exactly what the eager kernel does.
"""

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import _disable_current_modes

from .registry import Unsupported, import_rule

aten = torch.ops.aten

HALF = (torch.bfloat16, torch.float16)

# Batch-norm overloads -> index of their `training` argument.
BATCH_NORM_TRAINING_ARG = {
    aten._native_batch_norm_legit_functional.default: 5,
    aten._native_batch_norm_legit.default: 5,
    aten._native_batch_norm_legit.no_stats: 3,
    aten.native_batch_norm.default: 5,
}


def _batch_norm(reference, training_arg: int):
    def decompose(x, weight, bias, *rest):
        if x.dtype in HALF and x.device.type == "cpu" and rest[training_arg - 3]:
            return NotImplemented  # stays one op; its import rule below keeps it eager
        return reference(x, weight, bias, *rest)

    return decompose


@import_rule(*BATCH_NORM_TRAINING_ARG)
def _half_batch_norm_training(ctx, node):
    # Only half-precision training batch norm on CPU reaches here (see _batch_norm).
    raise Unsupported(
        "half-precision batch norm in training mode: eager normalizes with its float32 statistics "
        "rounded to the input dtype, and its vectorized summation order (which we do not reproduce) "
        "decides that rounding")


def _rounded(value: float, dtype: torch.dtype) -> float:
    """A Python float rounded to dtype (a real tensor: this runs while tracing)."""
    with _disable_current_modes():
        return torch.tensor(value, dtype=torch.float32).to(dtype).item()


def in_float32(decomposition):
    """`decomposition` on float32 copies of its half inputs (all of one half type), its float32
    results rounded once to that type; other calls unchanged."""

    def decompose(*args, **kwargs):
        tensors = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        dtypes = {x.dtype for x in tensors if x.is_floating_point()}
        if len(dtypes) != 1 or next(iter(dtypes)) not in HALF:
            return decomposition(*args, **kwargs)
        (half,) = dtypes
        up = lambda x: x.float() if isinstance(x, torch.Tensor) and x.dtype == half else x  # noqa: E731
        down = lambda x: x.to(half) if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x  # noqa: E731
        args, kwargs = pytree.tree_map(up, (args, kwargs))
        return pytree.tree_map(down, decomposition(*args, **kwargs))

    return decompose


def _on_cpu(x) -> bool:
    return x.device.type == "cpu"


def _logit(reference):
    float32_reference = in_float32(reference)

    def decompose(x, eps=None):
        if x.dtype not in HALF or not _on_cpu(x):
            return float32_reference(x, eps)
        if eps is not None and eps >= 0:
            # eps and 1 - eps as scalar_t, as the kernel computes them
            lo = _rounded(eps, x.dtype)
            x = x.clamp(lo, _rounded(1 - lo, x.dtype))
        return torch.log(x / (1 - x))

    return decompose


def _cross(reference):
    def decompose(a, b, dim=-1):
        if a.dtype not in HALF or b.dtype != a.dtype or not _on_cpu(a):
            return reference(a, b, dim=dim)
        shape = torch.broadcast_shapes(a.shape, b.shape)
        a, b = a.expand(shape), b.expand(shape)
        d = dim % len(shape)
        # r[i] = a[i+1] * b[i+2] - a[i+2] * b[i+1], each product and the difference rounded
        a1, a2 = torch.roll(a, -1, d), torch.roll(a, -2, d)
        b1, b2 = torch.roll(b, -1, d), torch.roll(b, -2, d)
        return a1 * b2 - a2 * b1

    return decompose


def half_overrides(table: dict) -> dict:
    """Replacements for the entries of `table` (a decomposition table) listed above."""
    out = {}
    for op, training_arg in BATCH_NORM_TRAINING_ARG.items():
        if op in table:
            out[op] = _batch_norm(table[op], training_arg)
    if aten.logit.default in table:
        out[aten.logit.default] = _logit(table[aten.logit.default])
    if aten.linalg_cross.default in table:
        out[aten.linalg_cross.default] = _cross(table[aten.linalg_cross.default])
    return out
