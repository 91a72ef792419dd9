"""Decompositions of torch.nn.functional.linear_cross_entropy's chunked custom ops.

Eager runs them as opaque `torch_nn::` custom ops that loop over batch chunks to bound memory
(and, for mean/sum, precompute the gradients in the forward). Compiled, they are what they
compute: `cross_entropy(linear(input))`, which lands on ops we import. Only the float32/float64
loss-only forms are rewritten: with gradients requested, or in half precision where eager
accumulates in another dtype, the custom op runs eagerly (a decomposition returning
NotImplemented leaves the op as it is).
"""

import torch
import torch.nn.functional as F

_FULL_PRECISION = (torch.float32, torch.float64)


def _loss(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing):
    logits = F.linear(input, linear_weight, linear_bias)
    return F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)


def _scalar_reduction(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                      label_smoothing, batch_chunk_size, acc_policy, acc_dtype, allow_retain_graph,
                      compute_input_grad, compute_linear_weight_grad, compute_linear_bias_grad):
    if compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad:
        return NotImplemented
    if input.dtype not in _FULL_PRECISION or linear_weight.dtype != input.dtype:
        return NotImplemented
    loss = _loss(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing)
    # No gradient was asked for: the op's other results are its empty placeholders.
    empty = lambda *shape: input.new_empty(shape)
    return loss, empty(0, 0), empty(0, 0), empty(0)


def _no_reduction(input, linear_weight, target, linear_bias, weight, ignore_index, batch_chunk_size,
                  acc_policy, acc_dtype):
    if input.dtype not in _FULL_PRECISION or linear_weight.dtype != input.dtype:
        return NotImplemented
    return _loss(input, linear_weight, target, linear_bias, weight, "none", ignore_index, 0.0)


def decompositions() -> dict:
    """{op overload: decomposition} for the custom ops this torch build has (they are new)."""
    try:  # the ops are registered when this module is first imported, lazily by F.linear_cross_entropy
        import torch.nn.modules.linear_cross_entropy  # noqa: F401
    except ImportError:
        return {}
    ops = torch.ops.torch_nn
    table = {}
    for name, fn in (("_linear_cross_entropy_batch_chunked", _scalar_reduction),
                     ("_linear_cross_entropy_batch_chunked_no_reduction", _no_reduction)):
        if hasattr(ops, name):
            table[getattr(ops, name).default] = fn
    return table
