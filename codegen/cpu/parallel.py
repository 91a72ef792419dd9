"""Loop nests of linalg ops run on torch's intra-op thread pool (cpu option `parallel`).

Why torch's pool: eager's kernels run on it, so compiled code and eager share one set of threads
and `torch.set_num_threads` governs both. libtorch_cpu exports it through the stable C ABI of
AOTInductor, `torch_parallel_for(begin, end, grain, fn, ctx)`, which calls `fn(b, e, ctx)` on
chunks of [begin, end) from the pool's threads and returns when all are done. The other routes
are closed here: torch's OpenMP is libgomp, which has none of the `__kmpc_*` entry points MLIR's
OpenMP lowering calls, and `async-parallel-for` needs MLIR's async runtime library, which the
torch-mlir wheel does not ship.

How (after bufferization, in place of `convert-linalg-to-loops`):

1. `convert-linalg-to-parallel-loops`: a linalg op's leading parallel dims become one
   scf.parallel, its reduction dims scf.for inside it. The parallel-loop form is linalg's own
   statement of which dims carry no dependence, so no dependence analysis is redone here.
   A linalg op whose first dim is a reduction (a column sum laid out reduction-first) starts with
   an scf.for and stays serial; reductions inside a parallel dim (a row sum) parallelize on it.
   Tiling first was not needed: the outermost parallel dim of one op already makes the chunks.
2. Each outermost scf.parallel (one whole linalg op, not nested in another; it may sit inside a
   serial loop, which still runs its iterations in order, as the call returns when all chunks
   are done) whose work is worth it is outlined: its first dim's range is replaced by the
   function's (begin, end), the loop moves into `@<fn>_parallel_<k>(i64 begin, i64 end, ptr ctx)`,
   and the values it uses from outside are read from `ctx`, an array of 8-byte slots the caller
   fills: per memref its two pointers plus only the offset/sizes/strides the type leaves dynamic
   (static ones are rebuilt as constants, so LLVM still sees them), per scalar one slot.
   Constants are cloned instead. The loop is replaced by `torch_parallel_for(lb, ub, grain,
   @outlined, ctx)`.
3. `scf-parallel-for-to-nested-fors`: every scf.parallel left (small nests, inner parallel dims,
   the outlined loops themselves) becomes the scf.for nest convert-linalg-to-loops would have made.

What stays serial: nests whose work is small (below), scf.for/scf.while nests written by the
serial_loops rules (sort, scatter, factorizations: they are not scf.parallel), memref.copy,
named matmuls already turned into BLAS calls (library.py), and loops with results.

Work and grain: a nest's work is its innermost iteration count (its loops' trip counts
multiplied, sibling loops added). Each chunk handed to a thread is at least MIN_CHUNK_WORK of
it: grain = ceil(MIN_CHUNK_WORK / work per outer iteration). torch runs the whole range inline,
on the calling thread, when it is no longer than one grain, so with static shapes such a nest is
not outlined at all. 32768 elements (inductor keeps a kernel serial below 512 vector iterations
per thread, 8192 float32 elements) is ~10-30 us of a simple elementwise body on one core, several
times the ~2-5 us a parallel region costs to wake and join the pool.

Dynamic shapes: supported. When a bound of the nest is not a constant, the work per outer
iteration is computed at run time (bounds defined inside the nest count as one iteration) and
the call is always emitted; torch's own check then keeps small ranges on the calling thread.

torch_parallel_for's error code is ignored: the outlined functions cannot throw.
"""

from __future__ import annotations

import logging
import operator

from torch_mlir import ir
from torch_mlir.dialects import arith, builtin, func, llvm

from ..passes import run_pipeline

log = logging.getLogger("dynamo_mlir")

PARALLEL_FOR = "torch_parallel_for"
RUNTIME_SYMBOLS = frozenset({PARALLEL_FOR})  # from libtorch_cpu (library.load_libtorch makes them visible)
MIN_CHUNK_WORK = 32768  # innermost iterations per chunk handed to a thread (see the docstring)
_CLONED = ("arith.constant", "memref.get_global")  # re-created in the outlined function, not passed


