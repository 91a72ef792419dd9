"""Outlining loop nests into a function that torch_parallel_for runs on chunks of their rows.

`outline(...)` moves a group of scf.parallel nests (same first-dim range, see parallel.py) into

    func.func private @<fn>_parallel_<k>(%begin: i64, %end: i64, %ctx: !llvm.ptr)

where each nest runs over [begin, end) of its first dim (a group of several, row block by row
block: an scf.for over [begin, end) in steps of `rows`, each nest over the block), and puts
`torch_parallel_for(lb, ub, grain, @<fn>_parallel_<k>, ctx)` where the last nest was.

ctx is an array of 8-byte slots on the caller's stack, filled just before the call with every
value the nests use from outside: a memref's two pointers plus only the offset, sizes and
strides its type leaves dynamic (the static ones are rebuilt as constants in the outlined
function, so LLVM still sees them), an index or scalar in one slot. Constants and constant
globals are cloned instead of passed. The memref descriptor crosses the boundary as the LLVM
struct finalize-memref-to-llvm makes of it, through unrealized_conversion_cast, which
reconcile-unrealized-casts folds away once both sides are LLVM.
"""

from __future__ import annotations

import logging

from torch_mlir import ir
from torch_mlir.dialects import arith, builtin, func, llvm, scf

log = logging.getLogger("dynamo_mlir")

PARALLEL_FOR = "torch_parallel_for"
_CLONED = ("arith.constant", "memref.get_global")  # re-created in the outlined function, not passed


def dims(nest) -> int:
    return len(nest.regions[0].blocks[0].arguments)


def inside(value: ir.Value, nest) -> bool:
    """Whether `value` is defined in `nest` (an op's result or a block argument under it)."""
    owner = value.owner
    op = owner.owner.operation if isinstance(owner, ir.Block) else owner.operation
    nest = nest.operation
    while op is not None:
        if op == nest:
            return True
        op = op.parent
    return False


# ----------------------------------------------------------------------------- captured values


class Captures:
    """The values the nests use from outside, and where: [(op, operand number, value)]."""

    def __init__(self):
        self.values: list[ir.Value] = []
        self.uses: list[tuple[ir.Operation, int, ir.Value]] = []

    def add(self, value: ir.Value, op: ir.Operation | None = None, number: int = 0) -> None:
        if value not in self.values:
            self.values.append(value)
        if op is not None:
            self.uses.append((op, number, value))

    def passed(self) -> list[ir.Value]:
        return [v for v in self.values if not _cloned(v)]


def _cloned(value: ir.Value) -> bool:
    return not isinstance(value.owner, ir.Block) and value.owner.operation.name in _CLONED


def captures(nests: list) -> Captures | None:
    """The nests' outside values (their own first-dim bounds excepted), or None when one of them
    cannot go through ctx."""
    found = Captures()
    for nest in nests:
        nest_op, n = nest.operation, dims(nest)

        def visit(op):
            for i, value in enumerate(op.operands):
                if not (op == nest_op and i in (0, n)) and not inside(value, nest_op):
                    found.add(value, op, i)
            return ir.WalkResult.ADVANCE

        nest_op.walk(visit)
    for value in found.passed():
        if _slots(value.type) is None:
            log.debug("parallel: a loop stays serial, it uses a %s from outside", value.type)
            return None
    return found


def _slots(t: ir.Type) -> int | None:
    """How many 8-byte slots of ctx a value of type `t` takes, or None if it cannot go there."""
    if isinstance(t, ir.IndexType):
        return 1
    if isinstance(t, ir.IntegerType):
        return 1 if ir.IntegerType(t).width <= 64 else None
    if isinstance(t, ir.FloatType):
        return 1 if ir.FloatType(t).width <= 64 else None
    if isinstance(t, ir.MemRefType) and t.memory_space is None:
        return 2 + sum(_is_dynamic(v) for _, v in _fields(ir.MemRefType(t)))
    return None


def _is_dynamic(v: int) -> bool:
    return v in (ir.ShapedType.get_dynamic_size(), ir.ShapedType.get_dynamic_stride_or_offset())


def _fields(t: ir.MemRefType) -> list[tuple[list[int], int]]:
    """(position in the descriptor, static value) of offset, sizes and strides."""
    strides, offset = t.get_strides_and_offset()
    return ([([2], offset)] + [([3, d], s) for d, s in enumerate(t.shape)]
            + [([4, d], s) for d, s in enumerate(strides)])


# ----------------------------------------------------------------------------- ctx


def _ptr() -> ir.Type:
    return llvm.PointerType.get()


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def body_type() -> ir.FunctionType:
    return ir.FunctionType.get([_i64(), _i64(), _ptr()], [])


def _descriptor_type(t: ir.MemRefType) -> ir.Type:
    """The LLVM struct finalize-memref-to-llvm makes of a memref: pointers, offset, sizes, strides."""
    arrays = f", array<{t.rank} x i64>, array<{t.rank} x i64>" if t.rank else ""
    return ir.Type.parse(f"!llvm.struct<(ptr, ptr, i64{arrays})>")


def _slot(ctx: ir.Value, k: int) -> ir.Value:
    return llvm.getelementptr(_ptr(), ctx, [], [k], _i64(), [])


