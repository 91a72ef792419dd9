"""Runs of ops of symbolic sizes on the same rows, fused into one block-per-row kernel.

A layer norm with symbolic rows was a residual add, a zero fill, two copies of it, the mean, the
variance and the normalization: seven launches, each reading or writing the whole rows. The
static builders fuse such a run (codegen/gpu/rowfuse.py), but only with sizes known as ints.
Here a run of ops with symbolic sizes becomes one launch of one block per row
(row_reduce.row_group_launch): each op of the run in turn strides the block's threads over its
part of the row, with a barrier between ops, so a value one op writes is read by the next from
L1/L2 within the same block.

What makes that sound is that every op of a group touches, for row r, only row r of every buffer
the group writes:
- **rows**: the ops' leading loops (the reductions' parallel loops) have sizes that are equal at
  run time. SizeClasses says which dims are: the dims one loop of an op indexes are equal (linalg
  requires it), an allocation's dim is the size it was given, memref.dim is the dim it reads;
- **row-local accesses**: every access to a buffer the group writes indexes the row dims by the
  row loops exactly (d0..dp-1, in order) and its other dims by the other loops only, through a
  contiguous view whose elements after the row dims are as many as every other view of that
  buffer in the group has. Row r of every such view is then the same span of the buffer;
- **order**: the run is contiguous in the host function except for ops that only compute sizes or
  make views (PASSIVE), so running it later, at its last op, reads and writes what it did.
An op that would break one of these ends the group. Elementwise ops in no group run a block
per row where their rows are long and static (`over_long_rows`), in chunks of consecutive
elements where they are rank-1 (row_reduce.chunk_launch), else through the tiled strategy.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from torch_mlir import ir

from .loopnest import VIEW_OPS, affine_dims, gathered_roots, op_name, root_of
from .tiled import has_symbolic_sizes, iterators
from . import row_reduce
from .row_reduce import accesses, written

# Host ops a group may be moved past: they compute sizes or make views, and touch no element of
# a buffer a kernel reads (a memref.store writes a reshape's shape buffer), and scalar math. A
# host memref.load of a 0-d buffer is one too: no group op writes a 0-d buffer (row_local), and
# kernels re-read the scalar themselves (loopnest.materialize).
PASSIVE = (*VIEW_OPS, "memref.alloc", "memref.dim", "memref.store", "affine.apply")
SCALAR_DIALECTS = ("arith.", "index.", "math.")
COPIES = ("memref.copy", "linalg.copy")


def _passive(op) -> bool:
    if op.name == "memref.load":
        return ir.MemRefType(op.operands[0].type).rank == 0
    return op.name in PASSIVE or op.name.startswith(SCALAR_DIALECTS)


class SizeClasses:
    """Which dims of a host function's buffers are equal at run time, by what its IR says."""

    def __init__(self, func_op):
        self._parent: dict = {}
        for op in func_op.regions[0].blocks[0].operations:
            op = op.operation
            name = op.name
            if name in ("linalg.generic", "linalg.fill", *COPIES):
                for dims in _dims_per_loop(op).values():
                    for d in dims[1:]:
                        self._union(dims[0], d)
            elif name == "memref.alloc":
                t = ir.MemRefType(op.result.type)
                dynamic = [k for k, s in enumerate(t.shape) if s == ir.ShapedType.get_dynamic_size()]
                for k, size in zip(dynamic, op.operands):
                    self._union((op.result, k), ("size", size))
            elif name == "memref.dim" and op_name(op.operands[1]) == "arith.constant":
                k = ir.IntegerAttr(op.operands[1].owner.attributes["value"]).value
                self._union((op.operands[0], k), ("size", op.result))

    def _find(self, key):
        self._parent.setdefault(key, key)
        while self._parent[key] != key:
            self._parent[key] = self._parent[self._parent[key]]
            key = self._parent[key]
        return key

    def _union(self, a, b) -> None:
        ra, rb = self._find(_static_key(a) or a), self._find(_static_key(b) or b)
        if ra == rb or (_is_static(ra) and _is_static(rb)):  # two different sizes: IR no verifier passes
            return
        if _is_static(ra):  # a static size is the representative: the class compares as that size
            ra, rb = rb, ra
        self._parent[ra] = rb

    def of(self, value: ir.Value, k: int):
        return self._find(_static_key((value, k)) or (value, k))


