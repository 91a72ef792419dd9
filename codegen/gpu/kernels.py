"""LoopNest -> one `gpu.launch` (blocks and threads), built in the host function.

Four schedules, picked by `schedule_for`:
- `elementwise`: all loops parallel; each thread owns VEC consecutive elements of the innermost
  loop, read and written with 16-byte vector accesses where strides and alignment allow.
- `row_reduce`: parallel loops then reduction loops, one output with a known combiner; one block
  per output element ("row"), its threads stride over the row (vectorized), then the block
  combines their partials with `gpu.all_reduce` (warp shuffles + shared memory).
- `serial`: anything else (column reductions, arg-reductions, non-32-bit reductions); one
  thread per parallel point, a loop over the reduction. Adjacent threads take adjacent output
  elements, so column reductions still read coalesced.
- `split`: `serial` for a reduction over too few points to fill the GPU: a block's threads share
  each point's steps, their partials combined through shared memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import arith, gpu, memref, scf, vector

from ...lowering.scalar import identity_of
from ..kernel_names import mark_kernel
from .row_reduce import COMBINERS
from .loopnest import (PARALLEL, REDUCTION, Access, LoopNest, affine_dims, eval_affine, linear_coefficient, materialize,
                       op_name)

BLOCK = 256          # threads per block for elementwise and serial kernels
ROW_THREADS = 256    # at most this many threads cooperate on one row
MAX_VEC_BYTES = 16   # ld.global.v4.b32: the widest access a thread can make


def index(n: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), n)


def nbytes(t: ir.Type) -> int:
    width = ir.FloatType(t).width if isinstance(t, ir.FloatType) else ir.IntegerType(t).width
    return max(1, width // 8)


def prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def delinearize(linear: ir.Value, sizes: list[int]) -> list[ir.Value]:
    """Row-major indices of `linear` (< prod(sizes)); size-1 dims get the constant 0."""
    out: list[ir.Value] = [None] * len(sizes)  # type: ignore[list-item]
    rest = linear
    first = next((i for i, s in enumerate(sizes) if s != 1), len(sizes))
    for i in reversed(range(len(sizes))):
        if sizes[i] == 1:
            out[i] = index(0)
        elif i == first:
            out[i] = rest
        else:
            out[i] = arith.remui(rest, index(sizes[i]))
            rest = arith.divui(rest, index(sizes[i]))
    return out


def linear_index(a: Access, index_of) -> ir.Value:
    """offset + sum(stride * index) into the flattened root buffer, constants folded."""
    total, terms = a.offset, []
    for e, s, size in zip(a.exprs, a.strides, a.shape):
        if s == 0 or size == 1:  # the index is 0 there
            continue
        if isinstance(e, ir.AffineConstantExpr):
            total += e.value * s
            continue
        v = eval_affine(e, index_of)
        terms.append(v if s == 1 else arith.muli(v, index(s)))
    if total or not terms:
        terms.append(index(total))
    out = terms[0]
    for t in terms[1:]:
        out = arith.addi(out, t)
    return out


# ----------------------------------------------------------------------------- vector accesses


def vector_width(nest: LoopNest, dim: int, accesses: list[Access], ragged: bool = False) -> int:
    """Largest VEC (<= 16 bytes per access) for which every stride-1 access along `dim` is
    aligned: VEC divides the loop size, the offset and every other stride. `ragged`: the loop
    size need not be a multiple (the caller runs a last partial vector lane by lane)."""
    if not accesses or dim < 0 or any(a.elem == ir.IntegerType.get_signless(1) for a in accesses):
        return 1  # i1 is a byte per element in memory, but a vector of i1 would be packed bits
    # Only stride-1 accesses load vectors: a row's broadcast statistic or a strided read is a
    # scalar per lane, whatever its width.
    vectors = [a for a in accesses if a.inner_stride(dim) == 1] or accesses
    vec = max(1, MAX_VEC_BYTES // max(nbytes(a.elem) for a in vectors))
    while vec > 1:
        if (ragged or nest.sizes[dim] % vec == 0) and all(_aligned(a, dim, vec) for a in accesses):
            return vec
        vec //= 2
    return 1


def _aligned(a: Access, dim: int, vec: int) -> bool:
    if a.inner_stride(dim) != 1:
        return True  # not a vector access: scalar loads per lane
    others = [s for e, s in zip(a.exprs, a.strides) if dim not in affine_dims(e)]
    return a.offset % vec == 0 and all(s % vec == 0 for s in others) and \
        all(_steps_aligned(e, dim, s, vec) for e, s in zip(a.exprs, a.strides) if dim in affine_dims(e))


def _steps_aligned(e, dim: int, stride: int, vec: int) -> bool:
    """Whether every other loop's step in the index `e` (which moves with `dim`: a blocked sum's
    `c * block + i`) moves the address by a multiple of vec elements; no constant term."""
    if any(isinstance(t, ir.AffineConstantExpr) for t in _added_terms(e)):
        return False
    steps = [linear_coefficient(e, d) for d in affine_dims(e) - {dim}]
    return all(c is not None and (c * stride) % vec == 0 for c in steps)


def _added_terms(e) -> list:
    return _added_terms(e.lhs) + _added_terms(e.rhs) if isinstance(e, ir.AffineAddExpr) else [e]


def load_lanes(a: Access, idx: list[ir.Value], dim: int, vec: int) -> list[ir.Value]:
    """The VEC values an access reads for lanes 0..VEC-1 along loop `dim`."""
    base = linear_index(a, lambda d: idx[d])
    stride = a.inner_stride(dim) if dim >= 0 else 0
    if vec == 1 or stride == 0:
        return [memref.load(a.flat, [base])] * vec
    if stride == 1 and not _is_i1(a):
        v = vector.load(ir.VectorType.get([vec], a.elem), a.flat, [base], alignment=vec * nbytes(a.elem))
        return [vector.extract(v, [], [lane]) for lane in range(vec)]
    if stride is None:  # dim inside a compound expression: recompute per lane
        return [memref.load(a.flat, [linear_index(a, lambda d, l=lane: _lane_index(idx, dim, d, l))])
                for lane in range(vec)]
    return [memref.load(a.flat, [arith.addi(base, index(lane * stride))]) if lane else memref.load(a.flat, [base])
            for lane in range(vec)]


def store_lanes(a: Access, values: list[ir.Value], idx: list[ir.Value], dim: int) -> None:
    vec = len(values)
    base = linear_index(a, lambda d: idx[d])
    stride = a.inner_stride(dim) if dim >= 0 else 0
    if vec > 1 and stride == 1 and not _is_i1(a):
        v = vector.from_elements(ir.VectorType.get([vec], a.elem), values)
        vector.store(v, a.flat, [base], alignment=vec * nbytes(a.elem))
        return
    for lane, value in enumerate(values):
        at = base if lane == 0 else linear_index(a, lambda d, l=lane: _lane_index(idx, dim, d, l))
        memref.store(value, a.flat, [at])


def _is_i1(a: Access) -> bool:
    """i1 is a byte per element in memory (torch.bool), but a vector<Nxi1> load or store would
    move packed bits: such an access goes lane by lane (row fusion vectorizes a group by its
    other accesses, so an i1 buffer read from memory can meet vec > 1)."""
    return a.elem == ir.IntegerType.get_signless(1)


def _lane_index(idx, dim, d, lane):
    return arith.addi(idx[d], index(lane)) if d == dim and lane else idx[d]


# ----------------------------------------------------------------------------- launches


@dataclass
class Launch:
    grid: int
    block: int


def launch(grid: int, block: int, build, strategy: str, shared: int = 0) -> gpu.LaunchOp:
    """gpu.launch with a 1-D grid; `build(block_id, thread_id)` fills the body. `strategy`
    names the schedule (the first word of the kernel's name, codegen/kernel_names.py); `shared`:
    bytes of dynamic shared memory."""
    size = arith.constant(ir.IntegerType.get_signless(32), shared) if shared else None
    op = gpu.LaunchOp((index(grid), index(1), index(1)), (index(block), index(1), index(1)),
                      dynamic_shared_memory_size=size)
    body = op.regions[0].blocks[0]
    with ir.InsertionPoint(body):
        build(body.arguments[0], body.arguments[3])
        gpu.TerminatorOp()
    mark_kernel(op, strategy)
    return op


def guarded(cond_needed: bool, cond_fn, build) -> None:
    if not cond_needed:
        build()
        return
    branch = scf.IfOp(cond_fn())
    with ir.InsertionPoint(branch.then_block):
        build()
        scf.YieldOp([])


def run_lanes(nest: LoopNest, ins: list[list[ir.Value]], outs: list[list[ir.Value]], idx, dim, vec):
    """The body once per lane; returns per output the VEC yielded values."""
    results: list[list[ir.Value]] = [[] for _ in nest.outputs]
    for lane in range(vec):
        ys = nest.body([v[lane] for v in ins], [v[lane] for v in outs],
                       lambda d, l=lane: _lane_index(idx, dim, d, l))
        for r, y in zip(results, ys):
            r.append(y)
    return results


def elementwise(nest: LoopNest) -> gpu.LaunchOp:
    """Each thread VEC consecutive elements of the innermost loop. An inner loop that VEC does
    not divide but whose rows start aligned (a padded buffer: a vocabulary's 50257 logits in rows
    of 50264) runs to its size rounded up to VEC, each row's last vector lane by lane."""
    dim = nest.rank - 1
    accesses = nest.inputs + nest.outputs
    vec = vector_width(nest, dim, accesses)
    if dim >= 0 and nest.sizes[dim] >= RAGGED_MIN:  # 250 columns: 8 lanes and a tail, not 2 lanes
        vec = max(vec, vector_width(nest, dim, accesses, ragged=True))
    sizes = list(nest.sizes)
    if dim >= 0:
        sizes[dim] = -(-sizes[dim] // vec) * vec
    work = prod(sizes) // vec
    grid = max(1, -(-work // BLOCK))
    block = min(BLOCK, max(32, work))

    def build(bx, tx):
        gid = arith.addi(arith.muli(bx, index(block)), tx)

        def body():
            idx = delinearize(arith.muli(gid, index(vec)) if vec > 1 else gid, sizes)
            if dim < 0 or sizes[dim] == nest.sizes[dim]:
                _elementwise_lanes(nest, idx, dim, vec)
            else:
                _ragged_lanes(nest, idx, dim, vec)

        guarded(grid * block != work, lambda: arith.cmpi(arith.CmpIPredicate.ult, gid, index(work)), body)

    return launch(grid, block, build, "elementwise")


RAGGED_MIN = 64  # shorter inner loops that VEC does not divide stay scalar (the tail would be most of it)


def _elementwise_lanes(nest: LoopNest, idx: list[ir.Value], dim: int, vec: int) -> None:
    """Load, compute and store the VEC lanes starting at `idx`."""
    ins = [load_lanes(a, idx, dim, vec) for a in nest.inputs]
    outs = [load_lanes(a, idx, dim, vec) if used else [None] * vec
            for a, used in zip(nest.outputs, nest.out_used)]
    for a, values in zip(nest.outputs, run_lanes(nest, ins, outs, idx, dim, vec)):
        store_lanes(a, values, idx, dim)


def _ragged_lanes(nest: LoopNest, idx: list[ir.Value], dim: int, vec: int) -> None:
    """A whole vector where it ends inside the loop, else each lane still inside it alone."""
    size = index(nest.sizes[dim])
    whole = arith.cmpi(arith.CmpIPredicate.ule, arith.addi(idx[dim], index(vec)), size)
    branch = scf.IfOp(whole, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        _elementwise_lanes(nest, idx, dim, vec)
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        lanes = scf.ForOp(index(0), index(vec), index(1))
        with ir.InsertionPoint(lanes.body):
            at = arith.addi(idx[dim], lanes.induction_variable)
            one = [at if d == dim else i for d, i in enumerate(idx)]
            guarded(True, lambda: arith.cmpi(arith.CmpIPredicate.ult, at, size),
                    lambda: _elementwise_lanes(nest, one, dim, 1))
            scf.YieldOp([])
        scf.YieldOp([])


def can_row_reduce(nest: LoopNest) -> bool:
    its = nest.iterators
    if REDUCTION not in its or len(nest.outputs) != 1 or nest.combiners[0] is None:
        return False
    first_red = its.index(REDUCTION)
    if any(it != REDUCTION for it in its[first_red:]):
        return False
    if op_name(nest.combiners[0]) not in COMBINERS or nest.outputs[0].elem not in (ir.F32Type.get(), ir.IntegerType.get_signless(32)):
        return False
    inner = nest.rank - 1
    # Threads stride along the innermost loop: coalesced only if the inputs are contiguous there.
    return all(a.inner_stride(inner) in (0, 1) for a in nest.inputs)


def row_reduce(nest: LoopNest, inits: list[ir.Value] | None = None) -> gpu.LaunchOp:
    """One block per row; `inits` (the value of the fill folded in) replaces reading the old output."""
    p = nest.iterators.index(REDUCTION)
    rows, row_len = prod(nest.sizes[:p]), prod(nest.sizes[p:])
    dim = nest.rank - 1
    vec = vector_width(nest, dim, nest.inputs)
    threads = min(ROW_THREADS, max(32, 1 << max(0, (row_len // vec - 1)).bit_length()))
    comb = nest.combiners[0]
    kind = COMBINERS[op_name(comb)]
    out, elem = nest.outputs[0], nest.outputs[0].elem

    def build(bx, tx):
        row_idx = delinearize(bx, nest.sizes[:p])
        loop = scf.ForOp(arith.muli(tx, index(vec)), index(row_len), index(threads * vec),
                         [identity_of(op_name(comb), elem)])
        with ir.InsertionPoint(loop.body):
            idx = row_idx + delinearize(loop.induction_variable, nest.sizes[p:])
            ins = [load_lanes(a, idx, dim, vec) for a in nest.inputs]
            acc = loop.inner_iter_args[0]
            for lane in range(vec):
                acc = nest.body([v[lane] for v in ins], [acc], lambda d, l=lane: _lane_index(idx, dim, d, l))[0]
            scf.YieldOp([acc])
        total = gpu.all_reduce(loop.results[0], op=getattr(gpu.AllReduceOperation, kind), uniform=True)
        is_first = arith.cmpi(arith.CmpIPredicate.eq, tx, index(0))

        def write():
            at = linear_index(out, lambda d: row_idx[d])
            old = materialize(inits[0]) if inits else memref.load(out.flat, [at])
            final = ir.Operation.create(op_name(comb), results=[elem], operands=[old, total],
                                        attributes={n: comb.attributes[n] for n in comb.attributes}).result
            memref.store(final, out.flat, [at])

        guarded(True, lambda: is_first, write)

    return launch(rows, threads, build, "row_reduce")


def _thread_order(nest: LoopNest, par: list[int]) -> list[int]:
    """The parallel loops in the order a thread's index is split over them, the last varying
    fastest from one thread to the next: the loop along which the operands lie closest together
    goes last, so that a warp's loads are coalesced. A column sum's first stage loops over
    (column, block of rows): with the block last, the 32 threads of a warp read 32 rows 64 apart
    (AMP GPT-2's bias gradients took 2.6 ms a step so, 5x inductor's)."""
    def spread(d: int) -> float:
        strides = [abs(s) for a in nest.inputs + nest.outputs if (s := a.inner_stride(d)) not in (None, 0)]
        return min(strides, default=float("inf"))

    if not par:
        return par
    fastest = min(reversed(par), key=spread)  # a tie keeps the innermost loop last
    return [d for d in par if d != fastest] + [fastest]


def serial(nest: LoopNest, inits: list[ir.Value] | None = None) -> gpu.LaunchOp:
    """One thread per point of the parallel loops, the reduced ones looped over; `inits` (the
    values of the fills folded in, one per output of a reduction) replace reading the old outputs."""
    par = _thread_order(nest, [d for d, it in enumerate(nest.iterators) if it == PARALLEL])
    red = [d for d, it in enumerate(nest.iterators) if it != PARALLEL]
    points = prod(nest.sizes[d] for d in par)
    steps = prod(nest.sizes[d] for d in red)
    grid = max(1, -(-points // BLOCK))
    block = min(BLOCK, max(32, points))

    def build(bx, tx):
        gid = arith.addi(arith.muli(bx, index(block)), tx)

        def body():
            idx: list[ir.Value] = [index(0)] * nest.rank
            for d, v in zip(par, delinearize(gid, [nest.sizes[d] for d in par])):
                idx[d] = v
            olds = [materialize(inits[k]) if inits else
                    memref.load(a.flat, [linear_index(a, lambda d: idx[d])]) if (used or red) else None
                    for k, (a, used) in enumerate(zip(nest.outputs, nest.out_used))]
            if red:
                ys = _reduction_loop(nest, idx, red, steps, olds)
            else:
                ys = nest.body([memref.load(a.flat, [linear_index(a, lambda d: idx[d])]) for a in nest.inputs],
                               olds, lambda d: idx[d])
            for a, y in zip(nest.outputs, ys):
                memref.store(y, a.flat, [linear_index(a, lambda d: idx[d])])

        guarded(grid * block != points, lambda: arith.cmpi(arith.CmpIPredicate.ult, gid, index(points)), body)

    return launch(grid, block, build, "serial")


def _reduction_loop(nest, idx, red, steps, olds, first=None, step: int = 1):
    """The reduction's steps first, first + step, ... below `steps` (all of them by default),
    each folded into the accumulators `olds`."""
    loop = scf.ForOp(index(0) if first is None else first, index(steps), index(step), olds)
    with ir.InsertionPoint(loop.body):
        full = list(idx)
        for d, v in zip(red, delinearize(loop.induction_variable, [nest.sizes[d] for d in red])):
            full[d] = v
        ins = [memref.load(a.flat, [linear_index(a, lambda d: full[d])]) for a in nest.inputs]
        scf.YieldOp(nest.body(ins, list(loop.inner_iter_args), lambda d: full[d]))
    return list(loop.results)


# A serial reduction over few points leaves most of the GPU idle, each thread a long loop of
# loads and adds: AMP GPT-2's bias gradients (768 columns of a [4096, 768] bf16 gradient, as
# 64-row blocks then a sum of the 64 block sums) moved 6.3 MB in 17.8 us at one thread per
# column (an H100). `split` gives each point SLICES threads of a block, each folding every
# SLICES-th step, and combines their partials through shared memory.
SPLIT_THREADS = 1 << 18  # threads enough to keep an H100's loads in flight (132 SMs x 2048)
SPLIT_POINTS = 32        # points a block takes: a warp reads 32 adjacent outputs' operands
MAX_SLICES = 8           # blocks of at most 256 threads, as every other schedule launches


def slices(nest: LoopNest) -> int:
    """Threads per point for `split` (1: the points fill the GPU, or the reduction cannot be
    combined from partials)."""
    if not _combinable(nest):
        return 1
    red = [d for d, it in enumerate(nest.iterators) if it != PARALLEL]
    points, steps = prod(nest.sizes[d] for d in range(nest.rank) if d not in red), prod(nest.sizes[d] for d in red)
    s = 1
    while s < MAX_SLICES and 2 * s <= steps and points * s < SPLIT_THREADS:
        s *= 2
    return s


def _combinable(nest: LoopNest) -> bool:
    """Every output a reduction whose partials one op combines (a sum, a max, ...), in a type a
    shared-memory slot holds as it is (not i1, whose memory form is a byte)."""
    return REDUCTION in nest.iterators and all(
        c is not None and op_name(c) in COMBINERS and a.elem != ir.IntegerType.get_signless(1)
        for c, a in zip(nest.combiners, nest.outputs))


def split(nest: LoopNest, inits: list[ir.Value] | None = None) -> gpu.LaunchOp:
    """`serial` with the reduction shared: thread (slice s, point p) of a block folds steps s,
    s + SLICES, ... of point p from the combiner's identity, stores its partial in shared memory,
    and after a barrier slice 0 folds the SLICES partials in order into the old output (or its
    folded fill's value, `inits`). Adjacent threads still take adjacent points, so loads stay coalesced."""
    par = _thread_order(nest, [d for d, it in enumerate(nest.iterators) if it == PARALLEL])
    red = [d for d, it in enumerate(nest.iterators) if it != PARALLEL]
    points, steps, n = prod(nest.sizes[d] for d in par), prod(nest.sizes[d] for d in red), slices(nest)
    width = min(SPLIT_POINTS, 1 << max(0, points - 1).bit_length())
    grid, block = -(-points // width), width * n
    offsets, total = _partial_slots(nest, block)

    def build(bx, tx):
        point, s = arith.remui(tx, index(width)), arith.divui(tx, index(width))
        gid = arith.addi(arith.muli(bx, index(width)), point)
        valid = arith.cmpi(arith.CmpIPredicate.ult, gid, index(points))
        idx: list[ir.Value] = [index(0)] * nest.rank
        for d, v in zip(par, delinearize(gid, [nest.sizes[d] for d in par])):
            idx[d] = v
        ids = [identity_of(op_name(c), a.elem) for c, a in zip(nest.combiners, nest.outputs)]
        # an invalid point folds no step (its indices are out of range), but meets the barrier
        first = arith.select(valid, s, index(steps))
        parts = _reduction_loop(nest, idx, red, steps, ids, first, n)
        slots = _partial_views(nest, offsets, block)
        for slot, v in zip(slots, parts):
            memref.store(v, slot, [tx])
        gpu.barrier()

        def finish():
            for k, (a, c, slot) in enumerate(zip(nest.outputs, nest.combiners, slots)):
                at = linear_index(a, lambda d: idx[d])
                acc = materialize(inits[k]) if inits else memref.load(a.flat, [at])
                for j in range(n):  # the slices' partials, in order
                    part = memref.load(slot, [arith.addi(point, index(j * width))])
                    acc = ir.Operation.create(op_name(c), results=[a.elem], operands=[acc, part],
                                              attributes={m: c.attributes[m] for m in c.attributes}).result
                memref.store(acc, a.flat, [at])

        first_slice = arith.cmpi(arith.CmpIPredicate.eq, s, index(0))
        guarded(True, lambda: arith.andi(valid, first_slice), finish)

    return launch(grid, block, build, "split", shared=total)


def _partial_slots(nest: LoopNest, block: int) -> tuple[list[int], int]:
    """Byte offsets of each output's slots (one per thread) in shared memory, and the total."""
    offsets, total = [], 0
    for a in nest.outputs:
        offsets.append(total)
        total += -(-block * nbytes(a.elem) // 16) * 16
    return offsets, total


def _partial_views(nest: LoopNest, offsets: list[int], block: int) -> list[ir.Value]:
    workgroup = ir.Attribute.parse("#gpu.address_space<workgroup>")
    dyn = ir.ShapedType.get_dynamic_size()
    base = gpu.dynamic_shared_memory(ir.MemRefType.get([dyn], ir.IntegerType.get_signless(8), memory_space=workgroup))
    return [memref.view(ir.MemRefType.get([dyn], a.elem, memory_space=workgroup), base, index(offset),
                        [index(block)])
            for a, offset in zip(nest.outputs, offsets)]


# A block per row pays off on rows long enough to keep its threads busy. A blocked sum's partials
# (lowering/rules/reduction.py: rows of SUM_BLOCK terms) over a [tokens, vocabulary] tensor are
# millions of such rows: one 32-thread block each, at two terms a thread and a warp reduction,
# took 1.9 ms for 4096 x 50257 terms computed in registers (cross-entropy's backward, an H200),
# where one thread per row summing its terms in a loop fills the GPU with full blocks.
SHORT_ROW = 64
MANY_ROWS = 1 << 16


def schedule_for(nest: LoopNest) -> str:
    if all(it == PARALLEL for it in nest.iterators):
        return "elementwise"
    if can_row_reduce(nest):
        p = nest.iterators.index(REDUCTION)
        if not short_rows(nest.sizes[:p], nest.sizes[p:]):
            return "row_reduce"
    return "split" if slices(nest) > 1 else "serial"


def short_rows(rows: list[int], row: list[int]) -> bool:
    """Whether rows of these sizes are better one thread each (`serial`) than a block each."""
    return prod(row) <= SHORT_ROW and prod(rows) >= MANY_ROWS


BUILDERS = {"elementwise": elementwise, "row_reduce": row_reduce, "serial": serial, "split": split}
