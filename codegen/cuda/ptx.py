"""Device code: the NVVM (LLVM-dialect) kernels -> LLVM IR -> PTX with llvmlite's NVPTX target.

MLIR's gpu-module-to-binary cannot be used (the wheel's LLVM has no NVPTX target), so the
kernels of every gpu.module are moved into one plain module with the nvptx64 triple, translated
to LLVM IR, linked with libdevice (for the `__nv_*` math functions), internalized so only the
kernels stay visible (the rest of libdevice then drops out) and optimized at O3 before emission.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, replace
from typing import Any

from torch_mlir import ir

from ..llvm_text import to_llvmlite_text

log = logging.getLogger("dynamo_mlir")

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
# Oldest PTX ISA that knows the architecture (the driver JIT-compiles any newer-or-equal ISA).
PTX_ISA = {100: "+ptx86", 101: "+ptx86", 103: "+ptx88", 120: "+ptx87", 121: "+ptx88"}
LIBDEVICE_PATHS = ("nvvm/libdevice/libdevice.10.bc",)


@dataclass(frozen=True)
class CudaProgram:
    """hosts: HostSchedule per function name; device: NVVM module, LLVM IR text or PTX text."""

    hosts: dict
    device: Any
    stage: str

    @property
    def kernels(self) -> list[str]:
        return [k for h in self.hosts.values() for k in h.kernels]

    @property
    def library_nodes(self) -> frozenset[str]:
        """FX nodes whose work the host schedule hands to torch (see Target)."""
        return frozenset(n for h in self.hosts.values() for n in h.library_nodes)

    def with_device(self, device, stage: str) -> "CudaProgram":
        return replace(self, device=device, stage=stage)

    def __str__(self) -> str:
        device = self.device
        if hasattr(device, "operation"):
            device = device.operation.get_asm(large_elements_limit=64)
        host = "\n".join(str(h) for h in self.hosts.values())
        comment = "//" if self.stage in ("nvvm", "ptx") else ";"
        return device + "\n" + "\n".join(f"{comment} {line}" for line in host.splitlines()) + "\n"


def device_module(module: ir.Module, triple: str = TRIPLE) -> ir.Module:
    """Every gpu.module's contents in one module with the given triple (NVPTX here; any GPU
    target through codegen.stages), symbols deduplicated: each gpu.module declares the device
    library functions it calls."""
    with module.context, ir.Location.unknown():
        dev = ir.Module.create()
        dev.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(triple)
        seen = set()
        with ir.InsertionPoint(dev.body):
            for gm in module.body.operations:
                if gm.operation.name != "gpu.module":
                    continue
                module_name = gm.attributes["sym_name"]
                for op in gm.regions[0].blocks[0].operations:
                    if "gpu.kernel" in op.attributes:
                        # Outlined kernels may share a name across gpu.modules: use the module's.
                        op.attributes["sym_name"] = module_name
                    name = op.attributes["sym_name"] if "sym_name" in op.attributes else None
                    key = str(name) if name is not None else None
                    if key in seen:
                        continue
                    if key is not None:
                        seen.add(key)
                    op.clone()
    return dev


class Untranslatable(RuntimeError):
    """Device code that would crash the process if it went on (MLIR's translator and LLVM's
    instruction selector abort instead of raising): the region must run eagerly instead."""


# Dialects MLIR's LLVM IR translator knows. Anything else left in a kernel (a math op that
# convert-gpu-to-nvvm has no libdevice mapping for, say) makes the translator segfault.
TRANSLATABLE_DIALECTS = frozenset({"builtin", "llvm", "nvvm"})


def check_translatable(device: ir.Module) -> None:
    """Raise Untranslatable naming the first op (and the ATen node it came from) that the
    LLVM IR translator has no registration for."""
    bad = []

    def visit(op):
        if op.name.split(".")[0] not in TRANSLATABLE_DIALECTS:
            bad.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    device.operation.walk(visit)
    if bad:
        op = bad[0]
        raise Untranslatable(f"'{op.name}' at {op.location} has no NVVM/LLVM lowering, so no kernel "
                             "can be built for it")


def llvm_ir(device: ir.Module) -> str:
    from torch_mlir.dialects.llvm import translate_module_to_llvmir

    check_translatable(device)
    return to_llvmlite_text(str(translate_module_to_llvmir(device.operation)))


# LLVM intrinsics the NVPTX backend selects to instructions. Any other declaration left after
# libdevice is linked would be a libcall that NVPTX cannot make: LLVM aborts the process
# ("Cannot select") or emits PTX that calls an undefined function.
NVPTX_INTRINSICS = ("llvm.nvvm.", "llvm.fabs.", "llvm.fma.", "llvm.fmuladd.", "llvm.minnum.",
                    "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.", "llvm.copysign.", "llvm.trunc.",
                    "llvm.floor.", "llvm.ceil.", "llvm.rint.", "llvm.nearbyint.", "llvm.roundeven.",
                    "llvm.sqrt.", "llvm.abs.", "llvm.smin.", "llvm.smax.", "llvm.umin.", "llvm.umax.",
                    "llvm.ctlz.", "llvm.cttz.", "llvm.ctpop.", "llvm.bitreverse.", "llvm.bswap.",
                    "llvm.fshl.", "llvm.fshr.", "llvm.memcpy.", "llvm.memset.", "llvm.memmove.",
                    "llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                    "llvm.sadd.with.overflow.", "llvm.uadd.with.overflow.", "llvm.smul.with.overflow.",
                    "llvm.umul.with.overflow.", "llvm.ssub.with.overflow.", "llvm.usub.with.overflow.",
                    "llvm.scmp.", "llvm.ucmp.",  # instcombine's form of clamp(x, -1, 1) on ints
                    "__nvvm_reflect")  # libdevice's feature query, folded by the NVVMReflect pass


def check_selectable(mod) -> None:
    """Every function the kernels still declare must be an intrinsic NVPTX selects."""
    unknown = sorted(f.name for f in mod.functions
                     if f.is_declaration and not f.name.startswith(NVPTX_INTRINSICS))
    if unknown:
        raise Untranslatable(f"the kernels call {unknown}, which neither libdevice nor the NVPTX "
                             "backend provides")


@functools.lru_cache(maxsize=None)
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


def libdevice_path() -> str | None:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:  # the nvidia-cuda-nvcc / cuda-toolkit wheels ship libdevice too
        import nvidia.cuda_nvcc as nvcc  # type: ignore

        roots.append(os.path.dirname(nvcc.__file__))
    except Exception:
        pass
    for root in filter(None, roots):
        for rel in LIBDEVICE_PATHS:
            path = os.path.join(root, rel)
            if os.path.exists(path):
                return path
    return None


@functools.lru_cache(maxsize=1)
def _libdevice_bytes() -> bytes | None:
    path = libdevice_path()
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def arch_for(options) -> str:
    """The cuda_arch option, else the current GPU's compute capability, else sm_90."""
    return arch_of(options.target_options.cuda_arch)


