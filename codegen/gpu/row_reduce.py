"""Rows of symbolic count or length: one block per row, sizes as SSA values.

The tiled strategy (tiled.py) keeps a reduction loop sequential inside one thread and gives a
block 1024 rows: a layer norm over 2,560 rows of 768 ran on 3 blocks. This strategy takes a
linalg.generic whose loops are parallel then reduction, with one output folded by a combiner
gpu.all_reduce knows (`takes`), and launches one block per output element ("row"):
- the grid is the product of the parallel loops' sizes, computed in the host by memref.dim on
  the operands (the host schedule reads it per call, host_sizes.py);
- the block's threads stride over the row's linearized reduction loops (adjacent threads read
  adjacent elements when the innermost loop is the contiguous one), each folding its elements;
- `gpu.all_reduce` combines the partials, and thread 0 folds the total into the old value.

The launch builds a row group (row_groups.py): the reduction with the ops before and after it on
the same rows, elementwise ops, fills and copies (their threads stride over their part of the row
the same way), a barrier between two ops. The fill or copy that set a reduction's output before
it is one of them, so it has no launch of its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from torch_mlir import ir
from torch_mlir.dialects import arith, gpu, memref, scf, vector

from ...lowering.scalar import identity_of
from ..kernel_names import mark_kernel
from ..provenance import location_with_body
from .loopnest import affine_dims, clone_region_body, combiner_of, eval_affine, materialize, op_name
from . import row_staging
from .capabilities import GpuCapabilities
from .tiled import has_symbolic_sizes, iterators

# combining op -> gpu.all_reduce kind (its identity: lowering.scalar.IDENTITIES)
COMBINERS = {
    "arith.addf": "ADD", "arith.mulf": "MUL", "arith.maximumf": "MAXIMUMF", "arith.minimumf": "MINIMUMF",
    "arith.maxnumf": "MAXNUMF", "arith.minnumf": "MINNUMF", "arith.addi": "ADD", "arith.muli": "MUL",
    "arith.maxsi": "MAXSI", "arith.minsi": "MINSI", "arith.ori": "OR", "arith.andi": "AND", "arith.xori": "XOR",
}
REDUCIBLE = ("f32", "i32")  # the element types gpu.all_reduce combines here


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in op.opview.indexing_maps]


def _combiner(op):
    generic = op.opview
    block = generic.regions[0].blocks[0]
    yielded = list(block.operations)[-1].operands[0]
    return combiner_of(block, yielded, list(block.arguments)[len(generic.inputs)])


def takes(op) -> bool:
    """Whether this strategy builds `op`: a linalg.generic with symbolic sizes, at least one
    parallel loop then at least one reduction loop, one output of a reducible type folded by a known combiner, every
    parallel loop indexing the output (so each block writes its own element)."""
    if op.name != "linalg.generic" or not has_symbolic_sizes(op):
        return False
    its = iterators(op)
    if "reduction" not in its or len(op.opview.outputs) != 1:
        return False
    p = its.index("reduction")
    if p == 0 or any(it != "reduction" for it in its[p:]):  # p == 0: a whole reduction, one block (not yet)
        return False
    out_type = ir.MemRefType(op.opview.outputs[0].type)
    comb = _combiner(op)
    if comb is None or op_name(comb) not in COMBINERS or str(out_type.element_type) not in REDUCIBLE:
        return False
    written = {e.position for e in _maps(op)[-1].results if isinstance(e, ir.AffineDimExpr)}
    return written == set(range(p)) and all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
                                            for e in _maps(op)[-1].results)


def _index(n: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), n)


def accesses(op) -> list[tuple[ir.Value, ir.AffineMap]]:
    """(operand, indexing map) of each memref operand of a generic, fill or copy, outputs last."""
    if op.name == "linalg.generic":
        return list(zip([*op.opview.inputs, *op.opview.outputs], _maps(op)))
    if op.name == "linalg.fill":
        out = op.opview.outputs[0]
        return [(out, ir.AffineMap.get_identity(ir.MemRefType(out.type).rank))]
    src, dst = (op.operands[0], op.operands[1]) if op.name == "memref.copy" else (op.opview.inputs[0],
                                                                                   op.opview.outputs[0])
    ident = ir.AffineMap.get_identity(ir.MemRefType(dst.type).rank)
    return [(src, ident), (dst, ident)]


def written(op) -> list[ir.Value]:
    return list(op.opview.outputs) if op.name == "linalg.generic" else [accesses(op)[-1][0]]


def loop_sizes(op) -> list[ir.Value]:
    """Each loop's size, from the first operand dim its map indexes by the loop alone (a constant
    where the dim is static, memref.dim where it is not); built at the current insertion point."""
    sizes: list = [None] * len(iterators(op))
    for value, amap in accesses(op):
        shape = ir.MemRefType(value.type).shape
        for k, e in enumerate(amap.results):
            if isinstance(e, ir.AffineDimExpr) and sizes[e.position] is None:
                static = shape[k] != ir.ShapedType.get_dynamic_size()
                sizes[e.position] = _index(shape[k]) if static else memref.dim(value, _index(k))
    if any(s is None for s in sizes):
        raise ValueError(f"a loop of {op.name} indexes no operand dim")
    return sizes


def product(values: list[ir.Value]) -> ir.Value:
    out = _index(1) if not values else values[0]
    for v in values[1:]:
        out = arith.muli(out, v)
    return out


def delinearize(linear: ir.Value, sizes: list[ir.Value]) -> list[ir.Value]:
    """Row-major indices of `linear` (< the product of `sizes`)."""
    out: list = [None] * len(sizes)
    rest = linear
    for i in reversed(range(len(sizes))):
        if i == 0:
            out[i] = rest
        else:
            out[i] = arith.remui(rest, sizes[i])
            rest = arith.divui(rest, sizes[i])
    return out


# Elements a thread takes per trip of its loop, `threads` apart (each load coalesced across the
# warp): their loads are issued before the first is used, so a thread has several in flight.
# 4, 8 and 16 ran the symbolic-size row cases of bench_cuda.py at the same speed on an H200
# (benchmarks/row_unroll.py, benchmarks/results/row_unroll_h200_2026-11-27.md); the flat
# elementwise chain (chunk_launch, whose chunk grows with it) was fastest at 8 (0.80 of the copy
# against 0.66 at 4): chunks take CHUNK_UNROLL. One a trip was not measured with the groups whole.
UNROLL = 4
CHUNK_UNROLL = 8


@dataclass(frozen=True)
class Lane:
    """One element a thread takes in a trip: whether it is in the row, its position in the row
    (the trip's first where it is not), its operands' indices, its loops' indices. In a trip of
    vectors (InRow.vec > 1) it is element `offset` of the trip's vector `group`, and `trip` holds
    what the trip's lanes share (each group's first lane, the vectors loaded)."""
    valid: ir.Value
    linear: ir.Value
    at: Callable
    index_of: Callable
    group: int = 0
    offset: int = 0
    trip: dict | None = None


@dataclass
class InRow:
    """Where a block stands while it builds one op of its row: the row's indices, the op's other
    loops' sizes (host values), and the thread that strides over them."""
    row: list[ir.Value]
    inner: list[ir.Value]
    tx: ir.Value
    threads: int
    span: tuple | None = None  # (first, end): the linear elements this block takes; None: all of them
    unroll: int | None = None  # elements a trip; None: UNROLL
    pos: int = 0               # the op's position in its group
    slots: row_staging.Slots | None = None  # the group's shared-memory slots (staged launches)
    vec: int = 1               # consecutive elements a lane group takes (row_vectors: the launch checked they may)

    def loop(self, iter_args, lanes_body) -> scf.ForOp:
        """The thread's loop over the op's elements of the row: element tx + k * threads of each
        chunk of unroll * threads, for k < unroll (adjacent threads, adjacent elements where the
        innermost loop is the contiguous one). `lanes_body(lanes, iter_args)` builds a trip and
        returns what it yields; an invalid lane (past the row's end) takes the trip's first
        element, the thread's own (lane 0 is always in the row), and its result must be dropped:
        no thread touches another's element of the row, also in shared memory (row_staging.py)."""
        if self.vec > 1:
            return self._vector_loop(iter_args, lanes_body)
        unroll = self.unroll or UNROLL
        first, n = self.span or (None, product(self.inner))
        lower = arith.addi(first, self.tx) if first is not None else self.tx
        loop = scf.ForOp(lower, n, _index(self.threads * unroll), list(iter_args))
        with ir.InsertionPoint(loop.body):
            own = loop.induction_variable
            lanes = []
            for k in range(unroll):
                i = arith.addi(own, _index(k * self.threads)) if k else own
                valid = arith.cmpi(arith.CmpIPredicate.ult, i, n)
                lanes.append(self._lane(valid, arith.select(valid, i, own) if k else i))
            scf.YieldOp(lanes_body(lanes, list(loop.inner_iter_args)))
        return loop

    def _vector_loop(self, iter_args, lanes_body) -> scf.ForOp:
        """The loop over the row's groups of `vec` consecutive elements (the row's length a
        multiple of vec): group tx + k * threads of each chunk, for k < unroll; an invalid group
        takes the thread's own first group, as an invalid lane does."""
        unroll, vec = self.unroll or UNROLL, self.vec
        groups = arith.divui(product(self.inner), _index(vec))
        loop = scf.ForOp(self.tx, groups, _index(self.threads * unroll), list(iter_args))
        with ir.InsertionPoint(loop.body):
            own = loop.induction_variable
            trip: dict = {"first": {}}
            lanes = []
            for k in range(unroll):
                g = arith.addi(own, _index(k * self.threads)) if k else own
                valid = arith.cmpi(arith.CmpIPredicate.ult, g, groups)
                start = arith.muli(arith.select(valid, g, own) if k else g, _index(vec))
                for lane in range(vec):
                    linear = arith.addi(start, _index(lane)) if lane else start
                    lanes.append(self._lane(valid, linear, k, lane, trip))
                trip["first"][k] = lanes[-vec]
            scf.YieldOp(lanes_body(lanes, list(loop.inner_iter_args)))
        return loop

    def _lane(self, valid: ir.Value, linear: ir.Value, group: int = 0, offset: int = 0, trip=None) -> Lane:
        idx = self.row + delinearize(linear, self.inner)
        return Lane(valid, linear, lambda amap: [eval_affine(e, lambda d: idx[d]) for e in amap.results],
                    lambda d: idx[d], group, offset, trip)

    def load(self, value: ir.Value, amap: ir.AffineMap, lane: Lane) -> ir.Value:
        if lane.trip is not None:
            shared = self._load_shared(value, amap, lane)
            if shared is not None:
                return shared
        read = lambda: memref.load(value, lane.at(amap))
        return read() if self.slots is None else self.slots.load(value, amap, self.pos, lane.linear, read)

    def _load_shared(self, value: ir.Value, amap: ir.AffineMap, lane: Lane) -> ir.Value | None:
        """In a trip of vectors: the lane's element of its group's vector (one load a group where
        the access is contiguous along the row), or the one element a row scalar's lanes share;
        None where the lane loads its own element."""
        p = len(self.row)
        if not any(affine_dims(e) & set(range(p, amap.n_dims)) for e in amap.results):
            key = ("scalar", value, amap)
            if key not in lane.trip:
                lane.trip[key] = memref.load(value, lane.at(amap))
            return lane.trip[key]
        if not contiguous_along(value, amap, p):
            return None
        key = ("vector", value, amap, lane.group)
        if key not in lane.trip:
            first = lane.trip["first"][lane.group]
            vtype = ir.VectorType.get([self.vec], ir.MemRefType(value.type).element_type)
            read = lambda: vector.load(vtype, value, first.at(amap), alignment=_vector_bytes(value, self.vec))
            lane.trip[key] = read() if self.slots is None else \
                self.slots.load(value, amap, self.pos, first.linear, read, vtype)
        return vector.extract(lane.trip[key], [], [lane.offset])

    def store(self, v: ir.Value, value: ir.Value, amap: ir.AffineMap, lane: Lane) -> None:
        write = lambda: memref.store(v, value, lane.at(amap))
        if self.slots is None:
            write()
        else:
            self.slots.store(v, value, amap, self.pos, lane.linear, write)

    def store_group(self, values: list, value: ir.Value, amap: ir.AffineMap, lanes: list[Lane]) -> None:
        """Store one group's elements (valid ones): one vector store where the access is
        contiguous along the row, else lane by lane."""
        if not contiguous_along(value, amap, len(self.row)):
            for v, lane in zip(values, lanes):
                self.store(v, value, amap, lane)
            return
        vec = vector.from_elements(ir.VectorType.get([len(values)], values[0].type), values)
        write = lambda: vector.store(vec, value, lanes[0].at(amap), alignment=_vector_bytes(value, len(values)))
        if self.slots is None:
            write()
        else:
            self.slots.store(vec, value, amap, self.pos, lanes[0].linear, write)


