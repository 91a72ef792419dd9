"""CPU runtime: a region's object code (object_code.py) linked into the process, called through
its packed `_mlir_<name>(void**)` wrapper with tensors' data pointers (bare-pointer convention).

Per call: allocate outputs with torch, write pointers into a prebuilt ctypes array, one C call.
A function whose intermediates were planned (memory_plan.py) takes a workspace as its last
argument: a uint8 tensor allocated once per argument frame and kept, so the call mallocs nothing.
One that hands results over (handed_results.py) takes, before it, an int64 per output, zeroed,
where the call leaves torch's tensor for each such output (no buffer is allocated for those).
No numpy memref descriptors on this path. A module calling torch's convolution also reports its
calls' status in a global (library_conv.py), read after each call: a failure raises.

Functions with dynamic dims use MLIR's default calling convention instead: each memref of rank r
is 3 + 2r scalars (allocated and aligned pointer, offset, sizes, strides), each behind its own
pointer in the packed call's argument array. Those scalars live in one prebuilt ctypes int64
array, so a call writes plain integers, like the static path. A size input (an `index`
argument, a SymInt of the graph) is one scalar.
"""

import ctypes
import functools
import logging

import torch

from ..passes import CompileError
from ..signature import Signature, SizeSpec
from . import heap
from .library import LIBTORCH_CPU
from .object_code import CpuObject, LinkedObject

log = logging.getLogger("dynamo_mlir")

_PACKED_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

try:
    # torch's allocation without the dispatcher, what inductor's generated CPU code calls: 0.5 us
    # against torch.empty's 1.6 (this project's AMD EPYC, timeit), and a training step's three
    # regions allocate ten outputs (the MLP Adam loop of bench_models --scale).
    from torch._C._dynamo.guards import _empty_strided_cpu as _empty_strided
except ImportError:  # a torch without it
    def _empty_strided(shape, strides, dtype):
        return torch.empty_strided(shape, strides, dtype=dtype)


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _channels_last_strides(shape) -> tuple[int, ...]:
    """NCHW `shape`'s strides with the bytes laid out NHWC (what the code wrote)."""
    n, h, w, c = _contiguous_strides([shape[p] for p in (0, 2, 3, 1)])
    return n, c, h, w


def output_strides(signature: Signature, nhwc_results) -> list[tuple[int, ...]]:
    """Each output's strides: dense, or channels-last for those the code writes NHWC."""
    return [(_channels_last_strides if k in nhwc_results else _contiguous_strides)(spec.shape)
            for k, spec in enumerate(signature.outputs)]


class _Frames:
    """The argument arrays (and workspaces) of calls in flight. ctypes releases the GIL during the
    call, so two threads may be inside one function at once: each call takes a frame of its own
    from the pool (list.pop and list.append are atomic) and puts it back after."""

    def __init__(self, make):
        self._make, self._free = make, []

    def take(self):
        try:
            return self._free.pop()
        except IndexError:
            return self._make()

    def give_back(self, frame) -> None:
        self._free.append(frame)


_CAPSULE = ctypes.pythonapi.PyCapsule_New  # torch takes the handle as an unnamed capsule (AOTInductor's runner)
_CAPSULE.restype, _CAPSULE.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


@functools.cache
def _delete_handle():
    delete = ctypes.CDLL(LIBTORCH_CPU).aoti_torch_delete_tensor_object
    delete.argtypes, delete.restype = [ctypes.c_void_p], ctypes.c_int32
    return delete


def _steal(handle: int) -> torch.Tensor:
    """The torch tensor behind an AtenTensorHandle the code handed over, the handle then deleted:
    torch's "stealing" function takes a reference of its own and leaves the handle's (checked:
    without the delete, every result leaked)."""
    tensor = torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr(_CAPSULE(handle, None, None))
    _delete_handle()(handle)
    return tensor