def arch_of(arch: str | None) -> str:
    """`arch` (a cuda_arch option's value), else the current GPU's compute capability, else sm_90."""
    if arch:
        return arch
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:
        pass
    return DEFAULT_ARCH


def _features(arch: str) -> str:
    number = int("".join(ch for ch in arch.split("_")[1] if ch.isdigit()))
    return PTX_ISA.get(number, "+ptx80")


def _link_libdevice(llvm, mod) -> None:
    needs = [f.name for f in mod.functions if f.is_declaration and f.name.startswith("__nv_")]
    if not needs:
        return
    data = _libdevice_bytes()
    if data is None:
        raise RuntimeError(f"libdevice not found (set CUDA_HOME); needed for {sorted(needs)}")
    mod.link_in(llvm.parse_bitcode(data))


def _internalize(mod, keep: set[str]) -> None:
    for f in mod.functions:
        if not f.is_declaration and f.name not in keep:
            f.linkage = "internal"
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"


def emit_ptx(ll: str, arch: str = DEFAULT_ARCH) -> str:
    llvm = _llvm()
    mod = llvm.parse_assembly(ll)
    kernels = {f.name for f in mod.functions if not f.is_declaration}
    _link_libdevice(llvm, mod)
    _internalize(mod, kernels)
    target = llvm.Target.from_triple(TRIPLE)
    machine = target.create_target_machine(cpu=arch, features=_features(arch), opt=3)
    mod.triple = TRIPLE
    mod.data_layout = str(machine.target_data)
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, tuning)
    # Drop the unused (now internal) libdevice functions first: O3 over all of them takes seconds.
    dce = llvm.create_new_module_pass_manager()
    dce.add_global_dead_code_eliminate_pass()
    dce.run(mod, builder)
    check_selectable(mod)
    builder.getModulePassManager().run(mod, builder)
    check_selectable(mod)  # O3 can turn plain code into intrinsic calls too
    mod.verify()
    return machine.emit_assembly(mod)
