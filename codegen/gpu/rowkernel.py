"""One `gpu.launch` for a RowGroup (rowfuse.py): one block per row, the row's elements in registers.

Thread t of a block owns, in every step of the group, the elements j = (k * threads + t) * vec
+ lane of its row (k < chunks, lane < vec): the same addresses for every buffer addressed
through the same key, so a value one step writes is the value the next step reads, without
memory. Loads are 16-byte vectors where the layout allows; a row whose length is not a multiple
of threads * vec has its last chunk guarded (loads yield 0, reductions skip, stores are masked).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, gpu, memref, scf

from ...lowering.scalar import const, identity_of
from .kernels import COMBINERS, _lane_index, delinearize, guarded, index, launch, linear_index, load_lanes, prod, store_lanes
from .loopnest import Access, LoopNest, op_name
from .rowfuse import RowGroup, _shape, is_row_scalar, key_of


class _Row:
    """The state of one block while the group's ops are emitted in order."""

    def __init__(self, group: RowGroup, vec: int, threads: int, chunks: int, bx, tx):
        self.p, self.vec, self.chunks, self.tx = len(group.rows), vec, chunks, tx
        self.dim = len(group.rows) + len(group.inner) - 1  # the vectorized (innermost) loop
        self.row_idx = delinearize(bx, group.rows)
        n = prod(group.inner)
        self.idx, self.valid = [], []
        for k in range(chunks):
            j = arith.addi(arith.muli(tx, index(vec)), index(k * threads * vec)) if k else arith.muli(tx, index(vec))
            self.idx.append(self.row_idx + delinearize(j, group.inner))
            full = (k + 1) * threads * vec <= n
            self.valid.append(None if full else arith.cmpi(arith.CmpIPredicate.ult, j, index(n)))
        self.cache: dict = {}   # key -> a Value (per-row scalar) or [chunk][lane] Values
        self.dirty: dict = {}   # root -> (Access, key) last written
        self.unsynced: set = set()  # roots of per-row scalars every thread loaded since the last barrier

    def row_index(self, d: int) -> ir.Value:
        return self.row_idx[d] if d < self.p else index(0)

    def read(self, a: Access):
        key = key_of(a)
        if key not in self.cache:
            if is_row_scalar(key, self.p):
                self.cache[key] = memref.load(a.flat, [linear_index(a, self.row_index)])
                self.unsynced.add(key[0])
            else:
                self.cache[key] = [self._load(a, k) for k in range(self.chunks)]
        return self.cache[key]

    def _load(self, a: Access, k: int) -> list[ir.Value]:
        if self.valid[k] is None:
            return load_lanes(a, self.idx[k], self.dim, self.vec)
        branch = scf.IfOp(self.valid[k], [a.elem] * self.vec, has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp(load_lanes(a, self.idx[k], self.dim, self.vec))
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([const(a.elem, 0)] * self.vec)
        return list(branch.results)

    def write(self, a: Access, value) -> None:
        key = key_of(a)
        self.cache[key] = value
        self.dirty[key[0]] = (a, key)

    def lane_index(self, k: int, lane: int):
        return lambda d: _lane_index(self.idx[k], self.dim, d, lane)

    def write_back(self, live: set) -> None:
        """Results that outlive the group reach memory once: scalars from thread 0, rows from all.
        Every thread reads a per-row scalar, thread 0 alone stores it: if the load came after the
        last barrier (gpu.all_reduce), a lagging warp could read thread 0's store instead, so a
        barrier goes first."""
        if any(root in live and root in self.unsynced and isinstance(self.cache[key], ir.Value)
               for root, (a, key) in self.dirty.items()):
            gpu.barrier()
        for root, (a, key) in self.dirty.items():
            if root not in live:
                continue
            value = self.cache[key]
            if isinstance(value, ir.Value):
                is_first = lambda: arith.cmpi(arith.CmpIPredicate.eq, self.tx, index(0))
                guarded(True, is_first, lambda: memref.store(value, a.flat, [linear_index(a, self.row_index)]))
                continue
            for k in range(self.chunks):
                guarded(self.valid[k] is not None, lambda k=k: self.valid[k],
                        lambda k=k: store_lanes(a, value[k], self.idx[k], self.dim))


def _at(value, k: int, lane: int):
    """Element (k, lane) of a cached row, or the row's scalar (broadcast along the row)."""
    return value if value is None or isinstance(value, ir.Value) else value[k][lane]


def _full(row: _Row, nest: LoopNest) -> None:
    ins = [row.read(a) for a in nest.inputs]
    olds = [row.read(a) if used else None for a, used in zip(nest.outputs, nest.out_used)]
    results = [[[None] * row.vec for _ in range(row.chunks)] for _ in nest.outputs]
    for k in range(row.chunks):
        for lane in range(row.vec):
            ys = nest.body([_at(v, k, lane) for v in ins], [_at(v, k, lane) for v in olds], row.lane_index(k, lane))
            for r, y in zip(results, ys):
                r[k][lane] = y
    for a, r in zip(nest.outputs, results):
        row.write(a, r)


def _scalar(row: _Row, nest: LoopNest) -> None:
    ins = [row.read(a) for a in nest.inputs]
    olds = [row.read(a) if used else None for a, used in zip(nest.outputs, nest.out_used)]
    for a, y in zip(nest.outputs, nest.body(ins, olds, row.row_index)):
        row.write(a, y)


def _reduce(row: _Row, nest: LoopNest) -> None:
    """Each thread folds its elements, the block combines the partials (shuffles + shared
    memory), and the total is folded into the output's old value (often a fill, cached)."""
    comb, out = nest.combiners[0], nest.outputs[0]
    kind = COMBINERS[op_name(comb)]
    ins = [row.read(a) for a in nest.inputs]
    acc = identity_of(op_name(comb), out.elem)
    for k in range(row.chunks):
        for lane in range(row.vec):
            new = nest.body([_at(v, k, lane) for v in ins], [acc], row.lane_index(k, lane))[0]
            acc = new if row.valid[k] is None else arith.select(row.valid[k], new, acc)
    total = gpu.all_reduce(acc, op=getattr(gpu.AllReduceOperation, kind), uniform=True)
    row.unsynced.clear()  # all_reduce ends with a barrier: loads before it are done in every thread
    old = row.read(out)
    attrs = {n: comb.attributes[n] for n in comb.attributes}
    row.write(out, ir.Operation.create(op_name(comb), results=[out.elem], operands=[old, total], attributes=attrs).result)


EMIT = {"full": _full, "scalar": _scalar, "reduce": _reduce}


def row_kernel(group: RowGroup, live: set) -> gpu.LaunchOp:
    """The fused launch, built at the current insertion point (accesses' `flat` views set)."""
    vec, threads, chunks = _shape(list(enumerate(group.kinds)), dict(enumerate(group.nests)))

    def build(bx, tx):
        row = _Row(group, vec, threads, chunks, bx, tx)
        for nest, kind in zip(group.nests, group.kinds):
            EMIT[kind](row, nest)
        row.write_back(live)

    return launch(prod(group.rows), threads, build, "row_fused")
