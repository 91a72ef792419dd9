"""Functions of a module: which are defined (have a body) and which only declared (a library's,
libm's, a callee the runtime provides). One definition for every pass that asks."""

from __future__ import annotations

from typing import Iterator

from torch_mlir import ir

FUNCTION_OPS = ("func.func", "llvm.func")


def is_declaration(op) -> bool:
    """A func.func or llvm.func without a body."""
    return len(op.regions[0].blocks) == 0


def defined_functions(module: ir.Module, kind: str = "func.func") -> Iterator:
    """The `kind` functions of `module` that have a body, in order."""
    for op in module.body.operations:
        if op.operation.name == kind and not is_declaration(op):
            yield op


def declared_names(module: ir.Module, kind: str = "llvm.func") -> list[str]:
    """The names of the `kind` functions `module` declares without defining."""
    return [ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
            if op.operation.name == kind and is_declaration(op)]
