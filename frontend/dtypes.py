"""torch dtype <-> MLIR element type, one table."""

import numpy as np
import torch
from torch_mlir import ir

# torch dtype -> builder of the MLIR element type. Integers are signless; bool is i1 and
# unsigned by convention (the casts in lowering/scalar.py treat it so).
_TYPES = {
    torch.float32: lambda: ir.F32Type.get(),
    torch.float64: lambda: ir.F64Type.get(),
    torch.float16: lambda: ir.F16Type.get(),
    torch.bfloat16: lambda: ir.BF16Type.get(),
    torch.int64: lambda: ir.IntegerType.get_signless(64),
    torch.int32: lambda: ir.IntegerType.get_signless(32),
    torch.int16: lambda: ir.IntegerType.get_signless(16),
    torch.int8: lambda: ir.IntegerType.get_signless(8),
    torch.bool: lambda: ir.IntegerType.get_signless(1),
}
# uint8 would need unsigned semantics everywhere; it stays eager until the dialect models it.
SUPPORTED_DTYPES = frozenset(_TYPES)

# torch dtype -> numpy dtype, for constants built from numpy arrays (numpy has no bfloat16).
NUMPY_TYPES = {
    torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
    torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
    torch.bool: np.bool_,
}

# Types computed in float32 and rounded back, as PyTorch's own kernels do (internal upcast).
UPCAST_DTYPES = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def mlir_type(dtype: torch.dtype) -> ir.Type:
    try:
        return _TYPES[dtype]()
    except KeyError:
        raise NotImplementedError(f"dtype {dtype} is not supported by the dynamo dialect") from None


def tensor_type(shape, dtype: torch.dtype) -> ir.RankedTensorType:
    dyn = ir.ShapedType.get_dynamic_size()
    return ir.RankedTensorType.get([s if isinstance(s, int) else dyn for s in shape], mlir_type(dtype))


def is_floating(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point
