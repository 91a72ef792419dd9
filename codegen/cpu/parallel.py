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
   statement of which dims carry no dependence, so no dependence analysis is redone for one op.
   A linalg op whose first dim is a reduction (a column sum laid out reduction-first) starts with
   an scf.for and stays serial; reductions inside a parallel dim (a row sum) parallelize on it.
   Tiling first was not needed: the outermost parallel dim of one op already makes the chunks.
2. The outermost scf.parallel nests (each one whole linalg op, not nested in another; one may
   sit in a serial loop, which still runs its iterations in order, as the call returns when all
   chunks are done) are grouped: consecutive nests over the same first-dim range, with only
   transparent ops (allocations, views, arithmetic) between them, join one group when every
   access of theirs to a buffer the group writes is to row i of it, i the accessing nest's first
   induction variable (through views that keep rows: reshapes of contiguous buffers with the
   same first dim). Then rows never meet across nests, and running the group chunk by chunk,
   nest after nest inside a chunk, computes what running nest after nest does. A softmax's or
   a layer norm's row-wise steps become one parallel region instead of six (each region costs
   a wake-up and a join of the pool, many milliseconds when the cores are shared), and inside
   it the nests go row block by row block (BLOCK_WORK), so a block's rows stay in cache from
   one step to the next.
3. Each group worth it (below) goes to outline.py: moved into
   `@<fn>_parallel_<k>(i64 begin, i64 end, ptr ctx)` and replaced by `torch_parallel_for(lb,
   ub, grain, @<fn>_parallel_<k>, ctx)`, ctx holding the values the nests use from outside.
4. `scf-parallel-for-to-nested-fors`: every scf.parallel left (small nests, inner parallel dims,
   the outlined loops themselves) becomes the scf.for nest convert-linalg-to-loops would make.

What stays serial: nests whose work is small (below), scf.for/scf.while nests written by the
serial_loops rules (sort, scatter, factorizations: they are not scf.parallel), memref.copy,
named matmuls already turned into BLAS calls (library.py), and loops with results.

Work and grain: a nest's work is its innermost iteration count (its loops' trip counts
multiplied, sibling loops added; a group's nests added). Each chunk handed to a thread is at
least MIN_CHUNK_WORK of it: grain = ceil(MIN_CHUNK_WORK / work per first-dim iteration). torch
runs the whole range inline, on the calling thread, when it is no longer than one grain, so with
static shapes such a group is not outlined at all. 8192 elements, where inductor also keeps a
kernel serial (512 vector iterations per thread, 8192 float32 elements). It was 32768 (~10-30 us
of a simple elementwise body on one core, several times what a parallel region costs to wake
and join the pool): that left a small LLaMA's [2, 64, 128] loops (16384 elements) serial, and
`benchmarks/parallel_grain.py` (each value compiled in one process, timed round-robin with
inductor) ran it 17% faster at 8192 (16% at 16384) on this project's 2-core EPYC, and ViT,
BERT, GPT-2 and the MLP within 1% (docs/results.md, 2026-11-28).

Dynamic shapes: supported. When a bound is not a constant, the work per first-dim iteration is
computed at run time (bounds defined inside the nests count as one iteration) and the call is
always emitted; torch's own check then keeps a short range on the calling thread.