def _is_static(key) -> bool:
    return isinstance(key[0], str) and key[0] == "static"


def _static_key(key):
    if key[0] == "size" or not isinstance(key[0], ir.Value):
        return None
    size = ir.MemRefType(key[0].type).shape[key[1]]
    return None if size == ir.ShapedType.get_dynamic_size() else ("static", size)


def _dims_per_loop(op) -> dict[int, list]:
    found: dict[int, list] = {}
    for value, amap in accesses(op):
        for k, e in enumerate(amap.results):
            if isinstance(e, ir.AffineDimExpr):
                found.setdefault(e.position, []).append((value, k))
    return found


def loop_classes(op, classes: SizeClasses) -> list:
    dims = _dims_per_loop(op)
    return [classes.of(*dims[d][0]) if d in dims else None for d in range(len(iterators(op)))]


def kind_of(op) -> str | None:
    """"reduce" (a row reduction row_reduce builds), "map" (every loop parallel: a generic, a
    fill or a copy), or None (not a group member)."""
    if op.name not in ("linalg.generic", "linalg.fill", *COPIES) or not has_symbolic_sizes(op):
        return None
    if row_reduce.takes(op):
        return "reduce"
    if all(it == "parallel" for it in iterators(op)) and all(m.is_permutation for _, m in accesses(op)[-len(written(op)):]):
        return "map"
    return None


def _row_span(value: ir.Value, p: int, classes: SizeClasses):
    """What one row of `value` spans in its root buffer, if `value` is the root or a reshape of
    it with both laid out contiguously: (static element count, classes of its symbolic dims) of
    the dims after the first p; else None."""
    t = ir.MemRefType(value.type)
    if not (_contiguous(t) and _contiguous(ir.MemRefType(root_of(value).type))):
        return None
    v = value
    while v != root_of(value):
        # (a reinterpret_cast of identity layout: a row-major reshape, as bufferization writes a
        # result reshaped for a matmul into its out-param)
        if op_name(v) not in ("memref.reshape", "memref.expand_shape", "memref.collapse_shape",
                              "memref.reinterpret_cast"):
            return None
        v = v.owner.operands[0]
    count, symbolic = 1, []
    for k in range(p, t.rank):
        if t.shape[k] == ir.ShapedType.get_dynamic_size():
            symbolic.append(classes.of(value, k))
        else:
            count *= t.shape[k]
    return (count, frozenset(Counter(symbolic).items())) if count else None


def _contiguous(t: ir.MemRefType) -> bool:
    return isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)


def row_local(ops: list, p: int, classes: SizeClasses) -> bool:
    """Whether every access of `ops` to a buffer they write is row-local (module docstring)."""
    if len(ops) == 1:
        return True  # one reduction: each block writes its own element (row_reduce.takes)
    writes = {root_of(v) for op in ops for v in written(op)}
    spans: dict = {}
    for op in ops:
        if op.name == "linalg.generic" and writes & set(gathered_roots(op.opview.regions[0].blocks[0])):
            return False
        outs = written(op)
        for value, amap in accesses(op):
            root = root_of(value)
            if root not in writes:
                continue
            if not _indexes_rows(amap, p):
                return False
            span = _row_span(value, p, classes)
            if span is None or spans.setdefault(root, span) != span:
                return False
            # an op reading what it writes: only the same element, or threads would race
            if value not in outs and any(root_of(o) == root and (o != value or _map_of(op, o) != amap) for o in outs):
                return False
    return True


def _indexes_rows(amap: ir.AffineMap, p: int) -> bool:
    results = list(amap.results)
    if len(results) < p or any(not isinstance(e, ir.AffineDimExpr) or e.position != d
                               for d, e in enumerate(results[:p])):
        return False
    return not any(affine_dims(e) & set(range(p)) for e in results[p:])


def _map_of(op, value: ir.Value) -> ir.AffineMap | None:
    return next((m for v, m in accesses(op) if v == value), None)


