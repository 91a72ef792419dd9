"""Half-precision decompositions: where our float32-then-round-once rule needs help.

Half inputs are computed in float32 and rounded once per chain of ops (ImportContext.rounded), as
eager's CUDA kernels and inductor do. Eager's CPU kernels sometimes round in between, which is not
followed (it depends on the CPU's vector width), with one exception: batch norm in training mode
stores mean and inverse std in the input dtype (save_mean / save_invstd) and normalizes with
those rounded statistics, an observable output; that op is left to eager for half inputs on CPU.
`in_float32` wraps a decomposition whose steps would otherwise round (scalar arguments, ops
outside the chain rule) so that it runs wholly in float32.
"""

import torch
import torch.utils._pytree as pytree

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


def half_overrides(table: dict) -> dict:
    """Replacements for the entries of `table` (a decomposition table) listed above."""
    out = {}
    for op, training_arg in BATCH_NORM_TRAINING_ARG.items():
        if op in table:
            out[op] = _batch_norm(table[op], training_arg)
    if aten.logit.default in table:
        out[aten.logit.default] = in_float32(table[aten.logit.default])
    return out