torch_parallel_for's error code is ignored: the outlined functions cannot throw.
"""

from __future__ import annotations

import logging
import operator

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg

from ...lowering.scalar import constant_int
from ..passes import run_pipeline
from .. import views
from . import memory_plan, outline
from .outline import dims, inside

log = logging.getLogger("dynamo_mlir")

RUNTIME_SYMBOLS = frozenset({outline.PARALLEL_FOR})  # from libtorch_cpu (library.load_libtorch makes them visible)
MIN_CHUNK_WORK = 8192  # innermost iterations per chunk handed to a thread (see the docstring)
BLOCK_WORK = 8192  # innermost iterations of a group's row block (see the docstring)


def make_parallel_loops(module: ir.Module, options) -> ir.Module:
    """linalg on memrefs -> loops, the large outermost parallel ones as torch_parallel_for calls."""
    _copies_to_linalg(module)
    run_pipeline(module, "func.func(convert-linalg-to-parallel-loops), canonicalize", "loops", options)
    outline_parallel_loops(module)
    return run_pipeline(module, "func.func(scf-parallel-for-to-nested-fors), canonicalize, cse", "loops", options)


def _copies_to_linalg(module: ir.Module) -> None:
    """memref.copy of whole static buffers -> linalg.copy, so that a copy between row-wise steps
    (bufferization copies a zero-filled accumulator for a second reduction) becomes a nest that
    joins their group instead of splitting it, and a large one runs in parallel. (The remaining
    copies become memcpy.)"""
    copies = []

    def visit(op):
        if op.name == "memref.copy" and all(_contiguous(v.type) for v in op.operands):
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        with ir.InsertionPoint(op), op.location:
            linalg.copy(op.operands[0], outs=[op.operands[1]])
        op.erase()


def outline_parallel_loops(module: ir.Module) -> int:
    """Outline each worthwhile group of outermost scf.parallel nests; returns how many groups."""
    names = outline.Names(module)
    count = 0
    for fn in [op for op in module.body.operations if op.operation.name == "func.func" and op.regions[0].blocks]:
        for group in _groups(fn):
            count += _outline_group(module, fn, group, names)
    return count


def _outline_group(module: ir.Module, fn, group: list, names: outline.Names) -> bool:
    """Outline `group` if worth it and possible; returns whether it was."""
    try:
        static = _static_chunking(group)
        if static is None:
            return False  # one chunk at most: stays serial
    except _Dynamic:
        static = None  # grain and row block computed at run time
    found = outline.captures(group)
    if found is None:
        return False
    outline.declare_parallel_for(module)
    with ir.InsertionPoint(group[-1]), group[-1].location:
        if static is None:
            grain, rows = _chunking(group, _RuntimeCount(group))
        else:
            grain, rows = [None if v is None else arith.constant(ir.IndexType.get(), v) for v in static]
    name = names.fresh(ir.StringAttr(fn.attributes["sym_name"]).value)
    outline.outline(module, fn, group, found, grain, rows, name)
    log.debug("parallel: %s runs %d nest(s), (grain, rows) %s", name, len(group), static or "at run time")
    return True


# ----------------------------------------------------------------------------- which loops


def _outermost_parallel_loops(fn) -> list:
    found = []

    def visit(op):
        if op.name == "scf.parallel":
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    fn.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return [loop for loop in found if _eligible(loop)]


def _eligible(loop) -> bool:
    """No results (nothing reduced across iterations through scf.reduce) and a unit step on the
    dim to split: begin/end chunks then are plain ranges of iterations."""
    return len(loop.results) == 0 and constant_int(loop.operands[2 * dims(loop)]) == 1


# ----------------------------------------------------------------------------- groups


def _groups(fn) -> list[list]:
    """The outermost nests in order, consecutive ones joined into one group where legal."""
    groups: list[list] = []
    for nest in _outermost_parallel_loops(fn):
        if groups and _joinable(groups[-1], nest):
            groups[-1].append(nest)
        else:
            groups.append([nest])
    return groups


def _same(a: ir.Value, b: ir.Value) -> bool:
    return a == b or (constant_int(a) is not None and constant_int(a) == constant_int(b))


def _joinable(group: list, nest) -> bool:
    """`nest` may run in `group`'s chunks: the same first-dim range, nothing but transparent
    ops since the group's last nest, and every nest touching the buffers the group writes only
    in the row its first induction variable names."""
    last = group[-1]
    n, m = dims(last), dims(nest)
    if not (_same(last.operands[0], nest.operands[0]) and _same(last.operands[n], nest.operands[m])):
        return False
    return _only_transparent_between(last, nest) and _row_aligned([*group, nest])


# Ops that neither read nor write buffer contents: a nest may run after them instead of before.
_TRANSPARENT = ("memref.alloc", "memref.alloca", "memref.get_global", "memref.view", "memref.expand_shape",
                "memref.subview", "memref.collapse_shape", "memref.cast", "memref.dim", "llvm.mlir.constant", "affine.apply")


def _transparent(op) -> bool:
    name = op.operation.name
    if len(op.regions) or not (name in _TRANSPARENT or name.startswith(("arith.", "index.")) or name == "memref.reshape"):
        return False
    # memref.reshape reads its shape operand: only a constant global's.
    return name != "memref.reshape" or _defined_by(op.operands[1], "memref.get_global")


def _defined_by(value: ir.Value, name: str) -> bool:
    return not isinstance(value.owner, ir.Block) and value.owner.operation.name == name


def _only_transparent_between(first, second) -> bool:
    if first.operation.block != second.operation.block:
        return False
    between = None
    for op in first.operation.block.operations:
        if op.operation == second.operation:
            return between is not None
        if between is not None and not _transparent(op):
            return False
        if op.operation == first.operation:
            between = []
    return False


# A view whose row i is its source's row i when both are contiguous with the same first dim.
_ROW_VIEWS = ("memref.reshape", "memref.expand_shape", "memref.collapse_shape", "memref.cast")


def _contiguous(t: ir.Type) -> bool:
    if not isinstance(t, ir.MemRefType) or not ir.MemRefType(t).has_static_shape or ir.MemRefType(t).rank == 0:
        return False
    t = ir.MemRefType(t)
    strides, offset = t.get_strides_and_offset()
    expected, size = [], 1
    for extent in reversed(t.shape):
        expected.insert(0, size)
        size *= extent
    return offset == 0 and all(s == e or extent == 1 for s, e, extent in zip(strides, expected, t.shape))


def _row_root(value: ir.Value) -> ir.Value | None:
    """The buffer `value` shows rows of, row for row (a function argument, an allocation, a
    global, a planned view of the workspace, whose bytes _disjoint_views checks; through
    row-preserving views), or None: unknown, possibly aliasing anything."""
    return views.buffer_of(value, stop=lambda v: bool(memory_plan.planned_span(v)), through=_keeps_row_order)


def _keeps_row_order(op: ir.Operation, result: ir.Value) -> bool:
    """Row i of `result` is row i of the view's source."""
    if op.name == "memref.subview":
        return _keeps_rows(op)
    if op.name not in _ROW_VIEWS:
        return False
    source = op.operands[0]
    return (_contiguous(source.type) and _contiguous(result.type)
            and ir.MemRefType(source.type).shape[0] == ir.MemRefType(result.type).shape[0])


