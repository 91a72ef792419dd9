"""What the ops of a host function (bufferized, before kernels are built) read and write:
the checks the gpu stage's rewrites make before moving or merging them."""

from __future__ import annotations

from torch_mlir import ir

from ..gpu.loopnest import VIEW_OPS, root_of


def host_ops(func_op) -> list[ir.Operation]:
    """The ops of func_op's body, in order."""
    return [op.operation for op in func_op.regions[0].blocks[0].operations]


def output_of(op) -> ir.Value:
    """The buffer an op writes (memref.copy names it `target`)."""
    view = op.opview
    if op.name == "memref.copy":
        return view.target
    return view.init if op.name in ("linalg.map", "linalg.transpose") else view.outputs[0]


def between(first, last) -> list:
    """The ops after `first` and before `last` (same block)."""
    block_ops = [o.operation for o in first.block.operations]
    return block_ops[block_ops.index(first) + 1:block_ops.index(last)]


def touches(op, root: ir.Value) -> bool:
    """Whether `op` reads or writes (a view of) the buffer `root`, or makes a view of it."""
    return any(isinstance(v.type, ir.MemRefType) and root_of(v) == root for v in op.operands)


def used_between(buffer: ir.Value, first, last) -> bool:
    """Whether an op after `first` and before `last` touches `buffer` (or a view of it): the
    call, moved to write it at `first`, must not change what those ops see."""
    return any(touches(o, buffer) for o in between(first, last))


def writes(op, buffer: ir.Value) -> bool:
    """Whether `op` may write `buffer` (or a view of it): a linalg op's output, a copy's target,
    any operand of another op that is no view (a library call, a store) or dealloc."""
    if op.name in ("linalg.map", "linalg.transpose", "memref.copy"):
        operands = [output_of(op)]
    elif op.name.startswith("linalg."):
        operands = op.opview.outputs
    elif op.name in VIEW_OPS or op.name == "memref.dealloc":
        return False
    else:
        operands = op.operands
    return any(isinstance(v.type, ir.MemRefType) and root_of(v) == buffer for v in operands)


def written_between(buffer: ir.Value, first, last) -> bool:
    """Whether an op after `first` and before `last` (same block) may write `buffer`."""
    return any(writes(o, buffer) for o in between(first, last))