def contiguous_along(value: ir.Value, amap: ir.AffineMap, p: int) -> bool:
    """Whether consecutive elements of loop `p` (a row's one inner loop) are consecutive in
    memory through this access: the map's last index is that loop alone and no other index reads
    it, the buffer's innermost stride is 1, and its elements are whole bytes (not i1)."""
    t = ir.MemRefType(value.type)
    results = list(amap.results)
    if not results or not isinstance(results[-1], ir.AffineDimExpr) or results[-1].position != p:
        return False
    if any(p in affine_dims(e) for e in results[:-1]):
        return False
    return t.get_strides_and_offset()[0][-1] == 1 and row_staging.byte_width(t.element_type) is not None


def _vector_bytes(value: ir.Value, vec: int) -> int:
    return vec * row_staging.byte_width(ir.MemRefType(value.type).element_type)


def _reduce_in_row(op, here: InRow) -> None:
    """Each thread folds its elements, gpu.all_reduce combines them, thread 0 folds the total
    into the old value and stores it."""
    generic = op.opview
    maps = _maps(op)
    out = generic.outputs[0]
    comb = _combiner(op)
    elem = ir.MemRefType(out.type).element_type
    body = clone_region_body(generic.regions[0].blocks[0])

    def fold(lanes, acc):
        loaded = [[here.load(v, m, lane) for v, m in zip(generic.inputs, maps)] for lane in lanes]
        acc = acc[0]
        for lane, ins in zip(lanes, loaded):
            acc = arith.select(lane.valid, body(ins, [acc], lane.index_of)[0], acc)
        return [acc]

    loop = here.loop([identity_of(op_name(comb), elem)], fold)
    total = gpu.all_reduce(loop.results[0], op=getattr(gpu.AllReduceOperation, COMBINERS[op_name(comb)]),
                           uniform=True)
    first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, here.tx, _index(0)))
    with ir.InsertionPoint(first.then_block):
        out_at = [eval_affine(e, lambda d: here.row[d]) for e in maps[-1].results]
        before = memref.load(out, out_at)
        attrs = {n: comb.attributes[n] for n in comb.attributes}
        final = ir.Operation.create(op_name(comb), results=[elem], operands=[before, total], attributes=attrs)
        memref.store(final.result, out, out_at)
        scf.YieldOp([])


