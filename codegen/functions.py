"""Functions of a module: which are defined (have a body) and which only declared (a library's,
libm's, a callee the runtime provides), and a new last argument for one. One definition for
every pass that asks."""

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


def append_argument(fn, t: ir.Type) -> ir.Value:
    """A new last argument of type `t` for func.func `fn` (its block, its type, its arg_attrs)."""
    arg = fn.regions[0].blocks[0].add_argument(t, fn.location)
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([*ftype.inputs, t], ftype.results))
    if "arg_attrs" in fn.attributes:
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get([*ir.ArrayAttr(fn.attributes["arg_attrs"]), ir.DictAttr.get({})])
    return arg
