"""Row fusion: a run of bufferized linalg ops that all work on the same rows (row reductions and
the elementwise ops before, between and after them) becomes ONE `gpu.launch`, one block per row.

Softmax arrives here as fill, max-reduce, exp, fill, sum-reduce, div: five kernels that read a
row from device memory three times and write it twice. Fused, each thread owns fixed elements
of its row (the same ones in every step), keeps every intermediate of the row in registers, and
the block combines its partials with `gpu.all_reduce` between steps. A row is read once and
written once, the minimum. Layernorm, log-softmax and RMS-norm have the same shape.

The analysis works on *keys*: an access is reduced to (root buffer, constant offset, element
stride per loop dim), so two views that address the same elements the same way (a reduction's
`memref<R>` output and its `memref<Rx1>` reshape) share one cached value. A buffer written in
the group must be addressed through one key only and must give every row its own elements;
then no thread ever needs a value another thread wrote, except through `gpu.all_reduce`.
Results reach memory once, at the end, and only for buffers used outside the group.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir

from .kernels import COMBINERS, _aligned, prod, short_rows, vector_width
from .loopnest import LOOP_NESTS, PARALLEL, REDUCTION, VIEW_OPS, Access, LoopNest, Unsupported, op_name, root_of

MAX_PER_THREAD = 32    # cached elements per buffer per thread (registers): rows up to 32 x 1024
CHUNKS_PER_THREAD = 4  # vector chunks per thread we aim for when picking the block size
MAX_THREADS = 1024
MAX_VEC = 8            # lanes per chunk when no access of an op touches memory (bf16: 16 bytes)
# Host ops that neither read nor write buffers: a fused group may span them.
NEUTRAL = ("arith.constant", "memref.alloc", "memref.alloca", "memref.get_global") + VIEW_OPS
REDUCIBLE_TYPES = ("f32", "i32")  # what gpu.all_reduce combines here
GATHERED = ("gathered",)  # the read key of a buffer a body loads from at computed positions


@dataclass
class RowGroup:
    indices: list[int]     # positions of the fused ops in the host block, in order
    nests: list[LoopNest]
    kinds: list[str]       # per op: "full" (whole row), "reduce" (row -> scalar), "scalar" (per row)
    rows: list[int]        # sizes of the row loops (one block per row)
    inner: list[int]       # sizes of the loops inside a row


# ----------------------------------------------------------------------------- keys


def key_of(a: Access) -> tuple | None:
    """(root, offset, ((loop dim, stride), ...)); None for compound index expressions."""
    coef: dict[int, int] = {}
    offset = a.offset
    for e, stride, size in zip(a.exprs, a.strides, a.shape):
        if size == 1 or stride == 0:
            continue  # the index is 0 there, or does not move the address
        if isinstance(e, ir.AffineDimExpr):
            coef[e.position] = coef.get(e.position, 0) + stride
        elif isinstance(e, ir.AffineConstantExpr):
            offset += e.value * stride
        else:
            return None
    return (root_of(a.value), offset, tuple(sorted((d, s) for d, s in coef.items() if s)))


def is_row_scalar(key: tuple, p: int) -> bool:
    return all(d < p for d, _ in key[2])


def _covers(key: tuple, sizes: list[int], upto: int) -> bool:
    """Every loop dim < upto with more than one iteration moves the address: each row (and each
    element of it) gets its own memory, so threads of different rows never write the same word."""
    dims = {d for d, _ in key[2]}
    return all(d in dims for d in range(upto) if sizes[d] > 1)


# ----------------------------------------------------------------------------- analysis


def _reducible(nest: LoopNest) -> int | None:
    """The number of row loops if `nest` reduces trailing loops into one f32/i32 output."""
    its = nest.iterators
    if REDUCTION not in its or len(nest.outputs) != 1 or nest.combiners[0] is None:
        return None
    p = its.index(REDUCTION)
    if any(it != REDUCTION for it in its[p:]) or op_name(nest.combiners[0]) not in COMBINERS:
        return None
    if str(nest.outputs[0].elem) not in REDUCIBLE_TYPES or prod(nest.sizes[p:]) <= 1:
        return None
    return p


def classify(nest: LoopNest, rows: list[int], inner: list[int]) -> str | None:
    p, its = len(rows), nest.iterators
    if nest.sizes == rows + inner:
        if all(it == PARALLEL for it in its):
            return "full"
        return "reduce" if _reducible(nest) == p else None
    if nest.sizes[:p] == rows and all(s == 1 for s in nest.sizes[p:]) and all(it == PARALLEL for it in its):
        return "scalar"
    return None


class _Check:
    """Walks candidate ops in order, keeping what the fused kernel would cache."""

    def __init__(self, rows, inner):
        self.rows, self.inner, self.p = rows, inner, len(rows)
        self.written: dict = {}   # root -> the one key it is written through
        self.read: dict = {}      # root -> keys it is read through

    def admit(self, nest: LoopNest, kind: str) -> bool:
        reads = list(nest.inputs) + [a for a, used in zip(nest.outputs, nest.out_used) if used or kind == "reduce"]
        rkeys, wkeys = [key_of(a) for a in reads], [key_of(a) for a in nest.outputs]
        if None in rkeys or None in wkeys:
            return False
        if any(self.written.get(k[0], k) != k for k in rkeys):
            return False  # reads elements of a written buffer some other way: another thread's
        if any(root in self.written for root in nest.gathers):
            return False  # gathers from a buffer the group writes: other rows' elements, not yet stored
        for k in wkeys:
            if self.written.get(k[0], k) != k or any(r != k for r in self.read.get(k[0], ())):
                return False
            scalar = is_row_scalar(k, self.p)
            if (kind == "full") == scalar or not _covers(k, nest.sizes, self.p if scalar else nest.rank):
                return False
        for k in rkeys:
            self.read.setdefault(k[0], set()).add(k)
        for root in nest.gathers:  # any later write to it would race with the gather
            self.read.setdefault(root, set()).add(GATHERED)
        for k in wkeys:
            self.written[k[0]] = k
        return True


def _runs(ops, nests) -> list[list[int]]:
    """Maximal runs of kernel ops with only neutral host ops between them."""
    runs, current = [], []
    for i, op in enumerate(ops):
        if i in nests:
            current.append(i)
        elif op_name(op) not in NEUTRAL:
            runs.append(current)
            current = []
    return [r for r in runs + [current] if r]


def _admit_from(run, start, nests, rows, inner) -> list[tuple[int, str]]:
    check, members = _Check(rows, inner), []
    for i in run[start:]:
        kind = classify(nests[i], rows, inner)
        if kind is None or not check.admit(nests[i], kind):
            break
        members.append((i, kind))
    return members


def _group_at(run, seed, lo, nests) -> list[tuple[int, str]] | None:
    """The largest group around the reduction run[seed], starting no earlier than run[lo]."""
    p = _reducible(nests[run[seed]])
    rows, inner = nests[run[seed]].sizes[:p], nests[run[seed]].sizes[p:]
    start = seed
    while start > lo and classify(nests[run[start - 1]], rows, inner):
        start -= 1
    for s in range(start, seed + 1):
        members = _admit_from(run, s, nests, rows, inner)
        if len(members) > seed - s:
            # Trailing fills stay out: the next op (often a matmul) may absorb them.
            while members and nests[members[-1][0]].name == "fill":
                members.pop()
            return members
    return None


def _shape(members, nests) -> tuple[int, int, int]:
    """(vector width, threads per block, chunks per thread) for a group, or threads 0 if the
    row does not fit in registers."""
    first = next(nests[i] for i, k in members if k == "reduce")
    p = _reducible(first)
    n = prod(first.sizes[p:])
    vec = min(_vec(nests[i]) for i, k in members if k != "scalar")
    chunks = -(-n // vec)
    threads = min(MAX_THREADS, max(32, 1 << max(0, -(-chunks // CHUNKS_PER_THREAD) - 1).bit_length()))
    per_thread = -(-chunks // threads)
    return vec, (threads if per_thread * vec <= MAX_PER_THREAD else 0), per_thread


def _vec(nest: LoopNest) -> int:
    """Vector width from the accesses that touch memory: a bf16 row with f32 intermediates in
    allocations (kept in registers) still moves 16 bytes a load. Allocations only need alignment."""
    dim = nest.rank - 1
    accesses = nest.inputs + nest.outputs
    local = [a for a in accesses if op_name(root_of(a.value)) == "memref.alloc"]
    memory = [a for a in accesses if a not in local]
    vec = vector_width(nest, dim, memory) if memory else MAX_VEC
    while vec > 1 and (nest.sizes[dim] % vec or not all(_aligned(a, dim, vec) for a in local)):
        vec //= 2
    return vec


def find_groups(ops: list) -> list[RowGroup]:
    nests = {}
    for i, op in enumerate(ops):
        if op_name(op) in LOOP_NESTS:
            try:
                nests[i] = LOOP_NESTS[op_name(op)](op.opview)
            except Unsupported:
                pass  # stays a host op here: a boundary for fusion
    groups = []
    for run in _runs(ops, nests):
        lo = 0
        for seed in range(len(run)):
            if seed < lo or _reducible(nests[run[seed]]) is None:
                continue
            members = _group_at(run, seed, lo, nests)
            if not members or len(members) < 2 or _shape(members, nests)[1] == 0:
                continue
            first = nests[next(i for i, k in members if k == "reduce")]
            p = _reducible(first)
            if short_rows(first.sizes[:p], first.sizes[p:]):
                continue  # one thread per row does better (kernels.schedule_for)
            groups.append(RowGroup([i for i, _ in members], [nests[i] for i, _ in members],
                                   [k for _, k in members], first.sizes[:p], first.sizes[p:]))
            lo = run.index(members[-1][0]) + 1
    return groups


def live_roots(group: RowGroup, ops: list) -> set:
    """Roots written by the group that something after it may read (arguments, escaping allocs)."""
    members = [ops[i] for i in group.indices]
    written = {root_of(a.value) for n in group.nests for a in n.outputs}
    return {r for r in written if _escapes(r, members)}


def _escapes(root: ir.Value, members: list) -> bool:
    if op_name(root) not in ("memref.alloc", "memref.alloca"):
        return True
    stack = [root]
    while stack:
        value = stack.pop()
        for use in value.uses:
            owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if owner.name in VIEW_OPS:
                stack.extend(owner.results)
            elif owner.name != "memref.dealloc" and not any(owner == m for m in members):
                return True
    return False
