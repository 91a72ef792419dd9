"""LLVM IR -> an HSA code object: llvmlite's AMDGPU backend emits a relocatable ELF, `ld.lld
-shared` links it into the shared object the ROCm loader takes (hipModuleLoadData), and the
result is checked here before anything could try to load it: the right gfx machine in e_flags,
a kernel descriptor per kernel of the host schedule, and no undefined symbol.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass

TRIPLE = "amdgcn-amd-amdhsa"

# EF_AMDGPU_MACH values (the low byte of e_flags) of the architectures ROCmOptions accepts.
ELF_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C}
EF_AMDGPU_MACH = 0xFF

# Declarations the AMDGPU backend turns into instructions by itself. Anything else left in the
# module would be a call to a function nobody links in (ROCm's __ocml_* device library is not
# here): LLVM would report an unsupported call, or the loader an undefined symbol.
AMDGPU_INTRINSICS = ("llvm.amdgcn.", "llvm.fabs.", "llvm.fma.", "llvm.fmuladd.", "llvm.minnum.",
                     "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.", "llvm.copysign.", "llvm.trunc.",
                     "llvm.floor.", "llvm.ceil.", "llvm.rint.", "llvm.nearbyint.", "llvm.roundeven.",
                     "llvm.round.", "llvm.sqrt.", "llvm.abs.", "llvm.smin.", "llvm.smax.", "llvm.umin.",
                     "llvm.umax.", "llvm.ctlz.", "llvm.cttz.", "llvm.ctpop.", "llvm.bitreverse.",
                     "llvm.bswap.", "llvm.fshl.", "llvm.fshr.", "llvm.memcpy.", "llvm.memset.",
                     "llvm.memmove.", "llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                     "llvm.is.fpclass.", "llvm.ldexp.", "llvm.frexp.",
                     "llvm.sadd.with.overflow.", "llvm.uadd.with.overflow.", "llvm.smul.with.overflow.",
                     "llvm.umul.with.overflow.", "llvm.ssub.with.overflow.", "llvm.usub.with.overflow.")
# Transcendental intrinsics AMDGPU selects in single (and half) precision only (v_exp_f32,
# v_log_f32, v_sin_f32, ...); their f64 forms would become libm calls.
AMDGPU_F32_INTRINSICS = ("llvm.exp.", "llvm.exp2.", "llvm.exp10.", "llvm.log.", "llvm.log2.", "llvm.log10.",
                         "llvm.sin.", "llvm.cos.")


class CodeObjectError(RuntimeError):
    """The device code cannot become a loadable code object (the message says why)."""


class CodeObject(bytes):
    """The linked code object, bytes as the loader takes them (dumped in binary as `.hsaco`),
    with what the runtime needs beside them: the host schedules and the architecture."""

    hosts: dict
    arch: str
    kernels: list
    assembly: str

    def __new__(cls, data: bytes, hosts: dict, arch: str, kernels: list, assembly: str = ""):
        obj = super().__new__(cls, data)
        obj.hosts, obj.arch, obj.kernels, obj.assembly = hosts, arch, kernels, assembly
        return obj


@functools.lru_cache(maxsize=None)
def _llvm():
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


# The oldest ld.lld that links what llvmlite's AMDGPU backend emits: lld 14 (Debian's plain `lld`)
# fails with "unknown abi version" on its code-object ABI; 19 (Debian's `lld-19`) links it.
MIN_LLD = 19


def linker() -> str | None:
    """The newest ld.lld on PATH of version MIN_LLD or later (Debian installs versioned ones,
    ld.lld-19, ...; an unversioned ld.lld counts by the version it prints)."""
    for v in range(40, MIN_LLD - 1, -1):
        path = shutil.which(f"ld.lld-{v}")
        if path:
            return path
    path = shutil.which("ld.lld")
    return path if path and _lld_version(path) >= MIN_LLD else None


def _lld_version(path: str) -> int:
    run = subprocess.run([path, "--version"], capture_output=True, text=True)
    found = re.search(r"LLD (\d+)", run.stdout)
    return int(found.group(1)) if found else 0


def check_selectable(mod) -> None:
    """Every function the kernels still declare must be an intrinsic the backend selects."""
    def selectable(f) -> bool:
        if f.name.startswith(AMDGPU_INTRINSICS):
            return True
        return f.name.startswith(AMDGPU_F32_INTRINSICS) and f.name.endswith((".f32", ".f16"))

    unknown = sorted(f.name for f in mod.functions if f.is_declaration and not selectable(f))
    if unknown:
        raise CodeObjectError(f"the kernels call {unknown}, which the AMDGPU backend cannot select and ROCm's "
                              "device library (not available to this target) would have to provide")


def _internalize(mod, kernels: set[str]) -> None:
    for f in mod.functions:
        if not f.is_declaration and f.name not in kernels:
            f.linkage = "internal"


def optimize_and_emit(ll: str, kernels: set[str], arch: str) -> tuple[bytes, str]:
    """(relocatable ELF object, AMDGPU assembly) of `ll`'s kernels for `arch`, at O3."""
    llvm = _llvm()
    mod = llvm.parse_assembly(ll)
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, opt=3, reloc="pic")
    mod.triple, mod.data_layout = TRIPLE, str(machine.target_data)
    _internalize(mod, kernels)
    check_selectable(mod)
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(mod, builder)
    check_selectable(mod)  # O3 can turn plain code into intrinsic calls too
    mod.verify()
    optimized = str(mod)
    # Code generation rewrites the module it is given (AMDGPU annotates control flow in place),
    # so the assembly view comes from a fresh copy of the optimized IR.
    return machine.emit_object(mod), machine.emit_assembly(llvm.parse_assembly(optimized))