def make_parallel_loops(module: ir.Module, options) -> ir.Module:
    """linalg on memrefs -> loops, the large outermost parallel ones as torch_parallel_for calls."""
    run_pipeline(module, "func.func(convert-linalg-to-parallel-loops), canonicalize", "loops", options)
    outline_parallel_loops(module)
    return run_pipeline(module, "func.func(scf-parallel-for-to-nested-fors), canonicalize, cse", "loops", options)


def outline_parallel_loops(module: ir.Module) -> int:
    """Outline each worthwhile outermost scf.parallel of every function; returns how many."""
    names = _Names(module)
    count = 0
    for fn in [op for op in module.body.operations if op.operation.name == "func.func" and op.regions[0].blocks]:
        for loop in _outermost_parallel_loops(fn):
            grain = _static_grain(loop)
            if grain is not None and _static_trip(loop) <= grain:
                continue  # one chunk: serial
            captures = _captures(loop)
            if captures is None:
                continue
            _declare_parallel_for(module)
            _outline(module, fn, loop, captures, grain, names.fresh(ir.StringAttr(fn.attributes["sym_name"]).value))
            count += 1
    return count


# ----------------------------------------------------------------------------- which loops


def _outermost_parallel_loops(fn) -> list[ir.Operation]:
    found = []

    def visit(op):
        if op.name == "scf.parallel":
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    fn.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [loop for loop in found if _eligible(loop)]


def _dims(loop) -> int:
    return len(loop.regions[0].blocks[0].arguments)


def _eligible(loop) -> bool:
    """No results (nothing reduced across iterations through scf.reduce) and a unit step on the
    dim to split: begin/end chunks then are plain ranges of iterations."""
    return len(loop.results) == 0 and _constant(loop.operands[2 * _dims(loop)]) == 1


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


# ----------------------------------------------------------------------------- work


class _Dynamic(Exception):
    """A bound of the nest is not a constant."""


