"""The `cuda` target: linalg -> gpu dialect (blocks/threads) -> NVVM -> LLVM IR -> PTX (llvmlite)
-> CUDA driver (cuda-bindings), with a host schedule replayed in Python on torch's stream.

PTX generation needs no GPU (tests run it in CI); running needs one and cuda-bindings.
"""

from ..target import Stage, Target
from . import pipeline, ptx, runtime
from .options import CUDAOptions


def _host_schedule(program) -> str:
    return "\n".join(str(h) for h in program.hosts.values())


TARGET = Target(
    name="cuda",
    device_type="cuda",
    stages=(
        Stage("linalg", "mlir", doc="dynamo ops -> linalg on tensors, elementwise ops fused", passes=pipeline.LINALG),
        Stage("buffers", "mlir", doc="bufferized, results as out-params", passes=pipeline.BUFFERS),
        Stage("gpu", "mlir", doc="gpu.launch per kernel (blocks/threads), outlined gpu.modules", passes=pipeline.GPU),
        Stage("nvvm", "mlir", doc="kernels in NVVM/LLVM dialect; host schedule extracted", passes=pipeline.NVVM),
        Stage("ll", "ll", pipeline.make_ll, "kernels as LLVM IR"),
        Stage("ptx", "ptx", pipeline.make_ptx, "PTX for the device's compute capability"),
    ),
    load=runtime.load,
    available=runtime.available,
    extra_dumps={"host": ("txt", _host_schedule)},
    options_class=CUDAOptions,
    cacheable=True,  # the ptx stage's CudaProgram: PTX text and the host schedule, plain data
    machine=lambda options: ptx.arch_for(options),
    doc="NVIDIA GPUs: generated PTX kernels through the CUDA driver, torch for matmul/conv/pooling (library_matmul), index_put/scatter and inference attention (cuda_library_attention).",
    # Kernels come from linalg ops mapped to blocks/threads: no place for serial loop nests, and
    # the math library's bodies are not validated on it (those ops stay eager). written_inputs:
    # an optimizer step's kernels store the new parameters into the caller's tensors.
    # dynamic_shapes: an op of symbolic sizes becomes a kernel by codegen/gpu/tiled.py, its
    # sizes evaluated per call by the host schedule (codegen/gpu/host_sizes.py).
    capabilities=frozenset({"written_inputs", "dynamic_shapes"}),
)

from . import rules  # noqa: E402,F401  (cuda-specific lowerings; after TARGET, which declares the name)
