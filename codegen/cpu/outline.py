"""Outlining loop nests into a function that torch_parallel_for runs on chunks of their rows.

`outline(...)` moves a group of scf.parallel nests (same first-dim range, see parallel.py) into

    func.func private @<fn>_parallel_<k>(%begin: i64, %end: i64, %ctx: !llvm.ptr)

which reads the values the nests use from outside back from ctx and calls
`@<fn>_parallel_<k>_body(begin, end, values...)`, where each nest runs over [begin, end) of its
first dim (a group of several, row block by row block: an scf.for over [begin, end) in steps of
`rows`, each nest over the block); `torch_parallel_for(lb, ub, grain, @<fn>_parallel_<k>, ctx)`
takes the last nest's place. The body's memref arguments carry `llvm.noalias` where no other
passed memref shares their buffer (see _make_function).

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

from ..attributes import NOALIAS
from .. import views
from . import memory_plan

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
    """@name(begin, end, ctx) calls @name_body(begin, end, ctx, memrefs...), which holds the
    nests over [begin, end) of their first dim, reads the other outside values from ctx and
    clones the constants. Two functions so that the body's memref arguments can say
    `llvm.noalias` where no other value passed shares their buffer: loaded from ctx, LLVM would
    have to assume any two pointers alias (an accumulator row then goes to memory on every
    iteration instead of staying in a register); LLVM inlines the body back into @name and keeps
    that knowledge as scopes. Only memrefs of a fully static type are arguments: they have a
    bare-pointer form (convert-func-to-llvm has none for a dynamic offset, a slice's in a loop)."""
    passed = found.passed()
    slots = dict(zip(passed, _slot_numbers(passed)))
    args = [v for v in passed if _bare(v.type)]
    index = ir.IndexType.get()
    with ir.InsertionPoint(module.body), nests[-1].location:
        body = _private(func.FuncOp(f"{name}_body", ir.FunctionType.get([index, index, _ptr(), *[v.type for v in args]], [])))
        body.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get({})] * 3 + [_arg_attrs(v, passed) for v in args])
        wrapper = _private(func.FuncOp(name, body_type()))
        begin, end, ctx = wrapper.add_entry_block().arguments
        with ir.InsertionPoint(wrapper.entry_block):
            loaded = [_load(ctx, slots[v], v.type)[0] for v in args]
            func.call([], f"{name}_body", [arith.index_cast(index, begin), arith.index_cast(index, end), ctx, *loaded])
            func.ReturnOp([])
        entry = body.add_entry_block()
        start, stop, ctx, *arguments = entry.arguments
        mapping = dict(zip(args, arguments))
        with ir.InsertionPoint(entry):
            for value in found.values:
                if _cloned(value):
                    mapping[value] = value.owner.operation.clone().results[0]
                elif value not in mapping:
                    mapping[value] = _load(ctx, slots[value], value.type)[0]
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


def _slot_numbers(passed: list[ir.Value]) -> list[int]:
    """Where each passed value starts in ctx (the order _store fills it in)."""
    starts, k = [], 0
    for value in passed:
        starts.append(k)
        k += _slots(value.type)
    return starts


def _bare(t: ir.Type) -> bool:
    """A memref type whose shape, strides and offset are all static."""
    return isinstance(t, ir.MemRefType) and not any(_is_dynamic(v) for _, v in _fields(ir.MemRefType(t)))


def _private(fn):
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    fn.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")  # called from this module only
    return fn


def buffer_of(value: ir.Value) -> ir.Value | None:
    """The buffer a memref value is a view of: a function argument, an allocation, a global or a
    planned view of the workspace (memory_plan.py), or None (a loop's block argument, ...:
    unknown)."""
    return views.buffer_of(value, stop=lambda v: bool(memory_plan.planned_span(v)))


def _arg_attrs(value: ir.Value, passed: list[ir.Value]) -> ir.Attribute:
    """{llvm.noalias} for a memref whose buffer no other passed memref shares. Distinct function
    arguments count as distinct buffers: the outputs are fresh tensors, and inputs, which may
    be one tensor twice, are only read (noalias speaks of memory that is written). A memref of
    unknown buffer makes every one of them may-alias."""
    if not isinstance(value.type, ir.MemRefType):
        return ir.DictAttr.get({})
    buffers = [buffer_of(v) for v in passed if isinstance(v.type, ir.MemRefType)]
    mine = buffer_of(value)
    if mine is None or any(b is None for b in buffers) or sum(memory_plan.may_alias(b, mine) for b in buffers) > 1:
        return ir.DictAttr.get({})
    return ir.DictAttr.get({NOALIAS: ir.UnitAttr.get()})


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
