"""Which buffer a memref value views: the one walk through view ops that passes share.

A view op's result shows (part of) its first operand's buffer. `view_root` follows those ops
back to the value that is no view (a function argument, an allocation, a global, a loop's block
argument); `buffer_of` says whether that root is a buffer one can reason about (an argument of
the function, an allocation, a global), else None. A pass that treats some views as buffers of
their own (memory planning's views of the workspace) says so with `stop`.
"""

from __future__ import annotations

from typing import Callable

from torch_mlir import ir

VIEW_OPS = ("memref.subview", "memref.reshape", "memref.expand_shape", "memref.collapse_shape", "memref.cast",
            "memref.reinterpret_cast", "memref.transpose", "memref.view")
BUFFER_OPS = ("memref.alloc", "memref.alloca", "memref.get_global")


Through = tuple[str, ...] | Callable[[ir.Operation, ir.Value], bool]


def _follows(through: Through, op: ir.Operation, result: ir.Value) -> bool:
    return op.name in through if isinstance(through, tuple) else through(op, result)


def view_root(value: ir.Value, stop: Callable[[ir.Value], bool] = lambda v: False,
              through: Through = VIEW_OPS) -> ir.Value:
    """Follow view ops back from `value` to the first value that is not such a view's result
    (or for which `stop` is true). `through`: the view ops followed (names), or a predicate
    (op, its result) for views followed only in some cases."""
    while not isinstance(value.owner, ir.Block) and not stop(value) and _follows(through, value.owner.operation, value):
        value = value.owner.operation.operands[0]
    return value


def buffer_of(value: ir.Value, stop: Callable[[ir.Value], bool] = lambda v: False,
              through: Through = VIEW_OPS) -> ir.Value | None:
    """The buffer `value` views: a function argument, an allocation, a global (or a value `stop`
    names a buffer), or None when the root is unknown (a loop's block argument, a call's result,
    a view `through` does not follow)."""
    root = view_root(value, stop, through)
    owner = root.owner
    if isinstance(owner, ir.Block):
        return root if owner.owner.operation.name == "func.func" else None
    return root if owner.operation.name in BUFFER_OPS or stop(root) else None
