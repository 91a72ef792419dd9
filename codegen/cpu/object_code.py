"""The cpu target's last stage and artifact: the region's machine code as a relocatable object.

`compile_object` hands the LLVM-dialect module to MLIR's ExecutionEngine (LLVM's optimiser and
code generator for the host CPU, as the JIT always compiled it) and keeps the object file it
makes, with the packed wrapper `_mlir_<name>(void**)` the engine adds. `CpuObject` is then all a
region needs to run: no MLIR context, no module, nothing of this process, so the compile cache
(codegen/cache.py) stores it as it is and a later process only links it (`link`: llvmlite's
MCJIT, a few milliseconds).

Linking resolves the object's undefined symbols (libm, MKL's BLAS, torch's C shim,
torch_parallel_for, LLVM's runtime-library calls) in this process. Each is looked up first: an
unresolved symbol inside the linker ends the process, so a missing one is a CompileError that
names it, and the region runs eagerly.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import itertools
import logging
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir
from torch_mlir.execution_engine import ExecutionEngine

from .. import config
from ..attributes import HANDED_RESULTS, NHWC_RESULTS
from ..functions import defined_functions
from ..passes import CompileError
from . import library, library_conv, memory_plan, parallel
from .linking import external_symbols, functions_in_elf, undefined_in_elf

LIBTORCH_SYMBOLS = frozenset(library.GEMM.values()) | library_conv.SYMBOLS | parallel.RUNTIME_SYMBOLS
# Symbols the linker defines itself, never looked up in the process.
_LINKER_SYMBOLS = frozenset({"_GLOBAL_OFFSET_TABLE_"})
log = logging.getLogger("dynamo_mlir")
_LINKED = itertools.count()  # numbers the linked objects in the perf map (LinkedObject._write_perf_map)


@dataclass
class CpuObject:
    """A compiled region: object code for this machine (cpu.TARGET's `machine`) and what calling
    it needs."""

    code: bytes = field(repr=False)  # a relocatable ELF object
    function: str                   # the packed entry point, `_mlir_<name>`
    workspace_bytes: int            # the planned intermediates' bytes (memory_plan.py), 0: none
    calls: tuple[str, ...]          # the object's undefined symbols
    status_symbol: str | None       # library_conv's status global, when the code calls torch
    library_nodes: frozenset[str]   # FX nodes run as library calls (Target: library_nodes)
    opt_level: int
    module: Any = field(default=None, compare=False, repr=False)  # the LLVM-dialect module: dumps only
    # Results the code writes NHWC, handed on as NCHW tensors with channels-last strides
    # (codegen/channels_last.py's NHWC_RESULTS; runtime.py allocates them so).
    nhwc_results: tuple[int, ...] = ()
    # Results a library call may hand over as torch's own tensor (handed_results.py's
    # HANDED_RESULTS): the function takes an int64 per result after the outputs, where it leaves them.
    handed_results: tuple[int, ...] = ()

    def __bytes__(self) -> bytes:  # what the stage's dump file holds
        return self.code

    def __getstate__(self):
        return {**self.__dict__, "module": None}  # an MLIR module belongs to its context, not to a file

    def detached(self) -> "CpuObject":
        """This object without its module: what the compile cache keeps (an MLIR module would
        keep its whole context alive in the cache's memory)."""
        return dataclasses.replace(self, module=None)


ENTRY = "main"  # the importer's name for a region's function (frontend/compile.py)


def entry_point(module: ir.Module) -> str:
    """The region's function: `main`, else the module's one public function (a module written
    by hand for the CLI); outlined loop bodies are internal."""
    defined = list(defined_functions(module, "llvm.func"))
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in defined]
    if ENTRY in names:
        return ENTRY
    public = [n for n, op in zip(names, defined)
              if "internal" not in str(op.attributes["linkage"] if "linkage" in op.attributes else "")
              and "sym_visibility" not in op.attributes]
    if len(public) != 1:
        raise CompileError("object", f"no `{ENTRY}` function and {len(public)} public ones in the LLVM module: {public}")
    return public[0]


def compile_object(module: ir.Module, opt_level: int, library_nodes: frozenset[str]) -> CpuObject:
    """The object code of `module` for the host CPU, compiled by MLIR's ExecutionEngine."""
    name = entry_point(module)
    externals = set(external_symbols(module))
    if externals & LIBTORCH_SYMBOLS:
        library.load_libtorch()  # so the engine's own link, which compiling triggers, finds them
    engine = ExecutionEngine(module, opt_level=opt_level, enable_object_dump=True)
    engine.raw_lookup(name)  # compiles; a failed link still leaves the object, read below
    fd, path = tempfile.mkstemp(suffix=".o")
    os.close(fd)
    try:
        engine.dump_to_object_file(path)
        with open(path, "rb") as f:
            code = f.read()
    finally:
        os.remove(path)
    if not code:
        raise CompileError("object", f"the JIT produced no object code for `{name}`")
    status = library_conv.status_name() if externals & library_conv.SYMBOLS else None
    return CpuObject(code, "_mlir_" + name, memory_plan.workspace_bytes(module), tuple(undefined_in_elf(code)),
                     status, library_nodes, opt_level, module, _results(module, NHWC_RESULTS),
                     _results(module, HANDED_RESULTS))


def _results(module: ir.Module, attribute: str) -> tuple[int, ...]:
    """The result indices module attribute `attribute` lists (none when it is absent)."""
    attrs = module.operation.attributes
    return tuple(ir.DenseI64ArrayAttr(attrs[attribute])) if attribute in attrs else ()


@functools.cache
def _initialize_llvmlite() -> None:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def _host_machine():
    """A target machine for one engine: an MCJIT engine owns (and frees) the one it is given.
    The engine only relocates the object with it; the code was compiled already."""
    import llvmlite.binding as llvm

    _initialize_llvmlite()
    return llvm.Target.from_default_triple().create_target_machine()


def _process_address(name: str) -> int:
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


class LinkedObject:
    """A CpuObject linked into this process: addresses of its symbols, alive while this is."""

    def __init__(self, obj: CpuObject):
        import llvmlite.binding as llvm

        if set(obj.calls) & LIBTORCH_SYMBOLS:
            library.load_libtorch()
        addresses = {s: _process_address(s) for s in obj.calls if s not in _LINKER_SYMBOLS}
        missing = sorted(s for s, a in addresses.items() if not a)
        if missing:
            raise CompileError("load", f"the generated code calls {missing}, which this process does not provide "
                                       "(for LLVM's runtime-library calls: what this CPU has no instruction for)")
        for symbol, address in addresses.items():
            llvm.add_symbol(symbol, address)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _host_machine())
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(obj.code))
        self._engine.finalize_object()
        if os.environ.get(config.PERF_MAP, "0") not in ("", "0"):
            self._write_perf_map(obj)

    def _write_perf_map(self, obj: CpuObject) -> None:
        """Name this object's functions for Linux perf, which reads JIT code's symbols from
        /tmp/perf-<pid>.map ("start size name" a line): `perf report` then shows each generated
        function (region entry, outlined parallel bodies) where it would show "[JIT]"."""
        linked = next(_LINKED)  # every region's entry is `main`: objects are told apart by number
        lines = [f"{self._engine.get_function_address(name):x} {nbytes:x} dynamo_mlir:{linked}:{name}\n"
                 for name, nbytes in functions_in_elf(obj.code) if nbytes]
        try:
            with open(f"/tmp/perf-{os.getpid()}.map", "a") as f:
                f.writelines(lines)
        except OSError as e:  # a profiling aid: the region still runs without its names
            log.warning("dynamo-mlir: %s=1 but the perf map could not be written: %s", config.PERF_MAP, e)

    def function(self, name: str) -> int:
        address = self._engine.get_function_address(name)
        if not address:
            raise CompileError("load", f"the object code defines no `{name}`")
        return address

    def global_value(self, name: str) -> int:
        address = self._engine.get_global_value_address(name)
        if not address:
            raise CompileError("load", f"the object code defines no global `{name}`")
        return address
