"""A result of symbolic size computed into its out-param, not into a temporary copied there.

`buffer-results-to-out-params` hoists a result's allocation into the out-param only when its
shape is static (`hoist-static-allocs`). A result of symbolic size stays a temporary, filled by
its producers and then copied whole into the out-param (a second pass over the result on every
call, and on a GPU a second kernel). When that temporary is a fresh allocation of the out-param's
exact type, the out-param is used nowhere else, and the temporary nowhere after the copy (but to
free it), the producers can write the out-param directly: the copy, the free and the allocation
go.
"""

from __future__ import annotations

from torch_mlir import ir

from .functions import defined_functions


def _top_level(op, func_op):
    """The op of func_op's body that is `op` or contains it."""
    op = op.operation
    while op.parent is not None and op.parent != func_op.operation:
        op = op.parent
    return op


def _index_of(op, ops) -> int:
    return next(i for i, o in enumerate(ops) if o == op)


def _forwardable(copy, at: int, ops: list, func_op) -> bool:
    src, dst = copy.operands
    block = func_op.regions[0].blocks[0]
    if not isinstance(dst.owner, ir.Block) or dst.owner != block or len(list(dst.uses)) != 1:
        return False  # not an out-param used only by this copy
    alloc = src.owner
    if isinstance(alloc, ir.Block) or alloc.name != "memref.alloc" or src.type != dst.type:
        return False
    if ir.MemRefType(src.type).has_static_shape:
        return False  # buffer-results-to-out-params hoisted those
    for use in src.uses:
        owner = use.owner
        if owner == copy or owner.name == "memref.dealloc":
            continue
        if _index_of(_top_level(owner, func_op), ops) > at:
            return False  # read or written after the copy
    return True


def results_into_out_params(module: ir.Module) -> int:
    """Every forwardable result copy of every function removed (see the module docstring);
    returns how many."""
    done = 0
    for func_op in defined_functions(module):
        block = func_op.regions[0].blocks[0]
        ops = [o.operation for o in block.operations]
        # Found first, rewritten after: a rewrite erases ops later in `ops` (the frees).
        found = [copy for at, copy in enumerate(ops)
                 if copy.name == "memref.copy" and _forwardable(copy, at, ops, func_op)]
        for copy in found:
            src, dst = copy.operands
            alloc = src.owner
            frees = [use.owner for use in src.uses if use.owner.name == "memref.dealloc"]
            for use in list(src.uses):
                if use.owner != copy and use.owner.name != "memref.dealloc":
                    use.owner.operands[use.operand_number] = dst
            copy.erase()
            for free in frees:
                free.erase()
            alloc.erase()
            done += 1
    return done
