"""dynamo dialect -> linalg/tensor/arith/math: one registered rule per op, plus the lowering pass."""

from . import rules  # noqa: F401  (registers the generic rules)
from .registry import NoLoweringRule, lowered_ops, register_lowering
from .to_linalg import LoweringError, lower_dynamo_ops

__all__ = ["register_lowering", "lowered_ops", "lower_dynamo_ops", "NoLoweringRule", "LoweringError"]
