"""The symbols a cpu module's machine code needs.

The LLVM-dialect module declares what it calls (libm, MKL's BLAS, torch's C shim,
torch_parallel_for): `external_symbols`. LLVM's backend may add calls of its own that no IR
shows: compiler-rt builtins for what the CPU has no instruction for (`__truncsfbf2` on a CPU
without AVX-512-BF16, `__extendhfsf2` without F16C). Only the object file knows them all:
`undefined_in_elf` reads them from it, and object_code.LinkedObject resolves each in the
process before linking (an unresolved symbol inside the linker ends the process).
"""

import struct

from ..functions import declared_names


def external_symbols(module) -> list[str]:
    """Functions the LLVM-dialect module declares but does not define (libm, ...)."""
    return declared_names(module, "llvm.func")


_SHT_SYMTAB = 2
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr: name type flags addr offset size link info align entsize
_SYMBOL = struct.Struct("<IBBH")  # Elf64_Sym's start: name info other shndx (value, size follow)


_STT_FUNC = 2


def _symbols(elf: bytes):
    """(name, type, section index, size) of each named symbol of a 64-bit little-endian ELF object."""
    if len(elf) < 0x40 or elf[:4] != b"\x7fELF":
        return
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [_SECTION.unpack_from(elf, shoff + i * shentsize) for i in range(shnum)]
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name, info, _, section = _SYMBOL.unpack_from(elf, at)
            if name:
                nbytes = struct.unpack_from("<Q", elf, at + _SYMBOL.size + 8)[0]
                yield elf[strings + name:elf.index(b"\0", strings + name)].decode(), info & 0xF, section, nbytes


def undefined_in_elf(elf: bytes) -> list[str]:
    """The undefined symbols (section index 0) of a 64-bit little-endian ELF object."""
    return [name for name, _, section, _ in _symbols(elf) if section == 0]


def functions_in_elf(elf: bytes) -> list[tuple[str, int]]:
    """The functions the object defines, with their sizes in bytes (what a perf map lists)."""
    return [(name, nbytes) for name, kind, section, nbytes in _symbols(elf) if kind == _STT_FUNC and section]