def _workspace(nbytes: int) -> torch.Tensor | None:
    """The planned intermediates' bytes (memory_plan.py), kept by the frame between calls."""
    return torch.empty(nbytes, dtype=torch.uint8) if nbytes else None


class CpuFunction:
    """A callable over contiguous CPU tensors; returns freshly allocated outputs."""

    def __init__(self, linked: LinkedObject, obj: CpuObject, signature: Signature):
        self.signature, self.linked = signature, linked  # the machine code lives as long as `linked`
        self._fn = _PACKED_FN(linked.function(obj.function))
        workspace_bytes = obj.workspace_bytes
        self._n_in = len(signature.inputs)
        self.nhwc_results = obj.nhwc_results  # RegionRecipe.load: the outputs handed on channels-last
        self._out_specs = [(tuple(spec.shape), strides, spec.dtype)
                           for spec, strides in zip(signature.outputs, output_strides(signature, obj.nhwc_results))]
        self.handed_results = obj.handed_results
        self._allocated = [k not in obj.handed_results for k in range(len(self._out_specs))]
        self.workspace_bytes = workspace_bytes
        self._frames = _Frames(self._frame)

    def _frame(self):
        """args[i] points at slots[i], which holds tensor i's data pointer; then the handed-over
        handles' array (its address), then the workspace."""
        workspace = _workspace(self.workspace_bytes)
        handed = (ctypes.c_int64 * len(self._out_specs))() if self.handed_results else None
        extra = [ctypes.addressof(handed)] if handed is not None else []
        if workspace is not None:
            extra.append(workspace.data_ptr())
        n = self._n_in + len(self._out_specs) + len(extra)
        slots = (ctypes.c_void_p * n)(*[None] * (n - len(extra)), *extra)
        base = ctypes.addressof(slots)
        args = (ctypes.c_void_p * n)(*[base + i * ctypes.sizeof(ctypes.c_void_p) for i in range(n)])
        return slots, args, (workspace, handed)

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        frame = self._frames.take()
        slots, args, (_, handed) = frame
        for i, t in enumerate(inputs):
            slots[i] = t.data_ptr()
        outputs = [_empty_strided(shape, strides, dtype) if allocated else None
                   for (shape, strides, dtype), allocated in zip(self._out_specs, self._allocated)]
        for j, t in enumerate(outputs, self._n_in):
            slots[j] = t.data_ptr() if t is not None else None
        self._fn(args)
        for k in self.handed_results:
            if handed[k]:  # (none where a library call failed: LibraryStatusChecked raises)
                outputs[k], handed[k] = self._as_promised(k, _steal(handed[k])), 0
        self._frames.give_back(frame)
        return outputs

    def _as_promised(self, k: int, t: torch.Tensor) -> torch.Tensor:
        """Handed-over result `t` for output k, copied into the strides its caller was told where
        torch's kernel chose others (a unit dim's stride is anything)."""
        shape, strides, dtype = self._out_specs[k]
        if t.dtype == dtype and all(n == 1 or a == b for n, a, b in zip(shape, t.stride(), strides)):
            return t
        out = _empty_strided(shape, strides, dtype)
        out.copy_(t)
        return out


