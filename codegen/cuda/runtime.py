"""CUDA runtime: the PTX loaded once per device through cuda-bindings, the host schedule replayed
per call: torch allocates (caching allocator), kernels launch on torch's current stream, matmul
and convolution run through torch (cuBLAS/cuDNN). Every driver result is checked.

cuda-bindings is imported lazily: the package (and PTX generation) works without it.
"""

from __future__ import annotations

import ctypes
import logging

import torch

from ..signature import Signature
from . import library
from .schedule import Alloc, HostSchedule, Launch, Library

log = logging.getLogger("dynamo_mlir")

_SCALARS = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
            "i1": ctypes.c_bool, "index32": ctypes.c_int32, "index64": ctypes.c_int64}


class CudaError(RuntimeError):
    pass


def driver():
    """The CUDA driver module of cuda-bindings (12.6+: cuda.bindings.driver; older: cuda.cuda)."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        from cuda import cuda as drv  # type: ignore[no-redef]
    return drv


def available() -> bool:
    try:
        if not torch.cuda.is_available():
            return False
        driver()
        return True
    except Exception:
        return False


def check(result, what: str):
    """Raise CudaError naming `what` unless a driver call's result is CUDA_SUCCESS."""
    drv = driver()
    err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != drv.CUresult.CUDA_SUCCESS:
        name = drv.cuGetErrorName(err)[1]
        text = name.decode() if isinstance(name, bytes) else str(name)
        raise CudaError(f"dynamo-mlir cuda: {what} failed: {text} ({int(err)})")
    return rest[0] if len(rest) == 1 else rest


class LoadedModule:
    """One cuModuleLoadData of the program's PTX on one device, and its kernel handles."""

    def __init__(self, ptx: str, kernels: list[str], device: int):
        drv = driver()
        torch.cuda.init()
        with torch.cuda.device(device):
            torch.empty(1, device=f"cuda:{device}")  # makes torch's primary context current
            if not int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")):
                ctx = check(drv.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
                check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            self.module = check(drv.cuModuleLoadData(ptx.encode() + b"\0"), f"cuModuleLoadData ({', '.join(kernels)})")
            self.functions = {k: check(drv.cuModuleGetFunction(self.module, k.encode()), f"cuModuleGetFunction {k}")
                              for k in kernels}


class LaunchStep:
    """cuLaunchKernel with a prebuilt kernelParams array; per call only pointers are rewritten."""

    def __init__(self, launch: Launch, function, index_bits: int):
        self.launch, self.function = launch, function
        self.values, self.ptr_slots = [], []
        for i, (kind, value) in enumerate(launch.args):
            if kind == "ptr":
                self.values.append(ctypes.c_void_p(0))
                self.ptr_slots.append((i, value))
            else:
                key = f"index{index_bits}" if kind == "index" else kind
                self.values.append(_SCALARS[key](value))
        n = len(self.values)
        self.params = (ctypes.c_void_p * max(n, 1))(*[ctypes.addressof(v) for v in self.values])
        self.params_ptr = ctypes.addressof(self.params)

    def __call__(self, bufs, stream) -> None:
        values = self.values
        for i, slot in self.ptr_slots:
            values[i].value = bufs[slot].data_ptr()
        (gx, gy, gz), (bx, by, bz) = self.launch.grid, self.launch.block
        err = driver().cuLaunchKernel(self.function, gx, gy, gz, bx, by, bz, 0, stream, self.params_ptr, 0)
        if err[0] != 0:
            check(err, f"cuLaunchKernel {self.launch.kernel} grid={self.launch.grid} block={self.launch.block}")


def _alloc_step(step: Alloc, device):
    dtype = getattr(torch, step.dtype)

    def run(bufs, stream):
        bufs[step.slot] = torch.empty(step.numel, dtype=dtype, device=device)

    return run


def _upload(constant, device) -> torch.Tensor:
    """A constant on the device in its own dtype (bf16 values arrive as exact float32)."""
    values = torch.from_numpy(constant.values.copy())
    return values.to(device=device, dtype=getattr(torch, constant.dtype))


class CudaFunction:
    """A callable over CUDA tensors; returns freshly allocated outputs."""

    def __init__(self, program, signature: Signature, options):
        self.signature = signature
        self.host: HostSchedule = program.hosts[signature.name]
        self.ptx, self.kernels = program.device, sorted(set(self.host.kernels))
        self.n_in = len(signature.inputs)
        self.out_specs = [(shape, getattr(torch, dtype)) for shape, dtype in self.host.arg_types[self.n_in:]]
        self._per_device: dict[int, tuple] = {}

    def _prepare(self, device: torch.device):
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in self._per_device:
            module = LoadedModule(self.ptx, self.kernels, index) if self.kernels else None
            steps = [self._step(s, module, device) for s in self.host.steps]
            constants = [(slot, _upload(c, device)) for slot, c in self.host.constants.items()]
            self._per_device[index] = (module, steps, constants)
        return self._per_device[index]

    def _step(self, step, module, device):
        if isinstance(step, Launch):
            return LaunchStep(step, module.functions[step.kernel], self.host.index_bits)
        if isinstance(step, Alloc):
            return _alloc_step(step, device)
        if isinstance(step, Library):
            return library.step(step)
        raise TypeError(f"unknown host step {step}")

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        device = inputs[0].device if inputs else torch.device("cuda", torch.cuda.current_device())
        if device.type != "cuda":  # a host pointer handed to a kernel would fault the GPU
            raise CudaError(f"dynamo-mlir cuda: {self.signature.name} got a tensor on {device}, not a CUDA device")
        _, steps, constants = self._prepare(device)
        bufs: list = [None] * self.host.n_slots
        for i, t in enumerate(inputs):
            # Kernels index row-major buffers and use 16-byte vector loads: contiguous and aligned.
            bufs[i] = t if t.is_contiguous() and t.data_ptr() % 16 == 0 else t.contiguous().clone()
        outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self.out_specs]
        bufs[self.n_in:self.n_in + len(outputs)] = outputs
        for slot, tensor in constants:
            bufs[slot] = tensor
        stream = torch.cuda.current_stream(device).cuda_stream
        for step in steps:
            step(bufs, stream)
        return outputs


class GraphedFunction:
    """mode="reduce-overhead": the whole host schedule captured once in a CUDA graph, replayed.

    Inputs are copied into the graph's own buffers and outputs cloned out of it: callers (and
    AOTAutograd's saved tensors) may keep outputs across calls, which the next replay would
    otherwise overwrite.
    """

    def __init__(self, fn: CudaFunction):
        self.fn = fn
        self.graph = None
        self.key = None

    def _capture(self, inputs):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up: module load, allocator pools
            self.fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.static_inputs = [t.clone() for t in inputs]
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_outputs = self.fn(*self.static_inputs)
        self.key = _key(inputs)

    def __call__(self, *inputs):
        if self.graph is None or _key(inputs) != self.key:
            self._capture(inputs)
        for static, t in zip(self.static_inputs, inputs):
            static.copy_(t)
        self.graph.replay()
        return [o.clone() for o in self.static_outputs]


def _key(inputs):
    return tuple((t.device, t.dtype, tuple(t.shape)) for t in inputs)


def load(artifact, signature: Signature, options):
    fn = CudaFunction(artifact, signature, options)
    if options.mode == "reduce-overhead" and options.target_options.cuda_graphs:
        return GraphedFunction(fn)
    return fn