def _map_in_row(op, here: InRow) -> None:
    """Each thread computes its elements of the row, then stores the valid ones."""
    operands = accesses(op)
    outs = written(op)
    n_in = len(operands) - len(outs)

    def compute(lanes, _):
        values = [MAP_BODIES[op.name](op, [here.load(v, m, lane) for v, m in operands[:n_in]],
                                      lambda k, lane=lane: here.load(outs[k], operands[n_in + k][1], lane),
                                      lane.index_of)
                  for lane in lanes]
        vec = here.vec
        for start in range(0, len(lanes), vec):  # a group of vec lanes is valid as a whole
            group = lanes[start:start + vec]
            store = scf.IfOp(group[0].valid)
            with ir.InsertionPoint(store.then_block):
                for k, (value, amap) in enumerate(operands[n_in:]):
                    if vec > 1:
                        here.store_group([values[start + j][k] for j in range(vec)], value, amap, group)
                    else:
                        here.store(values[start][k], value, amap, group[0])
                scf.YieldOp([])
        return []

    here.loop([], compute)


def _generic_values(op, ins, load_out, index_of):
    block = op.opview.regions[0].blocks[0]
    out_args = list(block.arguments)[len(ins):]
    used = [any(u == a for o in block.operations for u in o.operands) for a in out_args]
    outs = [load_out(k) if u else None for k, u in enumerate(used)]
    return clone_region_body(block)(ins, outs, index_of)


