"""Collecting ops to rewrite: the walk done first, the rewrites after (erasing or replacing ops
while MLIR walks them is unsafe)."""

from __future__ import annotations

from typing import Callable

from torch_mlir import ir


def ops_where(root, keep: Callable[[ir.Operation], bool]) -> list[ir.Operation]:
    """Every op nested in `root` (a module or an op) for which keep(op), in walk order."""
    found = []

    def visit(op):
        if keep(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.operation.walk(visit)
    return found
