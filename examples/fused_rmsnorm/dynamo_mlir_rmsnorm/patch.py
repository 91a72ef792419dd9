"""Route a model's RMSNorm modules (transformers' LlamaRMSNorm and look-alikes) to fused::rms_norm."""

import logging
import types

import torch

from .op import rms_norm

log = logging.getLogger(__name__)

CLASS_NAMES = ("LlamaRMSNorm",)


def is_rms_norm(module: torch.nn.Module) -> bool:
    """A LlamaRMSNorm by name, or any module with a 1-d `weight` and a `variance_epsilon`."""
    if type(module).__name__ in CLASS_NAMES:
        return True
    weight = getattr(module, "weight", None)
    return isinstance(weight, torch.nn.Parameter) and weight.dim() == 1 and hasattr(module, "variance_epsilon")


def _fused_forward(self, hidden_states):
    return rms_norm(hidden_states, self.weight, self.variance_epsilon)


def use_fused_rmsnorm(model: torch.nn.Module) -> int:
    """Replace the forward of every RMSNorm module in `model` (in place); returns how many."""
    count = 0
    for name, module in model.named_modules():
        if is_rms_norm(module):
            module.forward = types.MethodType(_fused_forward, module)
            count += 1
    log.info("routed %d RMSNorm modules to fused::rms_norm", count)
    return count