class DynamicCpuFunction:
    """A callable over contiguous CPU tensors of any size its signature admits."""

    def __init__(self, linked: LinkedObject, obj: CpuObject, signature: Signature):
        if obj.nhwc_results:  # channels_last.free_results admits static signatures only
            raise CompileError("load", f"results {obj.nhwc_results} written NHWC by a function of symbolic sizes")
        if obj.handed_results:  # handed_results.hands_over admits static signatures only
            raise CompileError("load", f"results {obj.handed_results} handed over by a function of symbolic sizes")
        self.signature, self.linked = signature, linked
        self._fn = _PACKED_FN(linked.function(obj.function))
        workspace_bytes = obj.workspace_bytes
        widths = [1 if isinstance(spec, SizeSpec) else 3 + 2 * len(spec.shape)
                  for spec in (*signature.inputs, *signature.outputs)]
        if workspace_bytes:
            widths.append(3 + 2)  # memref<N x i8>
        self._bases = [sum(widths[:i]) for i in range(len(widths))]
        self._width = sum(widths)
        self._n_in = len(signature.inputs)
        # An input of static shape comes contiguous (Dynamo's guards, or the caller's copy): its
        # sizes and strides are written once per frame, its address per call. GPT-2's 150
        # parameters beside input ids of symbolic length were described whole every call.
        fixed = {i for i, spec in enumerate(signature.inputs) if not isinstance(spec, SizeSpec) and spec.is_static}
        self._fixed = [(i, self._bases[i]) for i in sorted(fixed)]
        self._described = [(i, self._bases[i]) for i in range(self._n_in) if i not in fixed]
        self._out_dtypes = [spec.dtype for spec in signature.outputs]
        self.workspace_bytes = workspace_bytes
        self._frames = _Frames(self._frame)

    def _frame(self):
        """args[k] points at slots[k]: each memref's scalars, each size input's value."""
        slots = (ctypes.c_int64 * self._width)()
        base = ctypes.addressof(slots)
        args = (ctypes.c_void_p * self._width)(*[base + 8 * i for i in range(self._width)])
        workspace = _workspace(self.workspace_bytes)
        if workspace is not None:
            _describe(slots, self._bases[-1], workspace)
        for i, k in self._fixed:
            shape = self.signature.inputs[i].shape
            slots[k + 2] = 0
            slots[k + 3:k + 3 + 2 * len(shape)] = [*shape, *_contiguous_strides(shape)]
        return slots, args, workspace

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        frame = self._frames.take()
        slots, args, _ = frame
        for i, k in self._fixed:
            slots[k] = slots[k + 1] = inputs[i].data_ptr()
        for i, k in self._described:
            _describe(slots, k, inputs[i])
        shapes = self.signature.output_shapes(inputs)
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in zip(shapes, self._out_dtypes)]
        for j, t in enumerate(outputs, self._n_in):
            _describe(slots, self._bases[j], t)
        self._fn(args)
        self._frames.give_back(frame)
        return outputs


def _describe(slots, k: int, t: torch.Tensor | int) -> None:
    """Tensor `t` as a memref descriptor's scalars from slots[k] (a size input: its value)."""
    if isinstance(t, int):
        slots[k] = t
        return
    slots[k] = slots[k + 1] = t.data_ptr()
    slots[k + 2] = 0
    rank = t.dim()
    for d, (size, stride) in enumerate(zip(t.shape, t.stride())):
        slots[k + 3 + d] = size
        slots[k + 3 + rank + d] = stride


class LibraryStatusChecked:
    """A loaded function whose module calls torch (library_conv.py): after each call, a nonzero
    status (torch's shim has logged the C++ exception) raises, and is reset for the next call."""

    def __init__(self, inner, status_symbol: str):
        self.signature, self._inner = inner.signature, inner
        self.nhwc_results = getattr(inner, "nhwc_results", ())
        self._status = ctypes.c_int32.from_address(inner.linked.global_value(status_symbol))

    def __call__(self, *inputs):
        outputs = self._inner(*inputs)
        if self._status.value:
            self._status.value = 0
            raise RuntimeError("a torch library call of the compiled code failed (torch logged the error above)")
        return outputs


def load(artifact: CpuObject, signature: Signature, options):
    """The region's callable: its object code linked into this process (compiled now, or read
    from the compile cache: the same path)."""
    if options.target_options.retain_freed_memory:  # before the first call: its buffers' pages stay
        heap.retain_freed_memory()
    linked = LinkedObject(artifact)
    kind = CpuFunction if signature.is_static else DynamicCpuFunction
    fn = kind(linked, artifact, signature)
    return fn if artifact.status_symbol is None else LibraryStatusChecked(fn, artifact.status_symbol)
