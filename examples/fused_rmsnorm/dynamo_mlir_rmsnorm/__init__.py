"""dynamo_mlir_rmsnorm: a fused RMSNorm for dynamo-mlir, written against `dynamo_mlir.plugin` only.

    import dynamo_mlir_rmsnorm
    dynamo_mlir_rmsnorm.use_fused_rmsnorm(llama_model)   # its RMSNorm modules call fused::rms_norm
    torch.compile(llama_model, backend="mlir")           # ... compiled as one fused.rms_norm op each

Importing the package registers everything: the custom op (op.py), the `fused` dialect and its
op (dialect.py), the import rule (importing.py), the generic lowering (generic.py) and the cpu
and cuda lowerings (linalg_rule.py)."""

from . import generic, importing, linalg_rule  # noqa: F401  (registrations)
from .dialect import Fused, RMSNormOp
from .generic import expand_rms_norm
from .linalg_rule import lower_cpu, lower_cuda
from .op import rms_norm
from .patch import is_rms_norm, use_fused_rmsnorm

__all__ = ["rms_norm", "use_fused_rmsnorm", "is_rms_norm", "Fused", "RMSNormOp", "expand_rms_norm", "lower_cpu",
           "lower_cuda"]
