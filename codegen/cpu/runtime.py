"""CPU runtime: the LLVM-dialect module JIT-compiled by MLIR's ExecutionEngine, called through
its packed `_mlir_<name>(void**)` wrapper with tensors' data pointers (bare-pointer convention).

Per call: allocate outputs with torch, write pointers into a prebuilt ctypes array, one C call.
No numpy memref descriptors on this path.
"""

import ctypes
import logging

import torch
from torch_mlir.execution_engine import ExecutionEngine

from ..signature import Signature

log = logging.getLogger("dynamo_mlir")

_PACKED_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class CpuFunction:
    """A callable over contiguous CPU tensors; returns freshly allocated outputs."""

    def __init__(self, module, signature: Signature, opt_level: int = 3):
        self.signature = signature
        self._module = module  # keep the IR's context alive as long as the engine
        self._engine = ExecutionEngine(module, opt_level=opt_level)
        self._fn = _PACKED_FN(self._engine.raw_lookup(signature.name))
        n = len(signature.inputs) + len(signature.outputs)
        # args[i] points at slots[i], which holds tensor i's data pointer.
        self._slots = (ctypes.c_void_p * n)()
        base = ctypes.addressof(self._slots)
        self._args = (ctypes.c_void_p * n)(*[base + i * ctypes.sizeof(ctypes.c_void_p) for i in range(n)])
        self._n_in = len(signature.inputs)
        self._out_specs = [(spec.shape, spec.dtype) for spec in signature.outputs]

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        slots = self._slots
        for i, t in enumerate(inputs):
            slots[i] = t.data_ptr()
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in self._out_specs]
        for j, t in enumerate(outputs, self._n_in):
            slots[j] = t.data_ptr()
        self._fn(self._args)
        return outputs


def load(artifact, signature: Signature, options) -> CpuFunction:
    return CpuFunction(artifact, signature, opt_level=options.opt_level)
