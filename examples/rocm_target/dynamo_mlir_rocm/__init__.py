"""The `rocm` target: AMD GPUs, as an out-of-tree dynamo-mlir plugin.

linalg -> buffers -> gpu (the core's blocks/threads mapping, as for NVIDIA) -> rocdl (ROCDL
dialect for a gfx architecture) -> ll (LLVM IR) -> hsaco (llvmlite's AMDGPU backend, linked by
ld.lld into an HSA code object) -> HIP module API at run time.

Explicit-only (`options={"target": "rocm"}`): a ROCm build of torch names AMD GPUs "cuda",
the core cuda target's device type, so this target is never chosen by device.
"""

from dynamo_mlir.plugin import Stage, Target

from . import pipeline, runtime
from .options import ROCmOptions


def _host_schedule(code) -> str:
    return "\n".join(str(h) for h in code.hosts.values())


TARGET = Target(
    name=pipeline.TARGET_NAME,
    device_type="cuda",  # torch's device type for AMD GPUs on a ROCm build
    serves=(),
    stages=(
        Stage("linalg", "mlir", doc="dynamo ops -> linalg on tensors, elementwise ops fused", passes=pipeline.LINALG),
        Stage("buffers", "mlir", doc="bufferized, results as out-params", passes=pipeline.BUFFERS),
        Stage("gpu", "mlir", doc="gpu.launch per kernel (workgroups/work-items), outlined gpu.modules",
              passes=pipeline.GPU),
        Stage("rocdl", "mlir", pipeline.make_rocdl, "kernels in ROCDL/LLVM dialect for the gfx arch; host schedule"),
        Stage("ll", "ll", pipeline.make_ll, "kernels as LLVM IR (amdgcn-amd-amdhsa)"),
        Stage("hsaco", "hsaco", pipeline.make_hsaco, "HSA code object (ELF shared object) for the gfx arch"),
    ),
    load=runtime.load,
    available=runtime.available,
    extra_dumps={"host": ("txt", _host_schedule), "s": ("s", lambda code: code.assembly)},
    options_class=ROCmOptions,
    doc="AMD GPUs (gfx90a, gfx942): generated kernels as HSA code objects through the HIP module API.",
    # As cuda: kernels come from linalg ops mapped to work-items; no serial loop nests. Symbolic
    # sizes through the core's codegen/gpu strategies, with this target's GPU capabilities.
    capabilities=frozenset({"dynamic_shapes"}),
)