def link(obj: bytes) -> bytes:
    """`ld.lld -shared`: the relocatable object as the shared-object code object ROCm loads."""
    lld = linker()
    if lld is None:
        raise CodeObjectError(f"ld.lld {MIN_LLD} or newer not found: install the Debian package lld-{MIN_LLD} "
                              "to link code objects")
    with tempfile.TemporaryDirectory(prefix="dynamo_mlir_rocm_") as tmp:
        src, out = os.path.join(tmp, "kernels.o"), os.path.join(tmp, "kernels.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        run = subprocess.run([lld, "-shared", "--no-undefined", "-o", out, src], capture_output=True, text=True)
        if run.returncode != 0:
            raise CodeObjectError(f"{lld} failed: {run.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()


@dataclass(frozen=True)
class ElfSymbol:
    name: str
    kind: int      # STT_*: 1 object, 2 func
    defined: bool  # st_shndx != SHN_UNDEF


def elf_symbols(data: bytes) -> tuple[int, list[ElfSymbol]]:
    """(e_flags, the symbols of every SYMTAB/DYNSYM section) of a little-endian ELF64 file."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise CodeObjectError("not an ELF64 file")
    e_flags, = struct.unpack_from("<I", data, 0x30)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    symbols = []
    for _, sh_type, _, _, offset, size, link_index, _, _, entsize in sections:
        if sh_type not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[link_index][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, at)
            end = data.index(b"\0", strtab + st_name)
            symbols.append(ElfSymbol(data[strtab + st_name:end].decode(), st_info & 0xF, st_shndx != 0))
    return e_flags, symbols


def check_code_object(data: bytes, arch: str, kernels: list[str]) -> None:
    """The loader's view, checked before it gets the bytes."""
    e_flags, symbols = elf_symbols(data)
    if e_flags & EF_AMDGPU_MACH != ELF_MACH[arch]:
        raise CodeObjectError(f"code object e_flags {e_flags:#x} do not name {arch}")
    undefined = sorted({s.name for s in symbols if not s.defined})
    if undefined:
        raise CodeObjectError(f"code object has undefined symbols {undefined}")
    descriptors = {s.name for s in symbols if s.defined and s.kind == 1 and s.name.endswith(".kd")}
    missing = sorted(k for k in kernels if f"{k}.kd" not in descriptors)
    if missing:
        raise CodeObjectError(f"code object lacks kernel descriptors for {missing}")


def build(ll: str, kernels: list[str], arch: str) -> tuple[bytes, str]:
    """(checked code object, assembly) for the kernels of `ll`."""
    obj, assembly = optimize_and_emit(ll, set(kernels), arch)
    data = link(obj)
    check_code_object(data, arch, kernels)
    return data, assembly