def _store(ctx: ir.Value, k: int, value: ir.Value) -> int:
    """Write `value` into ctx from slot k on; returns the next free slot."""
    t = value.type
    if isinstance(t, ir.IndexType):
        llvm.store(arith.index_cast(_i64(), value), _slot(ctx, k))
        return k + 1
    if not isinstance(t, ir.MemRefType):
        llvm.store(value, _slot(ctx, k))
        return k + 1
    t = ir.MemRefType(t)
    desc = builtin.unrealized_conversion_cast([_descriptor_type(t)], [value])
    for position in ([0], [1]):
        llvm.store(llvm.extractvalue(_ptr(), desc, position), _slot(ctx, k))
        k += 1
    for position, static in _fields(t):
        if _is_dynamic(static):
            llvm.store(llvm.extractvalue(_i64(), desc, position), _slot(ctx, k))
            k += 1
    return k


def _load(ctx: ir.Value, k: int, t: ir.Type) -> tuple[ir.Value, int]:
    """The value of type `t` stored in ctx from slot k on, and the next slot."""
    if isinstance(t, ir.IndexType):
        return arith.index_cast(t, llvm.load(_i64(), _slot(ctx, k))), k + 1
    if not isinstance(t, ir.MemRefType):
        return llvm.load(t, _slot(ctx, k)), k + 1
    t = ir.MemRefType(t)
    desc = llvm.mlir_poison(_descriptor_type(t))
    for position in ([0], [1]):
        desc = llvm.insertvalue(desc, llvm.load(_ptr(), _slot(ctx, k)), position)
        k += 1
    for position, static in _fields(t):
        if _is_dynamic(static):
            field = llvm.load(_i64(), _slot(ctx, k))
            k += 1
        else:
            field = llvm.mlir_constant(ir.IntegerAttr.get(_i64(), static))
        desc = llvm.insertvalue(desc, field, position)
    return builtin.unrealized_conversion_cast([t], [desc]), k


def _context_array(fn, n_slots: int) -> ir.Value:
    """ctx: n_slots i64 on the stack, allocated in the entry block (an alloca in a loop would
    grow the stack each iteration)."""
    with ir.InsertionPoint.at_block_begin(fn.regions[0].blocks[0]):
        count = llvm.mlir_constant(ir.IntegerAttr.get(_i64(), max(1, n_slots)))
        return llvm.alloca(_ptr(), count, _i64(), alignment=8)


# ----------------------------------------------------------------------------- the call and the function


def declare_parallel_for(module: ir.Module) -> None:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == PARALLEL_FOR:
            return
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        i32 = ir.IntegerType.get_signless(32)
        decl = func.FuncOp(PARALLEL_FOR, ir.FunctionType.get([_i64(), _i64(), _i64(), body_type(), _ptr()], [i32]))
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")


def outline(module: ir.Module, fn, nests: list, found: Captures, grain: ir.Value, rows: ir.Value | None,
            name: str) -> None:
    """Replace `nests` by the call (at the last one's place) and the function `name`. `grain`
    (index) and `rows` (index, the row block of a group; None for one nest) are computed by the
    caller before the last nest."""
    last = nests[-1]
    if rows is not None:
        found.add(rows)
    passed = found.passed()
    with last.location:
        ctx = _context_array(fn, sum(_slots(v.type) for v in passed))
        with ir.InsertionPoint(last):
            k = 0
            for value in passed:
                k = _store(ctx, k, value)
            n = dims(nests[0])
            bounds = [arith.index_cast(_i64(), nests[0].operands[i]) for i in (0, n)]
            i32 = ir.IntegerType.get_signless(32)
            func.call([i32], PARALLEL_FOR, [*bounds, arith.index_cast(_i64(), grain),
                                            func.constant(body_type(), name), ctx])
        _make_function(module, nests, found, rows, name)


def _make_function(module: ir.Module, nests: list, found: Captures, rows: ir.Value | None, name: str) -> None:
    """@name(begin, end, ctx): the nests over [begin, end) of their first dim, their outside
    values read back from ctx (constants cloned)."""
    with ir.InsertionPoint(module.body), nests[-1].location:
        body = func.FuncOp(name, body_type())
        body.attributes["sym_visibility"] = ir.StringAttr.get("private")
        body.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")  # only called through the pointer
        entry = body.add_entry_block()
        begin, end, ctx = entry.arguments
        with ir.InsertionPoint(entry):
            mapping, k = {}, 0
            for value in found.values:
                if _cloned(value):
                    mapping[value] = value.owner.operation.clone().results[0]
                else:
                    mapping[value], k = _load(ctx, k, value.type)
            index = ir.IndexType.get()
            start, stop = arith.index_cast(index, begin), arith.index_cast(index, end)
            end_of_rows = func.ReturnOp([])
            if rows is not None:  # a group: row block by row block, every nest on each block
                with ir.InsertionPoint(end_of_rows):
                    blocks = scf.ForOp(start, stop, mapping[rows])
                with ir.InsertionPoint(blocks.body):
                    start = blocks.induction_variable
                    stop = arith.minsi(arith.addi(start, mapping[rows]), stop)
                    end_of_rows = scf.YieldOp([])
    for nest in nests:
        nest.operation.move_before(end_of_rows)
        n = dims(nest)
        nest.operation.operands[0], nest.operation.operands[n] = start, stop
    for op, number, value in found.uses:
        op.operands[number] = mapping[value]


class Names:
    """Fresh symbol names `<fn>_parallel_<k>` for the outlined functions."""

    def __init__(self, module: ir.Module):
        self.taken = {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
                      if "sym_name" in op.attributes}

    def fresh(self, base: str) -> str:
        k = 0
        while f"{base}_parallel_{k}" in self.taken:
            k += 1
        self.taken.add(f"{base}_parallel_{k}")
        return f"{base}_parallel_{k}"
