"""The rocm target's stages: dynamo -> linalg -> buffers -> gpu -> rocdl -> ll -> hsaco.

Up to `gpu` the artifact is the MLIR module (host functions with gpu.launch_func ops plus
outlined gpu.modules), built by the core's reusable steps, as named passes, as for NVIDIA GPUs. From
`rocdl` on it is a `RocmProgram`: the host schedule, read once from the host functions, and the
device code, which changes form (ROCDL/LLVM-dialect module, LLVM IR); `hsaco` is the linked
code object (bytes, dumped as a binary file) carrying the host schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from torch_mlir import ir

from dynamo_mlir.plugin import CompileError, extern_dynamic_shared, run_pipeline, stages

from . import code_object, math_expansion
from .code_object import TRIPLE, CodeObject, CodeObjectError

TARGET_NAME = "rocm"

# Dialects MLIR's LLVM IR translator knows in a ROCDL kernel module. Anything else left there (a
# math op no pass converted) would make the translator crash the process, not raise.
TRANSLATABLE_DIALECTS = frozenset({"builtin", "llvm", "rocdl"})


@dataclass(frozen=True)
class RocmProgram:
    """hosts: host schedule per function name; device: ROCDL module or LLVM IR text."""

    hosts: dict
    device: Any
    stage: str

    @property
    def kernels(self) -> list[str]:
        return sorted({k for h in self.hosts.values() for k in h.kernels})

    def __str__(self) -> str:
        device = self.device
        if hasattr(device, "operation"):
            device = device.operation.get_asm(large_elements_limit=64)
        comment = "//" if self.stage == "rocdl" else ";"
        host = "\n".join(str(h) for h in self.hosts.values())
        return device + "\n" + "\n".join(f"{comment} {line}" for line in host.splitlines()) + "\n"


# The core's steps as named passes (rocm-lower-dynamo-ops, ..., rocm-kernels): each dumped with
# `dynamo-mlir dump --after-each-pass` and runnable alone with `dynamo-mlir pass NAME`.
LINALG = stages.linalg_passes(TARGET_NAME)
BUFFERS = stages.buffer_passes(TARGET_NAME)  # no deallocations: the host schedule allocates through torch, which frees
GPU = stages.gpu_passes(TARGET_NAME, fuse_rows=lambda options: options.target_options.rocm_fuse_rows)


def _index_bits(hosts: dict) -> int:
    """32-bit index math (cheaper on AMDGPU's 32-bit VALU) where every buffer fits; a buffer of
    symbolic size may not."""
    fits = max([h.max_elements for h in hosts.values()] or [0]) < 2**31
    return 32 if fits and not any(h.symbolic for h in hosts.values()) else 64


def _rocdl_passes(arch: str, bits: int) -> tuple[str, str]:
    """(before the Python erf expansion, after it): math that AMDGPU has no instruction for is
    widened, emulated and expanded first, so convert-gpu-to-rocdl finds no math op to send to
    ROCm's device library."""
    expand = ",".join(math_expansion.EXPANDED_BY_MLIR)
    before = ("gpu.module(math-extend-to-supported-types{target-type=f32}, "
              "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}, "
              f"math-expand-ops{{ops={expand}}}, canonicalize)")
    # expand-strided-metadata and lower-affine: the views and index math of the kernels of symbolic
    # sizes (the core's codegen/gpu strategies) take their buffers through.
    after = ("gpu.module(expand-strided-metadata, lower-affine, convert-scf-to-cf, "
             "convert-math-to-llvm{approximate-log1p=false}, "
             f"convert-gpu-to-rocdl{{chipset={arch} index-bitwidth={bits} use-bare-ptr-memref-call-conv=1}}, "
             "canonicalize, cse, reconcile-unrealized-casts)")
    return before, after


def make_rocdl(module: ir.Module, options) -> RocmProgram:
    hosts = stages.host_schedules(module, stage="rocdl")
    bits = _index_bits(hosts)
    for host in hosts.values():
        host.index_bits = bits  # the runtime passes `index` kernel arguments at this width
    before, after = _rocdl_passes(options.target_options.rocm_arch, bits)
    run_pipeline(module, before, "rocdl", options)
    math_expansion.expand_erf(module)
    run_pipeline(module, after, "rocdl", options)
    extern_dynamic_shared(module)  # upstream declares it internal (the plugin API says why)
    return RocmProgram(hosts, stages.device_module(module, TRIPLE), "rocdl")


def check_translatable(device: ir.Module) -> None:
    """Raise CompileError naming the first op (and its ATen node, from the location) that the
    LLVM IR translator has no registration for, or a call into ROCm's device library."""
    bad = []

    def visit(op):
        callee = op.attributes["callee"] if op.name == "llvm.call" and "callee" in op.attributes else None
        if op.name.split(".")[0] not in TRANSLATABLE_DIALECTS or (callee and "__ocml_" in str(callee)):
            bad.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    device.operation.walk(visit)
    if bad:
        op = bad[0]
        what = f"a call to {op.attributes['callee']}" if op.name == "llvm.call" else f"'{op.name}'"
        raise CompileError("ll", f"{what} at {op.location} has no AMDGPU lowering without ROCm's device "
                                 "library, so no kernel can be built for it")


def make_ll(program: RocmProgram, options) -> RocmProgram:
    check_translatable(program.device)
    return replace(program, device=stages.llvm_ir(program.device, triple=TRIPLE), stage="ll")


def make_hsaco(program: RocmProgram, options) -> CodeObject:
    arch = options.target_options.rocm_arch
    try:
        data, assembly = code_object.build(program.device, program.kernels, arch)
    except CodeObjectError as e:
        raise CompileError("hsaco", str(e)) from None
    return CodeObject(data, program.hosts, arch, program.kernels, assembly)
