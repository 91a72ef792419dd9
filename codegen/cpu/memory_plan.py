"""Static memory planning: a function's intermediate buffers as views of one workspace.

Why. After bufferization a compiled function allocates each intermediate buffer (memref.alloc ->
malloc) and the deallocation pipeline frees them, all at the function's end in practice: the
call's peak is the sum of its intermediates, and a call that frees several megabytes at once at
the top of glibc's heap gives those pages back to the kernel, so the next call faults them in
again (heap.py). The benchmark CNN (3x conv-bn-relu-pool, 8x3x64x64) took about 2600 minor page
faults a call that way (2026-11-24, AMD EPYC, 2 threads). Shapes are static here, so where each
buffer lives can be decided at compile time, as inductor's and XLA's buffer assignment do.

What. Every `memref.alloc` with a static shape and the identity layout in a function's top-level
block gets a live interval: the positions (in that block) of the first and last op using it or
any value derived from it (views, casts, pointers taken of it, the results of a loop or branch
holding a use; a use inside a loop counts at the loop; a buffer behind a torch handle lives as
long as the handle's slot is used: attribute dynamo_mlir.retains). Buffers whose intervals do not overlap may
share bytes (those of one row count with no library call between them only whole, for
parallel.py's row-wise groups: `_assign_offsets`); offsets are chosen greedily, largest buffer first, each at the lowest
64-byte-aligned offset free of every placed buffer live at the same time. Each alloc becomes `memref.view` of one `memref<N x i8>` workspace, a new
last argument of the function; the module records N in `dynamo_mlir.workspace_bytes` (runtime.py
passes a workspace of that size, kept between calls: no malloc, no page fault per call).

Not planned (left to malloc and the deallocation pipeline): dynamic shapes, allocs inside loops
or branches, buffers returned or otherwise escaping, element types narrower than a byte. Run
after one-shot bufferization and buffer-results-to-out-params, before the deallocation pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import arith, memref

from ...lowering.scalar import constant_int
from ..attributes import PLANNED, RETAINS, WORKSPACE_BYTES
from ..functions import append_argument

ALIGNMENT = 64  # bytes: a cache line, and what torch's CPU allocator gives the workspace itself
ATTRIBUTE = WORKSPACE_BYTES  # on the module: the workspace size runtime.py passes


@dataclass
class Buffer:
    alloc: ir.Operation
    size: int  # bytes, rounded up to ALIGNMENT
    start: int  # first and last position in the top-level block of a use
    end: int
    rows: int  # the first dim (1 for a 0-d buffer)
    offset: int = -1

    def overlaps(self, other: "Buffer") -> bool:
        return self.start <= other.end and other.start <= self.end

    def ends(self) -> tuple[int, int]:
        return self.offset, self.offset + self.size


def data_bytes(t: ir.MemRefType) -> int | None:
    """The bytes of a static, identity-layout memref of whole-byte elements; None otherwise."""
    identity = isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)
    width = _element_bits(t.element_type)
    if not (t.has_static_shape and identity) or width is None or width % 8:
        return None
    count = 1
    for s in t.shape:
        count *= s
    return count * width // 8


def _planned_size(t: ir.MemRefType) -> int | None:
    """The bytes the buffer takes in the workspace (rounded up to ALIGNMENT); None: not planned."""
    size = data_bytes(t)
    return -(-size // ALIGNMENT) * ALIGNMENT if size else None


def _element_bits(t: ir.Type) -> int | None:
    return t.width if isinstance(t, (ir.IntegerType, ir.FloatType)) else None


# Calls that keep a pointer to the buffer after they return: torch's from_blob (library_conv.py)
# makes a tensor handle over it, stored in the stack slot its operand at this index points to;
# the calls reading the buffer later (the convolution, the copy into it) take the handle, not the
# buffer. So the buffer lives as long as that slot is used (up to the handle's delete). Such a
# call says so with the attribute RETAINS (the slot operand's index).


def _top_level_op(op: ir.Operation, positions: dict) -> ir.Operation | None:
    """The op of the block `positions` numbers that encloses `op` (None: not inside it)."""
    while op is not None:
        if op in positions:
            return op
        parent = op.parent
        op = parent if parent is not None and parent.name != "func.func" else None
    return None


def _stack_slot(value: ir.Value) -> ir.Value | None:
    """The memref.alloca a pointer was taken of (library.pointer_to: through casts and
    arithmetic, first operands), or None."""
    while not isinstance(value.owner, ir.Block):
        op = value.owner.operation
        if op.name == "memref.alloca":
            return value
        if not len(op.operands):
            return None
        value = op.operands[0]
    return None


def _retained_until(call: ir.Operation, positions: dict) -> int | None:
    """For a call keeping the buffer (attribute RETAINS): the last position using its slot."""
    if call.name != "func.call" or RETAINS not in call.attributes:
        return None
    slot = _stack_slot(list(call.operands)[ir.IntegerAttr(call.attributes[RETAINS]).value])
    if slot is None:
        return None
    found = [_top_level_op(use.owner, positions) for use in slot.uses]
    return max((positions[op] for op in found if op is not None), default=None)


def live_interval(alloc: ir.Operation, positions: dict) -> tuple[int, int] | None:
    """(first, last) position of a use of the alloc (any op's single result: adopted_results.py
    asks it of a branch yielding a buffer) or of anything derived from it (the alloc
    itself does nothing: its bytes are undefined until written); None when it is never used or
    some derived value escapes the block (returned, or used outside it). Derived: an op's results
    from the buffer (views, casts, pointers taken of it), and the results of the top-level op
    holding a use (a loop or branch yielding the buffer out of its region)."""
    used: list[int] = []
    pending, seen = [alloc.result], set()
    while pending:
        value = pending.pop()
        for use in value.uses:
            user = use.owner
            if user.name == "func.return":
                return None
            top = _top_level_op(user, positions)
            if top is None:
                return None
            used.append(positions[top])
            retained = _retained_until(user, positions)
            if retained is not None:
                used.append(retained)
            for op in (user, top):
                if op not in seen:
                    seen.add(op)
                    pending.extend(op.results)
    return (min(used), max(used)) if used else None


# Ops that end a run of row-wise nests parallel.py may group: library calls (those already made,
# and the contractions call-blas / call-onednn-linear make of named linalg ops after planning).
_GROUP_BREAKS = ("func.call", "linalg.matmul", "linalg.batch_matmul", "linalg.conv")


def _breaks_groups(op) -> bool:
    return op.name.startswith(_GROUP_BREAKS)


def _assign_offsets(buffers: list[Buffer], breaks: list[int] = ()) -> int:
    """Greedy offsets, largest first; returns the workspace's size.

    Buffers of one row count with no library call between them share bytes only whole, at one
    offset with one size. parallel.py runs consecutive row-wise nests row block by row block on
    several threads, so two buffers never live at once may still be used by one such group:
    where their rows differ, one thread's later nest would write bytes of a row another
    thread's earlier nest still reads, and parallel.py keeps the nests apart (a layer norm's
    row sums, [R], and its squares' partial sums, [R, 1, 16]: three parallel regions instead of
    one). At one offset with one size, row i of one is row i of the other, which one thread
    touches. `breaks`: positions of ops no group spans."""
    placed: list[Buffer] = []
    for buf in sorted(buffers, key=lambda b: (-b.size, b.start)):
        live = [p for p in placed if p.overlaps(buf)]
        rows = [p for p in placed if p.rows == buf.rows and not p.overlaps(buf) and not _apart(p, buf, breaks)]
        whole = [p.offset for p in rows if p.size == buf.size]
        buf.offset = next((o for o in sorted(whole) if _free(buf.size, o, live, rows)), None)
        if buf.offset is None:
            buf.offset = _lowest_gap(buf.size, [p.ends() for p in live + rows])
        placed.append(buf)
    return max((b.offset + b.size for b in buffers), default=0)


def _apart(a: Buffer, b: Buffer, breaks: list[int]) -> bool:
    """Whether an op no group spans lies between a's uses and b's (they do not overlap)."""
    first, second = (a, b) if a.end < b.start else (b, a)
    return any(first.end <= k <= second.start for k in breaks)


def _free(size: int, offset: int, live: list[Buffer], rows: list[Buffer]) -> bool:
    """Whether [offset, offset + size) misses every live buffer, and meets buffers of the same
    rows only where one lies exactly there."""
    hit = lambda p: p.offset < offset + size and offset < p.offset + p.size  # noqa: E731
    return not any(hit(p) for p in live) and all(p.ends() == (offset, offset + size) for p in rows if hit(p))


def _lowest_gap(size: int, busy: list[tuple[int, int]]) -> int:
    offset = 0
    for lo, hi in sorted(busy):
        if offset + size <= lo:
            break
        offset = max(offset, hi)
    return offset


def _group_breaks(fn) -> list[int]:
    return [k for k, op in enumerate(fn.regions[0].blocks[0].operations) if _breaks_groups(op.operation)]


def _plannable(fn) -> list[Buffer]:
    block = fn.regions[0].blocks[0]
    positions = {op: k for k, op in enumerate(block.operations)}
    buffers = []
    for op in block.operations:
        if op.name != "memref.alloc" or len(op.operands):
            continue
        t = ir.MemRefType(op.result.type)
        size = _planned_size(t)
        interval = live_interval(op, positions) if size else None
        if interval is not None:
            buffers.append(Buffer(op, size, *interval, rows=t.shape[0] if t.rank else 1))
    return buffers


def _rewrite(fn, buffers: list[Buffer], total: int) -> None:
    """The allocs -> views of a new last argument memref<total x i8>."""
    with fn.location:
        workspace = append_argument(fn, ir.MemRefType.get([total], ir.IntegerType.get_signless(8)))
    for buf in buffers:
        with ir.InsertionPoint(buf.alloc), buf.alloc.location:
            offset = arith.constant(ir.IndexType.get(), buf.offset)
            view = memref.view(buf.alloc.result.type, workspace, offset, [])
            view.owner.attributes[PLANNED] = ir.UnitAttr.get()
        buf.alloc.result.replace_all_uses_with(view)
        buf.alloc.erase()


def plan_memory(module: ir.Module) -> int:
    """Plan the intermediates of the module's public function; returns the workspace's bytes (0:
    nothing planned, the function unchanged)."""
    public = [op for op in module.body.operations
              if op.operation.name == "func.func" and op.regions[0].blocks
              and "sym_visibility" not in op.attributes]
    if len(public) != 1:
        return 0
    fn = public[0]
    buffers = _plannable(fn)
    total = _assign_offsets(buffers, _group_breaks(fn))
    if total:
        _rewrite(fn, buffers, total)
        module.operation.attributes[ATTRIBUTE] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), total)
    return total


def planned_span(value: ir.Value) -> tuple[ir.Value, int, int] | None:
    """(workspace, first byte, end byte) when `value` is a buffer this pass placed, else None.
    Analyses that tell buffers apart (parallel.py, outline.py, lane_vectors.py) treat such a view
    as a buffer of its own, aliasing only the planned buffers whose bytes it overlaps: two of them
    share bytes only when no op of the function uses both."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "memref.view" or PLANNED not in owner.operation.attributes:
        return None
    source, offset = owner.operation.operands[0], owner.operation.operands[1]
    if not (isinstance(source.owner, ir.Block) and source.owner.owner.operation.name == "func.func"):
        return None
    start = constant_int(offset)
    size = data_bytes(ir.MemRefType(value.type))
    return None if start is None or size is None else (source, start, start + size)


def may_alias(a: ir.Value, b: ir.Value) -> bool:
    """Whether buffers `a` and `b` (as outline.buffer_of finds them) may share bytes."""
    if a == b:
        return True
    sa, sb = planned_span(a), planned_span(b)
    return sa is not None and sb is not None and sa[0] == sb[0] and sa[1] < sb[2] and sb[1] < sa[2]


def workspace_bytes(module: ir.Module) -> int:
    """The workspace the module's public function takes as its last argument (0: none)."""
    attrs = module.operation.attributes
    return ir.IntegerAttr(attrs[ATTRIBUTE]).value if ATTRIBUTE in attrs else 0
