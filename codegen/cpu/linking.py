"""The symbols a cpu module's machine code needs, checked on both sides of the JIT's linking.

Before the engine: every function the LLVM-dialect module declares but does not define (libm,
MKL's BLAS, torch's C shim, torch_parallel_for) must be in the process (libtorch_cpu is made
global first when the module calls it: library.load_libtorch).

LLVM's backend may add calls of its own that no IR shows: compiler-rt builtins for what the
CPU has no instruction for (`__truncsfbf2` on a CPU without AVX-512-BF16, `__extendhfsf2`
without F16C). The ORC JIT then fails to link, prints `JIT session error: Symbols not found`,
and the lookup returns a null address; calling it killed the process. So the lookup is
checked: a null address is a CompileError naming the missing symbols (read from the object
file the JIT made), and the region runs eagerly.
"""

import ctypes
import os
import struct
import tempfile

from torch_mlir import ir
from torch_mlir.execution_engine import ExecutionEngine

from ..functions import declared_names
from ..passes import CompileError


def external_symbols(module) -> list[str]:
    """Functions the LLVM-dialect module declares but does not define (libm, ...)."""
    return declared_names(module, "llvm.func")


def _in_process(name: str) -> bool:
    return hasattr(ctypes.CDLL(None), name)


def check_symbols_resolve(module) -> None:
    """Refuse, before the engine is made, a module declaring a function the process lacks, so
    the region falls back to eager with the symbol named."""
    missing = [name for name in external_symbols(module) if not _in_process(name)]
    if missing:
        raise CompileError("load", f"the generated code calls {missing}, which this process does not provide")


def packed_function(engine: ExecutionEngine, module, name: str, opt_level: int) -> int:
    """The address of `name`'s packed wrapper `_mlir_<name>(void**)`; a link failure (null)
    raises a CompileError naming the symbols the machine code needs and nobody provides."""
    address = engine.raw_lookup(name)
    if not address:
        missing = [s for s in _undefined_symbols(module, opt_level, name) if not _in_process(s)]
        raise CompileError("load", f"the JIT could not link `{name}`: its machine code calls "
                                   f"{missing or 'symbols'} that this process does not provide "
                                   "(LLVM's runtime-library calls for what this CPU has no instruction for)")
    return address


def _undefined_symbols(module, opt_level: int, name: str) -> list[str]:
    """The undefined symbols of the object file the JIT compiles `module` into (compiled again,
    with the object kept: this runs only after a failed link)."""
    engine = ExecutionEngine(module, opt_level=opt_level, enable_object_dump=True)
    engine.raw_lookup(name)  # compiles (and fails to link) again
    fd, path = tempfile.mkstemp(suffix=".o")
    os.close(fd)
    try:
        engine.dump_to_object_file(path)
        with open(path, "rb") as f:
            return undefined_in_elf(f.read())
    finally:
        os.remove(path)


_SHT_SYMTAB = 2
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr: name type flags addr offset size link info align entsize
_SYMBOL = struct.Struct("<IBBH")  # Elf64_Sym's start: name info other shndx (value, size follow)


def undefined_in_elf(elf: bytes) -> list[str]:
    """The undefined symbols (section index 0) of a 64-bit little-endian ELF object."""
    if len(elf) < 0x40 or elf[:4] != b"\x7fELF":
        return []
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [_SECTION.unpack_from(elf, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            name, _, _, section = _SYMBOL.unpack_from(elf, at)
            if section == 0 and name:
                names.append(elf[strings + name:elf.index(b"\0", strings + name)].decode())
    return names
