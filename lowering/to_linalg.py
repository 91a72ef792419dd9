"""The `make_linalg` stage: every dynamo op replaced by the IR its registered rule builds."""

import logging

from torch_mlir import ir

from . import registry

log = logging.getLogger("dynamo_mlir")


class LoweringError(RuntimeError):
    """A rule failed; the message names the op, its location and the target."""

    def __init__(self, message: str, op: str):
        super().__init__(message)
        self.op = op


def _dynamo_ops(module: ir.Module) -> list[ir.OpView]:
    found = []

    def visit(op):
        if op.name.startswith("dynamo."):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _as_value(produced) -> ir.Value:
    """Rules may return a builder's op (e.g. linalg.matmul(...)) instead of its value."""
    if isinstance(produced, ir.Value):
        return produced
    return (produced.operation if hasattr(produced, "operation") else produced).result


def lower_dynamo_ops(module: ir.Module, target: str | None = None) -> ir.Module:
    """Rewrite, in place and in program order, each dynamo op with its lowering rule."""
    for op in _dynamo_ops(module):
        op = op.opview
        rule = registry.lookup(op.name, target)
        try:
            with ir.InsertionPoint(op), op.location:
                produced = rule(op)
        except Exception as e:  # a rule bug: say which op it was, keep the cause
            raise LoweringError(f"lowering '{op.name}' at {op.location} (target {target}): {e}", op.name) from e
        values = [_as_value(v) for v in (produced if isinstance(produced, (list, tuple)) else [produced])]
        for old, new in zip(op.results, values):
            old.replace_all_uses_with(new)
        op.erase()
    return module