def _keeps_rows(subview) -> bool:
    """A subview taking every row whole in its first dim (offset 0, all rows, stride 1), so its
    row i lies in its source's row i: a row reduction's lane part and rest (row_reduction.py)
    are column ranges of every row."""
    attrs = subview.attributes
    offsets, sizes, strides = (list(ir.DenseI64ArrayAttr(attrs[k])) for k in
                               ("static_offsets", "static_sizes", "static_strides"))
    source = ir.MemRefType(subview.operands[0].type)
    all_rows = source.shape[0] == sizes[0] != ir.ShapedType.get_dynamic_size()
    return bool(offsets) and offsets[0] == 0 and strides[0] == 1 and all_rows


_ACCESS = {"memref.load": 0, "memref.store": 1}  # op -> position of the memref operand


def _accesses(nest) -> list[tuple[ir.Value | None, ir.Value | None, bool]] | None:
    """(row root, first index, is a write) of each load and store in `nest`, or None when the
    nest touches memory some other way (a call, a copy, a view made inside)."""
    found, other = [], []

    def visit(op):
        name = op.name
        if name in _ACCESS:
            k = _ACCESS[name]
            indices = list(op.operands)[k + 1:]
            found.append((_row_root(op.operands[k]), indices[0] if indices else None, name == "memref.store"))
        elif name.endswith(".call") or (name != "memref.dim" and any(
                isinstance(v.type, ir.MemRefType) for v in op.operands)):
            other.append(name)
        return ir.WalkResult.ADVANCE

    nest.operation.walk(visit)
    return None if other else found


def _row_aligned(nests: list) -> bool:
    """Whether the nests can run chunk by chunk (and row block by row block) instead of one after
    the other: every access to a buffer any of them writes is to row `i` of it, i the accessing
    nest's first induction variable, so different rows never meet and one row's accesses keep
    their order."""
    accesses = []
    for nest in nests:
        found = _accesses(nest)
        if found is None:
            return False
        iv = nest.regions[0].blocks[0].arguments[0]
        accesses += [(root, first, write, iv) for root, first, write in found]
    if any(root is None for root, *_ in accesses) or not _disjoint_views({root for root, *_ in accesses}):
        return False
    written = {root for root, _, write, _ in accesses if write}
    return all(first == iv for root, first, _, iv in accesses if root in written)