# op name -> (op, loaded inputs, load of output k, loop index of dim) -> the values it stores
MAP_BODIES = {
    "linalg.generic": _generic_values,
    "linalg.fill": lambda op, ins, load_out, index_of: [materialize(op.opview.inputs[0])],
    "memref.copy": lambda op, ins, load_out, index_of: ins,
    "linalg.copy": lambda op, ins, load_out, index_of: ins,
}


def row_group_launch(group, caps: GpuCapabilities, loop_classes: Callable, vectors: bool = False) -> list[gpu.LaunchOp]:
    """One block per row for a row group (row_groups.RowGroup), built before its last op: its ops
    in order, a barrier between two (what one wrote, the next may read from another thread).
    Where ops of the group touch the same elements, a launch keeping them in shared memory
    (row_staging.py) too, the two launched by whether the slots fit for the call's sizes.
    `loop_classes(op)`: the size classes of an op's loops (row_groups.SizeClasses); `vectors`: each
    launch also holds the group in lane groups of vectors (row_vectors), taken where the call allows."""
    last = group.ops[-1]
    with ir.InsertionPoint(last), location_with_body(group.ops):
        sizes = [loop_sizes(op) for op in group.ops]
        rows = product(sizes[0][:group.p])
        plan = row_staging.plan(group.ops, group.p, loop_classes)
        if not plan:
            return [_group_launch(group, caps, sizes, rows, vectors=vectors)]
        counts, offsets, total, static_total = row_staging.slot_bytes(plan, sizes, group.p)
        room = row_staging.capacity(caps)
        if static_total is not None:
            staged = (plan, counts, offsets, total) if static_total <= room else None
            return [_group_launch(group, caps, sizes, rows, staged, vectors)]
        fits, none = arith.cmpi(arith.CmpIPredicate.ule, total, _index(room)), _index(0)
        return [_group_launch(group, caps, sizes, arith.select(fits, rows, none), (plan, counts, offsets, total), vectors),
                _group_launch(group, caps, sizes, arith.select(fits, none, rows), vectors=vectors)]


