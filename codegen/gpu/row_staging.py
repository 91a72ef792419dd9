"""Row elements a block keeps in shared memory between the ops of its row group.

A softmax over rows of symbolic length is four ops on the same row: the max of x, exp(x - max)
into the output, the output's sum, the output divided by it. One block per row
(row_reduce.row_group_launch) read each row four times and wrote it twice, at 0.57 of the copy's
bandwidth. Here the elements several ops of a group touch stay in the block's dynamic shared
memory: the first op loads them from global memory (or computes them) and keeps them in a slot,
later ops read the slot, and a write that a later op of the group overwrites is never stored to
global memory. A softmax then reads its row once and writes it once.

Why a slot needs no barrier: in every op of a group, thread tx takes the elements at positions
tx + k * threads of the op's row (row_reduce.InRow.loop). Two ops whose loops after the rows have
sizes equal at run time (row_groups.SizeClasses) and that access one view through one indexing
map touch the same element at the same position, so by the same thread: a slot position is only
ever read and written by one thread.

Whether the slots fit is known per call (a row's length may be symbolic): the host computes their
bytes, and the group is built twice, one launch staged and one not, whose grids are the rows or 0
by that test; the host launches the one with blocks (launch_steps.LaunchStep skips a grid of 0).
Where the sizes are static the test is decided here and only one launch is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torch_mlir import ir
from torch_mlir.dialects import arith, gpu, memref, vector

from .loopnest import affine_dims, op_name, root_of
from .tiled import iterators

# Shared memory a block keeps for gpu.all_reduce's partials and the like (static allocations
# next to the dynamic slots): the slots get the rest of the target's per-block shared memory.
STATIC_RESERVE = 2048
SLOT_ALIGN = 16  # bytes: each slot starts where a 16-byte vector access could


def _index(n: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), n)


@dataclass
class Staged:
    """One (view, indexing map) several ops of a group access, and where they do (group positions)."""

    value: ir.Value
    amap: ir.AffineMap
    inner: tuple          # the size classes of the accessing ops' loops after the rows
    elem: ir.Type
    reads: set = field(default_factory=set)
    writes: set = field(default_factory=set)
    slot: int = -1

    @property
    def first(self) -> int:
        return min(self.reads | self.writes)

    @property
    def last(self) -> int:
        return max(self.reads | self.writes)


def _touches(op) -> list[tuple[ir.Value, ir.AffineMap, bool, bool]]:
    """(view, map, reads, writes) of each memref operand of a group op."""
    from .row_reduce import accesses, written  # row_reduce builds with this module
    outs = written(op)
    found = []
    for k, (value, amap) in enumerate(accesses(op)):
        is_out = k >= len(accesses(op)) - len(outs)
        reads = not is_out or _reads_output(op, k - (len(accesses(op)) - len(outs)))
        found.append((value, amap, reads, is_out))
    return found


def _reads_output(op, k: int) -> bool:
    if op.name != "linalg.generic":
        return False
    block = op.opview.regions[0].blocks[0]
    arg = list(block.arguments)[len(op.opview.inputs) + k]
    return any(u == arg for o in block.operations for u in o.operands)


def byte_width(t: ir.Type) -> int | None:
    """Bytes an element takes, for the types a slot holds (None: i1, index, ...)."""
    if not isinstance(t, (ir.FloatType, ir.IntegerType)):
        return None
    width = t.width
    return width // 8 if width % 8 == 0 else None


@dataclass
class StagingPlan:
    """The keys a group stages and the slots they share (a slot: one key's elements of the row
    at a time; a key whose first access comes after another's last may take its slot)."""

    keys: dict                       # (view, map) -> Staged
    slots: list                      # slot -> (first key's group position, element type)

    def __bool__(self) -> bool:
        return bool(self.keys)


def plan(ops: list, p: int, loop_classes) -> StagingPlan:
    """What the group `ops` (row loops: the leading p) keeps in shared memory. `loop_classes(op)`:
    the size classes of an op's loops."""
    found: dict = {}
    roots_written = {root_of(v) for op in ops for v, _, _, w in _touches(op) if w}
    by_root: dict = {}
    for pos, op in enumerate(ops):
        inner = tuple(loop_classes(op)[p:])
        for value, amap, reads, writes in _touches(op):
            by_root.setdefault(root_of(value), set()).add((value, amap))
            if not any(affine_dims(e) & set(range(p, amap.n_dims)) for e in amap.results):
                continue  # a row scalar (a reduction's result): one element, not a row
            s = found.setdefault((value, amap), Staged(value, amap, inner, ir.MemRefType(value.type).element_type))
            if s.inner != inner or None in inner:
                s.inner = None  # two ops over rows not known to be as long: positions differ
            if reads:
                s.reads.add(pos)
            if writes:
                s.writes.add(pos)
    keys = {k: s for k, s in found.items()
            if s.inner is not None and len(s.reads | s.writes) > 1 and byte_width(s.elem)
            and (root_of(s.value) not in roots_written or by_root[root_of(s.value)] == {k})}
    return StagingPlan(keys, _assign_slots(list(keys.values()), ops))


def _assign_slots(staged: list[Staged], ops: list) -> list:
    """Slots in order of first access; a key reuses a slot of equal row and element type whose
    key is done with (last access before this one's first, or at it where that op is elementwise,
    only reads the old key and only writes the new: its lanes load before they store)."""
    slots: list = []       # slot -> (inner, elem, the key holding it now)
    for s in sorted(staged, key=lambda s: s.first):
        for k, (inner, elem, holder) in enumerate(slots):
            if inner == s.inner and elem == s.elem and _done_before(holder, s, ops):
                s.slot, slots[k] = k, (inner, elem, s)
                break
        else:
            s.slot = len(slots)
            slots.append((s.inner, s.elem, s))
    return [(min(x.first for x in staged if x.slot == k), elem) for k, (_, elem, _) in enumerate(slots)]


def _done_before(old: Staged, new: Staged, ops: list) -> bool:
    if old.last < new.first:
        return True
    at = new.first
    return old.last == at and all(it == "parallel" for it in iterators(ops[at])) \
        and at not in old.writes and at not in new.reads


def slot_bytes(plan_: StagingPlan, sizes: list[list[ir.Value]], p: int) -> tuple[list, list, ir.Value, int | None]:
    """Host values, built at the current insertion point: each slot's element count and byte
    offset, the bytes of all of them, and that total as an int where every size is static.
    `sizes`: each group op's loop sizes."""
    from .row_reduce import product
    counts, offsets, total, static = [], [], _index(0), 0
    for first, elem in plan_.slots:
        inner = sizes[first][p:]
        n = product(inner)
        counts.append(n)
        offsets.append(total)
        nbytes = arith.muli(n, _index(byte_width(elem)))
        total = arith.addi(total, arith.muli(arith.ceildivui(nbytes, _index(SLOT_ALIGN)), _index(SLOT_ALIGN)))
        known = [_constant(v) for v in inner]
        if static is not None and None not in known:
            static += -(-math.prod(known) * byte_width(elem) // SLOT_ALIGN) * SLOT_ALIGN
        else:
            static = None
    return counts, offsets, total, static


def _constant(v: ir.Value) -> int | None:
    if op_name(v) != "arith.constant":
        return None
    return ir.IntegerAttr(v.owner.attributes["value"]).value


def capacity(caps) -> int:
    return caps.shared_memory_bytes - STATIC_RESERVE


class Slots:
    """The slots inside a staged launch, and the loads and stores of group ops through them."""

    def __init__(self, plan_: StagingPlan, counts: list, offsets: list):
        self.plan = plan_
        workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
        dyn = ir.ShapedType.get_dynamic_size()
        base = gpu.dynamic_shared_memory(ir.MemRefType.get([dyn], ir.IntegerType.get_signless(8),
                                                           memory_space=workgroup))
        self.views = [memref.view(ir.MemRefType.get([dyn], elem, memory_space=workgroup), base, offset, [n])
                      for (_, elem), offset, n in zip(plan_.slots, offsets, counts)]

    def load(self, value, amap, pos: int, at: ir.Value, global_load, vtype: ir.VectorType | None = None):
        """The element of `value` at row position `at` for group position `pos` (or the vector of
        `vtype` from there): from its slot, or (at the key's first access, a read) from global
        memory, kept in the slot."""
        s = self.plan.keys.get((value, amap))
        if s is None:
            return global_load()
        slot = self.views[s.slot]
        if pos != s.first:
            return memref.load(slot, [at]) if vtype is None else \
                vector.load(vtype, slot, [at], alignment=_vector_bytes(vtype))
        loaded = global_load()
        # unguarded: an invalid lane took the thread's own first element (InRow.loop), the value
        # its first lane keeps there too
        _store(loaded, slot, at)
        return loaded

    def store(self, v, value, amap, pos: int, at: ir.Value, global_store) -> None:
        """Store a (valid) lane's element, or a group's vector, at row position `at`: into its
        slot where staged, and to global memory unless a later op of the group writes it again."""
        s = self.plan.keys.get((value, amap))
        if s is None:
            global_store()
            return
        _store(v, self.views[s.slot], at)
        if not any(w > pos for w in s.writes):
            global_store()


def _store(v: ir.Value, slot: ir.Value, at: ir.Value) -> None:
    if isinstance(v.type, ir.VectorType):
        vector.store(v, slot, [at], alignment=_vector_bytes(ir.VectorType(v.type)))
    else:
        memref.store(v, slot, [at])


def _vector_bytes(vtype: ir.VectorType) -> int:
    """A slot's vector access is aligned to its size: slots start SLOT_ALIGN-aligned and a
    group starts at a multiple of its length (row_reduce.InRow._vector_loop)."""
    return vtype.shape[0] * byte_width(vtype.element_type)