@dataclass
class RowGroup:
    p: int                        # row loops: the leading p loops of every op
    rows: list                    # their size classes
    ops: list = field(default_factory=list)

    def fits(self, op, classes: SizeClasses) -> bool:
        return _on_rows(op, self.p, self.rows, classes) and row_local(self.ops + [op], self.p, classes)


def find_row_groups(func_op, classes: SizeClasses) -> list[RowGroup]:
    """The host function's groups, each led by or holding a reduction (module docstring), then
    each op left over long static rows as a group of its own (`over_long_rows`)."""
    groups: list[RowGroup] = []
    pending: list = []          # map ops since the last group ended: they may lead the next one
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations]:
        kind = kind_of(op)
        if kind is None and _passive(op):
            continue
        if kind is not None and pending is None and groups[-1].fits(op, classes):
            groups[-1].ops.append(op)
        elif kind == "reduce":
            groups.append(_start(op, pending or [], classes))
            pending = None      # a group is open
        else:
            pending = (pending or []) + [op] if kind == "map" else []
    grouped = {op for g in groups for op in g.ops}
    ops = [o.operation for o in func_op.regions[0].blocks[0].operations]
    return groups + [RowGroup(len(iterators(op)) - 1, loop_classes(op, classes)[:-1], [op])
                     for op in ops if op not in grouped and over_long_rows(op)]


# An elementwise op whose innermost loop has a static size of at least this many elements runs
# a block per row of it too: the tiled strategy's blocks are one element a thread, 256 elements
# (GPT-2's bias + GELU over [8, L, 3072] was 30,720 blocks for 1.36 ms, inductor's kernel 0.45).
LONG_ROW = 512


def over_long_rows(op) -> bool:
    if kind_of(op) != "map" or len(iterators(op)) < 2:
        return False
    size = ir.MemRefType(accesses(op)[-1][0].type).shape[-1]
    innermost = accesses(op)[-1][1].results[-1]  # the output's last dim: the loop it is indexed by
    last_loop = len(iterators(op)) - 1
    return (isinstance(innermost, ir.AffineDimExpr) and innermost.position == last_loop
            and size != ir.ShapedType.get_dynamic_size() and size >= LONG_ROW)


def _on_rows(op, p: int, rows: list, classes: SizeClasses) -> bool:
    """Whether `op`'s leading p loops are the rows (and, for a reduction, its only parallel ones)."""
    its = iterators(op)
    if len(its) < p or loop_classes(op, classes)[:p] != rows:
        return False
    return kind_of(op) != "reduce" or its.index("reduction") == p


def _start(op, pending: list, classes: SizeClasses) -> RowGroup:
    """A group of the reduction `op` led by the longest run of `pending` ops that fits it (a fill
    or copy of its output among them: no launch of its own)."""
    p = iterators(op).index("reduction")
    rows = loop_classes(op, classes)[:p]
    for k in range(len(pending)):
        lead = pending[k:]
        if all(_on_rows(m, p, rows, classes) for m in lead) and row_local(lead + [op], p, classes):
            return RowGroup(p, rows, lead + [op])
    return RowGroup(p, rows, [op])


def build_row_groups(func_op, caps, vectors: bool = False) -> int:
    """Each group of `func_op` -> one launch at its last op, its ops erased (`vectors`: with a body
    in lane groups of vectors too, row_reduce.row_vectors); then each rank-1 elementwise op left
    -> blocks of consecutive elements (row_reduce.chunk_launch). Returns how many launches were
    built."""
    classes = SizeClasses(func_op)
    groups = find_row_groups(func_op, classes)
    launches = 0
    for group in groups:
        launches += len(row_reduce.row_group_launch(group, caps, lambda op: loop_classes(op, classes), vectors))
        for op in group.ops:
            op.erase()
    flat = [o.operation for o in func_op.regions[0].blocks[0].operations
            if kind_of(o.operation) == "map" and len(iterators(o.operation)) == 1]
    for op in flat:
        row_reduce.chunk_launch(op, caps)
        op.erase()
    return launches + len(flat)