def _group_launch(group, caps: GpuCapabilities, sizes: list, blocks: ir.Value, staged: tuple | None = None,
                  vectors: bool = False):
    threads, one = _index(caps.block_threads), _index(1)
    shared = arith.index_cast(ir.IntegerType.get_signless(32), staged[3]) if staged else None
    launch = gpu.LaunchOp((blocks, one, one), (threads, one, one), dynamic_shared_memory_size=shared)
    entry = launch.regions[0].blocks[0]
    with ir.InsertionPoint(entry):
        row = delinearize(entry.arguments[0], sizes[0][:group.p])
        slots = row_staging.Slots(*staged[:3]) if staged else None
        build = lambda vec: _group_ops(group, sizes, InRow(row, [], entry.arguments[3], caps.block_threads,
                                                           slots=slots, vec=vec))
        vec = row_vectors(group, sizes, caps) if vectors else 1
        if vec > 1:
            # Both bodies in one kernel: the test is the same in every thread of every block.
            branch = scf.IfOp(_vectors_allowed(group, sizes, vec), has_else=True)
            for block, v in ((branch.then_block, vec), (branch.else_block, 1)):
                with ir.InsertionPoint(block):
                    build(v)
                    scf.YieldOp([])
        else:
            build(1)
        gpu.TerminatorOp()
    mark_kernel(launch, "row_group")
    return launch


def _group_ops(group, sizes: list, base: InRow) -> None:
    """The group's ops in order, a barrier between two; an op with no loop after the rows (a
    row scalar's fill) takes its one element a lane, whatever `base.vec` is."""
    for k, (op, op_sizes) in enumerate(zip(group.ops, sizes)):
        if k:
            gpu.barrier()
        inner = op_sizes[group.p:]
        here = dataclasses.replace(base, inner=inner, pos=k, vec=base.vec if inner else 1)
        if takes(op):
            _reduce_in_row(op, here)
        else:
            _map_in_row(op, here)