def _disjoint_views(roots: set) -> bool:
    """Whether planned buffers among `roots` (memory_plan.py) that share bytes share them row for
    row. The planner lets two buffers share bytes when no op uses both, but nests joined into one
    group run chunk by chunk on several threads: where the two buffers' rows differ, one chunk's
    later nest would write bytes that another chunk's earlier nest still uses. At the same offset
    with the same rows, row i of one is row i of the other, which only chunk i's thread touches."""
    views = [(root, memory_plan.planned_span(root)) for root in roots]
    views = [(tuple(ir.MemRefType(root.type).shape[:1]), span) for root, span in views if span is not None]
    return all(not (a[1][0] == b[1][0] and a[1][1] < b[1][2] and b[1][1] < a[1][2]) or a == b
               for k, a in enumerate(views) for b in views[k + 1:])


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
    def ceildiv(a: int, b: int) -> int:
        return -(-a // b)

    @staticmethod
    def trip(lb: ir.Value, ub: ir.Value, step: ir.Value) -> int:
        bounds = [constant_int(v) for v in (lb, ub, step)]
        if None in bounds or bounds[2] <= 0:
            raise _Dynamic
        return max(0, -(-(bounds[1] - bounds[0]) // bounds[2]))


class _RuntimeCount:
    """Trip counts as index values computed at the insertion point; a bound defined inside the
    nests (not available before them) counts as one iteration."""

    def __init__(self, nests: list):
        self.nests = nests
        self.mul, self.add, self.ceildiv = arith.muli, arith.addi, arith.ceildivsi

    @staticmethod
    def const(n: int) -> ir.Value:
        return arith.constant(ir.IndexType.get(), n)

    def at_least_one(self, n: ir.Value) -> ir.Value:
        return arith.maxsi(n, self.const(1))

    def trip(self, lb: ir.Value, ub: ir.Value, step: ir.Value) -> ir.Value:
        if any(inside(v, nest) for v in (lb, ub, step) for nest in self.nests):
            return self.const(1)
        return arith.maxsi(arith.ceildivsi(arith.subi(ub, lb), step), self.const(0))


def _loop_trip(op, count):
    """The trip count of an scf.for or scf.parallel (all its dims), or of any other op (1)."""
    if op.name == "scf.for":
        return count.trip(*op.operands[:3])
    if op.name == "scf.parallel":
        n, trip = dims(op), count.const(1)
        for d in range(n):
            trip = count.mul(trip, count.trip(op.operands[d], op.operands[n + d], op.operands[2 * n + d]))
        return trip
    return count.const(1)


def _block_work(block: ir.Block, count):
    """Innermost iterations of one run of `block`: its loops' work added up, at least one."""
    total = None
    for op in block.operations:
        for region in op.regions:
            for inner in region.blocks:
                work = count.mul(_loop_trip(op, count), _block_work(inner, count))
                total = work if total is None else count.add(total, work)
    return count.const(1) if total is None else count.at_least_one(total)


def _work_per_row(nest, count):
    """Innermost iterations of one iteration of the nest's first dim (at least one: an empty
    inner dim still costs the outer iteration, and the grain divides by this)."""
    n, work = dims(nest), _block_work(nest.regions[0].blocks[0], count)
    for d in range(1, n):
        work = count.mul(work, count.trip(nest.operands[d], nest.operands[n + d], nest.operands[2 * n + d]))
    return count.at_least_one(work)


def _chunking(group: list, count) -> tuple:
    """(grain, rows): first-dim iterations per chunk at the least, and per row block of a group
    (None for one nest)."""
    work = _work_per_row(group[0], count)
    for nest in group[1:]:
        work = count.add(work, _work_per_row(nest, count))
    grain = count.ceildiv(count.const(MIN_CHUNK_WORK), work)
    return grain, (count.ceildiv(count.const(BLOCK_WORK), work) if len(group) > 1 else None)


def _static_chunking(group: list) -> tuple[int, int | None] | None:
    """(grain, rows) when the range makes two chunks at least, None when it makes one (serial);
    raises _Dynamic when a bound is known only at run time."""
    first = group[0]
    n = dims(first)
    trip = _StaticCount.trip(first.operands[0], first.operands[n], first.operands[2 * n])
    grain, rows = _chunking(group, _StaticCount)
    return (grain, rows) if trip > grain else None
