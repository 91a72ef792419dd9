"""The rocm runtime: the code object loaded once per device through the HIP module API
(libamdhip64, by ctypes), the host schedule replayed per call: torch allocates (a ROCm build
of torch names AMD GPUs "cuda" and its allocator hands out HIP memory), kernels launch with
hipModuleLaunchKernel on torch's current stream.

Without an AMD GPU (no /dev/kfd, or a torch built without ROCm, or no libamdhip64) `available()`
is False and `load` raises `NoAMDGPU`: the backend then runs each region eagerly and says why,
after every stage has been generated. Only that path is exercised on machines without one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import torch

from dynamo_mlir.plugin import LaunchStep, alloc_step

NO_GPU = ("no AMD GPU: the rocm target generated every stage (dump them with dynamo-mlir dump --target rocm); "
          "running needs an AMD GPU and a ROCm build of torch")


class NoAMDGPU(RuntimeError):
    """This machine cannot run the rocm target's code objects."""


class HipError(RuntimeError):
    pass


@functools.lru_cache(maxsize=1)
def hip():
    """libamdhip64 with the argument types of the few HIP module calls used, or None."""
    name = ctypes.util.find_library("amdhip64") or "libamdhip64.so"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    p, vp = ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p
    lib.hipModuleLoadData.argtypes = [p, vp]
    lib.hipModuleGetFunction.argtypes = [p, vp, ctypes.c_char_p]
    lib.hipModuleLaunchKernel.argtypes = [vp] + [ctypes.c_uint] * 6 + [ctypes.c_uint, vp, p, p]
    lib.hipGetErrorString.restype = ctypes.c_char_p
    return lib


def missing() -> str | None:
    """Why this machine cannot run the target, or None."""
    if torch.version.hip is None:
        return "torch is not a ROCm build (torch.version.hip is None)"
    if not os.path.exists("/dev/kfd"):
        return "no /dev/kfd (the AMD GPU kernel driver)"
    if not torch.cuda.is_available():
        return "torch sees no AMD GPU"
    if hip() is None:
        return "libamdhip64 cannot be loaded"
    return None


def available() -> bool:
    return missing() is None


def check(code: int, what: str) -> None:
    if code != 0:
        raise HipError(f"dynamo-mlir rocm: {what} failed: {hip().hipGetErrorString(code).decode()} ({code})")


class LoadedModule:
    """One hipModuleLoadData of the code object on the current device, and its kernel handles."""

    def __init__(self, image: bytes, kernels: list[str]):
        self.image = image  # HIP reads the image during the call; kept for the module's lifetime
        self.module = ctypes.c_void_p()
        check(hip().hipModuleLoadData(ctypes.byref(self.module), image), "hipModuleLoadData")
        self.functions = {}
        for k in kernels:
            fn = ctypes.c_void_p()
            check(hip().hipModuleGetFunction(ctypes.byref(fn), self.module, k.encode()), f"hipModuleGetFunction {k}")
            self.functions[k] = fn


def _hip_launch(function, grid, shared, launch, stream, params) -> None:
    (gx, gy, gz), (bx, by, bz) = grid, launch.block
    check(hip().hipModuleLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, ctypes.c_void_p(stream),
                                      ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)), None),
          f"hipModuleLaunchKernel {launch.kernel}")


# Host schedule steps by kind (the schedule is plain data: `stages.host_schedules`), run by the
# core's GPU launch steps (sizes known per call evaluated from the call's tensors). A rocm
# program has no library steps: map_to_gpu makes every op a generated kernel.
STEP_BUILDERS = {
    "Launch": lambda self, step, module, device: LaunchStep(step, module.functions[step.kernel], self.host.index_bits,
                                                            _hip_launch, error=HipError),
    "Alloc": lambda self, step, module, device: alloc_step(step, device),
}


class RocmFunction:
    """A callable over AMD GPU tensors (torch device "cuda" on ROCm); returns fresh outputs."""

    def __init__(self, code, signature):
        self.code, self.signature = code, signature
        self.host = code.hosts[signature.name]
        self.n_in = len(signature.inputs)
        self.static = signature.is_static
        self.out_specs = [(shape, getattr(torch, dtype)) for shape, dtype in self.host.arg_types[self.n_in:]]
        self._per_device: dict[int, tuple] = {}

    def _prepare(self, device: torch.device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in self._per_device:
            with torch.cuda.device(index):
                module = LoadedModule(bytes(self.code), sorted(set(self.host.kernels)))
            steps = [STEP_BUILDERS[type(s).__name__](self, s, module, device) for s in self.host.steps]
            constants = [(slot, torch.from_numpy(c.values.copy()).to(device=device, dtype=getattr(torch, c.dtype)))
                         for slot, c in self.host.constants.items()]
            self._per_device[index] = (steps, constants)
        return self._per_device[index]

    def __call__(self, *inputs) -> list[torch.Tensor]:
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]  # the rest: `index` sizes (ints)
        device = tensors[0].device if tensors else torch.device("cuda", torch.cuda.current_device())
        steps, constants = self._prepare(device)
        bufs: list = [None] * self.host.n_slots
        for i, t in enumerate(inputs):
            usable = not isinstance(t, torch.Tensor) or (t.is_contiguous() and t.data_ptr() % 16 == 0)
            bufs[i] = t if usable else t.contiguous().clone()
        shapes = [s for s, _ in self.out_specs] if self.static else self.signature.output_shapes(inputs)
        outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, (_, dtype) in zip(shapes, self.out_specs)]
        bufs[self.n_in:self.n_in + len(outputs)] = outputs
        for slot, tensor in constants:
            bufs[slot] = tensor
        stream = torch.cuda.current_stream(device).cuda_stream
        for step in steps:
            step(bufs, stream)
        return outputs


def load(code, signature, options):
    why = missing()
    if why is not None:
        raise NoAMDGPU(f"{NO_GPU} ({why})")
    return RocmFunction(code, signature)