# gpu.all_reduce keeps a warp's partial per warp in static shared memory (32 words at most); a
# group built twice (row_vectors) keeps two sets, within row_staging.STATIC_RESERVE.
ALL_REDUCE_BYTES = 32 * 4


def row_vectors(group, sizes: list, caps: GpuCapabilities) -> int:
    """Elements a lane group of this row group's kernel takes at once where the call's buffers
    allow it (_vectors_allowed), 1 where the group is not built so: every op's loops after the
    rows are one loop or none, and some access of an op with one is contiguous along it. Rows of
    symbolic length were read and written one scalar a lane: a softmax over 16384 x 4096 ran at
    0.61 of the copy's bandwidth where the static kernel's 16-byte vectors reach 0.91
    (benchmarks/results/bench_cuda_h200_2026-11-28.md)."""
    p = group.p
    ops = [op for op, op_sizes in zip(group.ops, sizes) if len(op_sizes) > p]
    if not ops or any(len(op_sizes) > p + 1 for op_sizes in sizes):
        return 1
    widths = [row_staging.byte_width(ir.MemRefType(v.type).element_type)
              for op in ops for v, m in accesses(op) if contiguous_along(v, m, p)]
    reductions = sum(1 for op in group.ops if takes(op))
    if not widths or 2 * reductions * ALL_REDUCE_BYTES > row_staging.STATIC_RESERVE:
        return 1
    vec = caps.vector_bytes // max(widths)
    return vec if vec > 1 else 1


def _vectors_allowed(group, sizes: list, vec: int) -> ir.Value:
    """Whether this call's buffers take the vector body (an i1 built in the kernel): every row's
    length a multiple of vec, and every buffer accessed contiguously along the row starting each
    row at an address aligned to its vector (its first element's address, and its other
    strides a multiple of vec)."""
    zero, p = _index(0), group.p
    tests = []
    for op, op_sizes in zip(group.ops, sizes):
        if len(op_sizes) > p:
            tests.append(arith.remui(op_sizes[p], _index(vec)))
    seen = []
    for op in group.ops:
        for value, amap in accesses(op):
            if any(value == v for v in seen) or not contiguous_along(value, amap, p):
                continue
            seen.append(value)
            rank = ir.MemRefType(value.type).rank
            meta = memref.ExtractStridedMetadataOp(value)
            nbytes = _vector_bytes(value, 1)
            start = arith.addi(memref.extract_aligned_pointer_as_index(value),
                               arith.muli(meta.offset, _index(nbytes)))
            tests.append(arith.remui(start, _index(vec * nbytes)))
            tests += [arith.remui(stride, _index(vec)) for stride in list(meta.strides)[:rank - 1]]
    misaligned = tests[0]
    for t in tests[1:]:
        misaligned = arith.ori(misaligned, t)
    return arith.cmpi(arith.CmpIPredicate.eq, misaligned, zero)


# Elements a block of `chunk_launch` takes: four trips of its threads' loop.
CHUNK_TRIPS = 4


def chunk_launch(op, caps: GpuCapabilities) -> gpu.LaunchOp:
    """A rank-1 elementwise op of symbolic size (row_groups.build_row_groups picks them) as blocks of
    CHUNK_TRIPS * CHUNK_UNROLL * threads consecutive elements each, built before it. The tiled
    strategy's blocks are one element a thread: the dynamic elementwise chain of
    benchmarks/bench_cuda.py ran at 0.53-0.62 of the copy that way."""
    with ir.InsertionPoint(op), location_with_body([op]):
        sizes = loop_sizes(op)
        chunk = _index(CHUNK_TRIPS * CHUNK_UNROLL * caps.block_threads)
        threads, one = _index(caps.block_threads), _index(1)
        launch = gpu.LaunchOp((arith.ceildivui(sizes[0], chunk), one, one), (threads, one, one))
        entry = launch.regions[0].blocks[0]
        with ir.InsertionPoint(entry):
            first = arith.muli(entry.arguments[0], chunk)
            end = arith.minui(arith.addi(first, chunk), sizes[0])
            _map_in_row(op, InRow([], sizes, entry.arguments[3], caps.block_threads, (first, end), CHUNK_UNROLL))
            gpu.TerminatorOp()
        mark_kernel(launch, "chunks")
    return launch
