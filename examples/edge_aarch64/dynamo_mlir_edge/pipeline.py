"""The aarch64 target's stages: the core's CPU steps (linalg, loops, llvm) composed from
`dynamo_mlir.plugin.stages`, then LLVM IR for the AArch64 triple, an object file from
llvmlite's AArch64 backend, and a shared library linked by the cross compiler.

Static shapes only: the runtime calls the entry through one pointer per tensor (the bare-pointer
convention `stages.loops_to_llvm` picks for static shapes), inputs first, then the outputs the
bufferization turned into out-parameters.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile

import llvmlite.binding as llvm
from torch_mlir import ir

from dynamo_mlir.plugin import CompileError, stages

from . import toolchain

NAME = "aarch64"
PACKED_SUFFIX = "_packed"  # `<entry>_packed(void **args)`: what the runner calls


def _dynamic_types(module: ir.Module) -> list[str]:
    """The function argument types that are not tensors of static shape (`?` dims, sizes)."""
    found = []
    for op in module.body.operations:
        if op.operation.name != "func.func":
            continue
        for t in ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs:
            if not (isinstance(t, ir.ShapedType) and ir.ShapedType(t).has_static_shape):
                found.append(str(t))
    return found


def make_linalg(module: ir.Module, options) -> ir.Module:
    dynamic = _dynamic_types(module)
    if dynamic:  # refused before any work: a deploy artifact has one shape per input
        raise CompileError("linalg", f"the aarch64 target compiles static shapes only; this graph takes {dynamic} "
                                     "(compile with dynamic=False)")
    return stages.lower_to_linalg(module, options, NAME)


def make_loops(module: ir.Module, options) -> ir.Module:
    return stages.bufferize_to_loops(module, options)


def make_llvm(module: ir.Module, options) -> ir.Module:
    return stages.loops_to_llvm(module, options)  # math as libm calls: the library links -lm


@functools.cache
def _init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@functools.cache
def target_machine(cpu: str, features: str) -> llvm.TargetMachine:
    _init_llvm()
    target = llvm.Target.from_triple(toolchain.TRIPLE)
    return target.create_target_machine(cpu=cpu, features=features, opt=2, reloc="pic")


def _machine(options) -> llvm.TargetMachine:
    own = options.target_options
    return target_machine(own.aarch64_cpu, own.aarch64_features)


def _entry(parsed: llvm.ModuleRef) -> llvm.ValueRef:
    """The one function the module defines for callers (the region's `main`)."""
    entries = [f for f in parsed.functions if not f.is_declaration and f.linkage == llvm.Linkage.external]
    if len(entries) != 1:
        raise CompileError("ll", f"expected one entry function, found {[f.name for f in entries]}")
    entry = entries[0]
    if any(str(a.type) != "ptr" for a in entry.arguments):
        raise CompileError("ll", f"@{entry.name} takes {[str(a.type) for a in entry.arguments]}: not one pointer per "
                                 "tensor (the bare-pointer convention of static shapes)")
    return entry


def _packed_wrapper(name: str, n_args: int) -> str:
    """`void <name>_packed(void **args)`: loads each tensor pointer and calls `name`, so a runner
    calls any region the same way, whatever its number of tensors."""
    lines = [f"define void @{name}{PACKED_SUFFIX}(ptr %args) {{"]
    for i in range(n_args):
        lines += [f"  %p{i} = getelementptr inbounds ptr, ptr %args, i64 {i}",
                  f"  %a{i} = load ptr, ptr %p{i}, align 8"]
    args = ", ".join(f"ptr %a{i}" for i in range(n_args))
    lines += [f"  call void @{name}({args})", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def make_ll(module: ir.Module, options) -> str:
    """LLVM IR for AArch64 Linux, with the packed entry the runner calls. The entry itself is made
    internal, so the library exports only the packed one (a `main` symbol would be ambiguous)."""
    data_layout = str(_machine(options).target_data)
    text = stages.llvm_ir(module, triple=toolchain.TRIPLE, data_layout=data_layout)
    parsed = llvm.parse_assembly(text)
    entry = _entry(parsed)
    entry.linkage = llvm.Linkage.internal
    return str(parsed) + "\n" + _packed_wrapper(entry.name, len(list(entry.arguments)))


def make_obj(text: str, options) -> bytes:
    """The ELF object file: the module optimised at -O2 for the CPU, then code generation."""
    machine = _machine(options)
    parsed = llvm.parse_assembly(text)
    parsed.verify()
    passes = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(2))
    passes.getModulePassManager().run(parsed, passes)
    return machine.emit_object(parsed)


def make_so(obj: bytes, options) -> bytes:
    """The shared library (the deploy artifact), linked against the AArch64 libm."""
    toolchain.require("so", [toolchain.CC])
    with tempfile.TemporaryDirectory(prefix="dynamo-mlir-edge-") as folder:
        obj_path, lib_path = os.path.join(folder, "obj.o"), os.path.join(folder, "lib.so")
        with open(obj_path, "wb") as f:
            f.write(obj)
        link = subprocess.run([toolchain.CC, "-shared", "-o", lib_path, obj_path, "-lm"],
                              capture_output=True, text=True)
        if link.returncode != 0:
            raise CompileError("so", f"{toolchain.CC} failed to link: {link.stderr.strip()}")
        with open(lib_path, "rb") as f:
            return f.read()