class _StaticCount:
    """Trip counts as Python ints; a bound that is not a constant raises _Dynamic."""

    mul, add = staticmethod(operator.mul), staticmethod(operator.add)

    @staticmethod
    def const(n: int) -> int:
        return n

    @staticmethod
    def at_least_one(n: int) -> int:
        return max(1, n)

    @staticmethod
    def trip(lb: ir.Value, ub: ir.Value, step: ir.Value) -> int:
        bounds = [_constant(v) for v in (lb, ub, step)]
        if None in bounds or bounds[2] <= 0:
            raise _Dynamic
        return max(0, -(-(bounds[1] - bounds[0]) // bounds[2]))


class _RuntimeCount:
    """Trip counts as index values computed at the insertion point; a bound defined inside the
    nest (not available before it) counts as one iteration."""

    def __init__(self, nest: ir.Operation):
        self.nest = nest
        self.mul, self.add = arith.muli, arith.addi

    @staticmethod
    def const(n: int) -> ir.Value:
        return arith.constant(ir.IndexType.get(), n)

    def at_least_one(self, n: ir.Value) -> ir.Value:
        return arith.maxsi(n, self.const(1))

    def trip(self, lb: ir.Value, ub: ir.Value, step: ir.Value) -> ir.Value:
        if any(_inside(v, self.nest) for v in (lb, ub, step)):
            return self.const(1)
        return arith.maxsi(arith.ceildivsi(arith.subi(ub, lb), step), self.const(0))


def _loop_trip(op, count) -> object:
    """The trip count of an scf.for or scf.parallel (all its dims), or of any other op (1)."""
    if op.name == "scf.for":
        return count.trip(*op.operands[:3])
    if op.name == "scf.parallel":
        n, trip = _dims(op), count.const(1)
        for d in range(n):
            trip = count.mul(trip, count.trip(op.operands[d], op.operands[n + d], op.operands[2 * n + d]))
        return trip
    return count.const(1)


def _block_work(block: ir.Block, count) -> object:
    """Innermost iterations of one run of `block`: its loops' work added up, at least one."""
    total = None
    for op in block.operations:
        for region in op.regions:
            for inner in region.blocks:
                work = count.mul(_loop_trip(op, count), _block_work(inner, count))
                total = work if total is None else count.add(total, work)
    return count.const(1) if total is None else count.at_least_one(total)


def _work_per_outer_iteration(loop, count) -> object:
    """Innermost iterations of one iteration of the loop's first dim (at least one: an empty
    inner dim still costs the outer iteration, and the grain divides by this)."""
    n, work = _dims(loop), _block_work(loop.regions[0].blocks[0], count)
    for d in range(1, n):
        work = count.mul(work, count.trip(loop.operands[d], loop.operands[n + d], loop.operands[2 * n + d]))
    return count.at_least_one(work)


def _static_grain(loop) -> int | None:
    """Outer iterations per chunk, or None when the nest's bounds are known only at run time."""
    try:
        _static_trip(loop)
        return -(-MIN_CHUNK_WORK // _work_per_outer_iteration(loop, _StaticCount))
    except _Dynamic:
        return None


def _static_trip(loop) -> int:
    n = _dims(loop)
    return _StaticCount.trip(loop.operands[0], loop.operands[n], loop.operands[2 * n])


def _runtime_grain(loop) -> ir.Value:
    work = _work_per_outer_iteration(loop, _RuntimeCount(loop))
    return arith.ceildivsi(arith.constant(ir.IndexType.get(), MIN_CHUNK_WORK), work)


# ----------------------------------------------------------------------------- captured values


def _inside(value: ir.Value, nest: ir.Operation) -> bool:
    """Whether `value` is defined in `nest` (an op's result or a block argument under it)."""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner.operation
    while op is not None:
        if op == nest:
            return True
        op = op.parent
    return False


def _slots(t: ir.Type) -> list[str] | None:
    """What a value of type `t` takes in ctx, one entry per 8-byte slot, or None if unsupported."""
    if isinstance(t, ir.IndexType):
        return ["index"]
    if isinstance(t, (ir.IntegerType, ir.FloatType)) and _width(t) <= 64:
        return ["scalar"]
    if isinstance(t, ir.MemRefType) and t.memory_space is None:
        strides, offset = t.get_strides_and_offset()
        fields = [offset, *t.shape, *strides]
        return ["ptr", "ptr"] + ["i64" for v in fields if _is_dynamic(v)]
    return None


def _width(t: ir.Type) -> int:
    return ir.IntegerType(t).width if isinstance(t, ir.IntegerType) else ir.FloatType(t).width


def _is_dynamic(v: int) -> bool:
    return v in (ir.ShapedType.get_dynamic_size(), ir.ShapedType.get_dynamic_stride_or_offset())


class _Captures:
    """The values a nest uses from outside, and where: [(op, operand number, value)]."""

    def __init__(self):
        self.values: list[ir.Value] = []
        self.uses: list[tuple[ir.Operation, int, ir.Value]] = []

    def add(self, op: ir.Operation, number: int, value: ir.Value) -> None:
        if value not in self.values:
            self.values.append(value)
        self.uses.append((op, number, value))

    def passed(self) -> list[ir.Value]:
        return [v for v in self.values if not _cloned(v)]


def _cloned(value: ir.Value) -> bool:
    return not isinstance(value.owner, ir.Block) and value.owner.name in _CLONED


def _captures(loop) -> _Captures | None:
    """The loop's outside values (its own first-dim bounds excepted), or None when one of them
    cannot go through ctx."""
    found, n = _Captures(), _dims(loop)

    def visit(op):
        for i, value in enumerate(op.operands):
            if op == loop and i in (0, n):
                continue
            if not _inside(value, loop):
                found.add(op, i, value)
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    for value in found.passed():
        if _slots(value.type) is None:
            log.debug("parallel: a loop stays serial, it uses a %s from outside", value.type)
            return None
    return found


# ----------------------------------------------------------------------------- the outlined function


def _ptr() -> ir.Type:
    return llvm.PointerType.get()


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _body_type() -> ir.FunctionType:
    return ir.FunctionType.get([_i64(), _i64(), _ptr()], [])


def _descriptor_type(t: ir.MemRefType) -> ir.Type:
    """The LLVM struct finalize-memref-to-llvm makes of a memref: pointers, offset, sizes, strides."""
    arrays = f", array<{t.rank} x i64>, array<{t.rank} x i64>" if t.rank else ""
    return ir.Type.parse(f"!llvm.struct<(ptr, ptr, i64{arrays})>")


def _field_positions(t: ir.MemRefType) -> list[tuple[list[int], int]]:
    """(position in the descriptor, static value) of offset, sizes and strides."""
    strides, offset = t.get_strides_and_offset()
    return ([([2], offset)] + [([3, d], s) for d, s in enumerate(t.shape)]
            + [([4, d], s) for d, s in enumerate(strides)])


def _slot(ctx: ir.Value, k: int) -> ir.Value:
    return llvm.getelementptr(_ptr(), ctx, [], [k], _i64(), [])


def _store_capture(ctx: ir.Value, k: int, value: ir.Value) -> int:
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
    for position, static in _field_positions(t):
        if _is_dynamic(static):
            llvm.store(llvm.extractvalue(_i64(), desc, position), _slot(ctx, k))
            k += 1
    return k


def _load_capture(ctx: ir.Value, k: int, t: ir.Type) -> tuple[ir.Value, int]:
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
    for position, static in _field_positions(t):
        if _is_dynamic(static):
            field = llvm.load(_i64(), _slot(ctx, k))
            k += 1
        else:
            field = llvm.mlir_constant(ir.IntegerAttr.get(_i64(), static))
        desc = llvm.insertvalue(desc, field, position)
    return builtin.unrealized_conversion_cast([t], [desc]), k


def _declare_parallel_for(module: ir.Module) -> None:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == PARALLEL_FOR:
            return
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        i32 = ir.IntegerType.get_signless(32)
        decl = func.FuncOp(PARALLEL_FOR, ir.FunctionType.get([_i64(), _i64(), _i64(), _body_type(), _ptr()], [i32]))
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")


def _outline(module: ir.Module, fn, loop, captures: _Captures, grain: int | None, name: str) -> None:
    passed = captures.passed()
    n_slots = sum(len(_slots(v.type)) for v in passed)
    with loop.location:
        ctx = _context_array(fn, n_slots)
        with ir.InsertionPoint(loop):
            k = 0
            for value in passed:
                k = _store_capture(ctx, k, value)
            grain_value = arith.constant(_i64(), grain) if grain is not None else arith.index_cast(
                _i64(), _runtime_grain(loop))
            n = _dims(loop)
            bounds = [arith.index_cast(_i64(), loop.operands[i]) for i in (0, n)]
            i32 = ir.IntegerType.get_signless(32)
            func.call([i32], PARALLEL_FOR, [*bounds, grain_value, func.constant(_body_type(), name), ctx])
        _make_body(module, loop, captures, name)


def _context_array(fn, n_slots: int) -> ir.Value:
    """ctx: n_slots i64 on the stack, allocated in the entry block (an alloca in a loop would
    grow the stack each iteration)."""
    with ir.InsertionPoint.at_block_begin(fn.regions[0].blocks[0]):
        count = llvm.mlir_constant(ir.IntegerAttr.get(_i64(), max(1, n_slots)))
        return llvm.alloca(_ptr(), count, _i64(), alignment=8)


def _make_body(module: ir.Module, loop, captures: _Captures, name: str) -> None:
    """@name(begin, end, ctx): the loop over [begin, end) of its first dim, its outside values
    read back from ctx (constants cloned)."""
    with ir.InsertionPoint(module.body), loop.location:
        body = func.FuncOp(name, _body_type())
        body.attributes["sym_visibility"] = ir.StringAttr.get("private")
        body.attributes["llvm.linkage"] = ir.Attribute.parse("#llvm.linkage<internal>")  # only called through the pointer
        entry = body.add_entry_block()
        begin, end, ctx = entry.arguments
        with ir.InsertionPoint(entry):
            mapping, k = {}, 0
            for value in captures.values:
                if _cloned(value):
                    mapping[value] = value.owner.clone().results[0]
                else:
                    mapping[value], k = _load_capture(ctx, k, value.type)
            start, stop = arith.index_cast(ir.IndexType.get(), begin), arith.index_cast(ir.IndexType.get(), end)
            ret = func.ReturnOp([])
    loop.move_before(ret)
    n = _dims(loop)
    loop.operands[0], loop.operands[n] = start, stop
    for op, number, value in captures.uses:
        op.operands[number] = mapping[value]


class _Names:
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
