"""A result of symbolic size computed into its out-param, not into a temporary copied there.

`buffer-results-to-out-params` hoists a result's allocation into the out-param only when its
shape is static (`hoist-static-allocs`). A result of symbolic size stays a temporary, filled by
its producers and then copied whole into the out-param (a second pass over the result on every
call, and on a GPU a second kernel). When that temporary is a fresh allocation of the out-param's
exact type, the out-param is used nowhere else, and the temporary nowhere after the copy (but to
free it), the producers can write the out-param directly: the copy, the free and the allocation
go.

The temporary may also reach the copy through one reshape (`memref.reshape`, `expand_shape`,
`collapse_shape`) to the out-param's type: a language model's logits are a matmul's [B*L, V]
result viewed as [B, L, V]. The producers then write a view of the out-param with the
temporary's sizes (`memref.reinterpret_cast`), which has the temporary's type where every stride
but the outermost is static: both are contiguous and row-major over the same elements. Static
results take this path too (bufferization hoists only an allocation that is returned itself).
The reshape may also be read before the copy (a training forward's bf16 logits, saved for the
backward as [B*L, V] and read by the loss there): it stays, a view of the out-param's view.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import memref

from .functions import defined_functions
from .memref_copies import is_identity_layout

RESHAPES = ("memref.reshape", "memref.expand_shape", "memref.collapse_shape")


def _top_level(op, func_op):
    """The op of func_op's body that is `op` or contains it."""
    op = op.operation
    while op.parent is not None and op.parent != func_op.operation:
        op = op.parent
    return op


def _index_of(op, ops) -> int:
    return next(i for i, o in enumerate(ops) if o == op)


def _row_major_strides(t: ir.MemRefType) -> list[int] | None:
    """t's row-major strides, or None if one besides the outermost is dynamic."""
    strides, step = [], 1
    for n in reversed(t.shape[1:]):
        strides.insert(0, step)
        if n == ir.ShapedType.get_dynamic_size():
            return None
        step *= n
    return ([step] if t.rank else []) + strides


def _temporary(src: ir.Value) -> tuple[ir.Operation, ir.Operation | None] | None:
    """(the allocation, the reshape between it and the copy or None) that `src` is."""
    owner = src.owner
    if isinstance(owner, ir.Block):
        return None
    reshape = None
    if owner.name in RESHAPES:
        if isinstance(owner.operands[0].owner, ir.Block):
            return None
        reshape, owner = owner, owner.operands[0].owner
        t = owner.results[0].type
        if not is_identity_layout(t) or _row_major_strides(ir.MemRefType(t)) is None:
            return None
    return (owner, reshape) if owner.name == "memref.alloc" else None


def _forwardable(copy, at: int, ops: list, func_op) -> bool:
    src, dst = copy.operands
    block = func_op.regions[0].blocks[0]
    if not isinstance(dst.owner, ir.Block) or dst.owner != block or len(list(dst.uses)) != 1:
        return False  # not an out-param used only by this copy
    found = _temporary(src)
    if found is None or src.type != dst.type or not is_identity_layout(dst.type):
        return False
    alloc, reshape = found
    if reshape is None and ir.MemRefType(src.type).has_static_shape:
        return False  # buffer-results-to-out-params hoisted those
    if reshape is not None and any(_index_of(_top_level(use.owner, func_op), ops) > at
                                   for use in src.uses if use.owner != copy):
        return False  # the reshape read after the copy (or copied again): the out-param may be written by then
    for use in alloc.results[0].uses:
        owner = use.owner
        if owner == copy or (reshape is not None and owner == reshape) or owner.name == "memref.dealloc":
            continue
        if _index_of(_top_level(owner, func_op), ops) > at:
            return False  # read or written after the copy
    return True


def _out_param_view(alloc: ir.Operation, dst: ir.Value) -> ir.Value:
    """dst seen with alloc's type: a contiguous view of the same elements (built before alloc)."""
    t = ir.MemRefType(alloc.results[0].type)
    with ir.InsertionPoint(alloc), alloc.location:
        return memref.reinterpret_cast(t, dst, [], list(alloc.operands), [], [0], t.shape, _row_major_strides(t))


def _erase_if_write_only(buffer: ir.Value | None) -> None:
    """A memref.reshape's shape operand, built in a buffer of its own that nothing reads any
    more: its stores (a host schedule would make them device writes) and frees go with it."""
    if buffer is None or isinstance(buffer.owner, ir.Block) or buffer.owner.name not in ("memref.alloc", "memref.alloca"):
        return
    users = [use.owner for use in buffer.uses]
    if all(u.name == "memref.dealloc" or (u.name == "memref.store" and u.operands[1] == buffer) for u in users):
        for u in users:
            u.erase()
        buffer.owner.erase()


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
            if _temporary(src) is None:
                continue  # two results of one buffer: an earlier copy's out-param took it, this copy stays
            alloc, reshape = _temporary(src)
            target = dst if reshape is None else _out_param_view(alloc, dst)
            buffer = alloc.results[0]
            frees = [use.owner for use in buffer.uses if use.owner.name == "memref.dealloc"]
            keep = reshape is not None and any(use.owner != copy for use in src.uses)  # read before the copy
            for use in list(buffer.uses):
                if use.owner != copy and (keep or reshape is None or use.owner != reshape) and use.owner.name != "memref.dealloc":
                    use.owner.operands[use.operand_number] = target
            copy.erase()
            for free in frees:
                free.erase()
            if reshape is not None and not keep:
                shape = reshape.operands[1] if reshape.name == "memref.reshape" else None
                reshape.erase()
                _erase_if_write_only(shape)
            alloc.erase()
            done += 1
    return done
