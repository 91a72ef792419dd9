"""Sibling reductions over the same values merged into one linalg.generic with a result each.

A variance taken by the corrected two-pass algorithm sums the centered values and their squares
(frontend/aten/reduction.py `_variance`): two reductions of one iteration space reading the same
tensor. As two linalg.generic ops the loops stage makes two loop nests, each reading the input
again, and, because the centered values then have two readers, upstream elementwise fusion
(which fuses a producer only into its single user) writes them to memory for both to read back.
Merged into one generic with two results, one loop nest computes both sums from one load, the
centered values have one reader again, and a second round of elementwise fusion folds them into
it: the loops read the input once, as the uncorrected variance did. (Where both started from one
fill, CSE's, bufferization gives the second result a copy of it: a row's partials, not a row.)

The rule is structural, not tied to the variance: two linalg.generic ops with a reduction loop,
the same iterator types, output maps and output types, the same loop ranges (every loop bound to
an operand dim; one of a dynamic size bound to an input they share), at least one input value in
common read through the same map, and neither reading the other's results. The inputs may differ
otherwise: a layer norm's weight gradient (the sum of the output gradient times the normalized
input) and its bias gradient (the sum of the output gradient) are siblings. The merged op is
built where the earlier one was if the later one's operands are defined by then, else where the
later one was if every use of the earlier one comes after it. Inputs the two share (the same
value through the same map) are read once. `mergeable` lets a target keep some reductions apart
(the cuda target's row kernels take one result each), `alike_inputs` keeps siblings to those
whose inputs have the same maps and types, the rule the cpu target keeps: its loop of a layer
norm's two column sums measured no faster than the two loops (a GPT-2 4-layer training step on
a 2-core EPYC, medians of 15 steps, three runs each: 388-407 ms merged, 393-404 ms apart).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg

from .gpu.loopnest import affine_dims, linear_coefficient
from .walk import ops_where

_REDUCTION = "#linalg.iterator_type<reduction>"


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _n_inputs(op) -> int:
    return len(op.operands) - len(op.results)


def _candidate(op) -> bool:
    """A linalg.generic on tensors with a reduction loop and a flat body (its ops are copied as they are)."""
    return (op.name == "linalg.generic" and len(op.regions[0].blocks) == 1
            and all(isinstance(r.type, ir.RankedTensorType) for r in op.results)
            and any(str(t) == _REDUCTION for t in ir.ArrayAttr(op.attributes["iterator_types"]))
            and all(len(inner.operation.regions) == 0 for inner in op.regions[0].blocks[0].operations))


def _key(op, alike_inputs: bool) -> tuple:
    """What two siblings must have alike: iterator types, their outputs' maps and types, and with
    `alike_inputs` their inputs' maps and types too, in order."""
    n = 0 if alike_inputs else _n_inputs(op)
    return (str(op.attributes["iterator_types"]), tuple(str(m) for m in _maps(op)[n:]),
            tuple(str(v.type) for v in list(op.operands)[n:]))


def _reads(op) -> list[tuple]:
    """(value, map) of each input, in order."""
    return list(zip(list(op.operands)[:_n_inputs(op)], (str(m) for m in _maps(op))))


def _shared_inputs(a, b) -> list[int]:
    """Positions of a's inputs that b reads too, through the same map."""
    theirs = set(_reads(b))
    return [i for i, read in enumerate(_reads(a)) if read in theirs]


def _plain_dims(m: ir.AffineMap, shape=None) -> set[int]:
    """The loop dims m maps to a whole operand dim (of `shape`: only where that dim is dynamic)."""
    return {e.position for k, e in enumerate(m.results)
            if isinstance(e, ir.AffineDimExpr) and (shape is None or shape[k] == ir.ShapedType.get_dynamic_size())}


def _ranges(op) -> dict[int, int] | None:
    """Loop -> its size, read off the operand dims the loops index whole (None where a loop is
    bound to no such dim, or to two of different static sizes)."""
    ranges: dict[int, int] = {}
    for m, v in zip(_maps(op), op.operands):
        shape = ir.ShapedType(v.type).shape
        for k, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr):
                size = ranges.setdefault(e.position, shape[k])
                if size != shape[k] and ir.ShapedType.get_dynamic_size() not in (size, shape[k]):
                    return None
    return ranges if len(ranges) == _maps(op)[0].n_dims else None


def _same_ranges(a, b, shared: list[int]) -> bool:
    """Whether a's and b's loops have the same ranges: equal static sizes; a loop of a dynamic size
    must be bound to an input they share (the same value, so the same size)."""
    ra, rb = _ranges(a), _ranges(b)
    if ra is None or ra != rb:
        return False
    dynamic = {d for d, size in ra.items() if size == ir.ShapedType.get_dynamic_size()}
    return dynamic <= set().union(*(_plain_dims(_maps(a)[i]) for i in shared))


def uses_after(a, b) -> bool:
    """Every use of a's results sits after b in b's block: the merged op can stand where b does."""
    for result in a.results:
        for use in result.uses:
            user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
            if user.block != b.block or not b.is_before_in_block(user):
                return False
    return True


def _defined_before(b, a) -> bool:
    """Every operand of b is defined before a (or outside a's block): the merged op can stand where a does."""
    for v in b.operands:
        owner = v.owner
        if isinstance(owner, ir.Block):
            continue
        owner = owner.operation
        if owner.block == a.block and not owner.is_before_in_block(a):
            return False
    return True


def _site(a, b):
    """Where the merged op can be built (before a, else before b), or None where a and b depend on each other."""
    if a.block != b.block:
        return None
    return a if _defined_before(b, a) else b if uses_after(a, b) else None


def new_generic(inputs: list, outputs: list, maps: list, a, b, ip):
    """(generic, its empty body block): a linalg.generic of a's loops (iterator types) over
    inputs and outputs, at ip, located at both a's and b's graph nodes."""
    merged = linalg.GenericOp([v.type for v in outputs], inputs, outputs,
                              ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                              a.attributes["iterator_types"], ip=ip, loc=ir.Location.fused([a.location, b.location]))
    types = [ir.RankedTensorType(v.type).element_type for v in inputs + outputs]
    return merged, merged.regions[0].blocks.append(*types)


def copy_body(op, block: ir.Block, args: list[ir.Value]) -> list[ir.Value]:
    """op's region cloned into block, its block arguments read as args; returns what it yields."""
    mapping = dict(zip(op.regions[0].blocks[0].arguments, args))
    with ir.InsertionPoint(block):
        for inner in op.regions[0].blocks[0].operations:
            inner = inner.operation
            if inner.name == "linalg.yield":
                return [mapping.get(v, v) for v in inner.operands]
            copy = inner.clone()
            for i, v in enumerate(copy.operands):
                if v in mapping:
                    copy.operands[i] = mapping[v]
            mapping.update(zip(inner.results, copy.results))
    raise AssertionError(f"'{op.name}' has no linalg.yield")


def _merge(a, b, site) -> None:
    """One generic computing a's and b's results, built right before site; both erased."""
    maps, n_a, n_b = _maps(a), _n_inputs(a), _n_inputs(b)
    a_reads, b_reads = _reads(a), _reads(b)
    position = {read: i for i, read in enumerate(a_reads)}
    extra = [i for i, read in enumerate(b_reads) if read not in position]  # b's inputs a does not read so
    for k, i in enumerate(extra):
        position[b_reads[i]] = n_a + k
    ip = ir.InsertionPoint(site)
    inputs = list(a.operands)[:n_a] + [b_reads[i][0] for i in extra]
    outputs = list(a.operands)[n_a:] + list(b.operands)[n_b:]
    out_maps = maps[n_a:]
    all_maps = maps[:n_a] + [_maps(b)[i] for i in extra] + out_maps + out_maps
    merged, block = new_generic(inputs, outputs, all_maps, a, b, ip)
    args = list(block.arguments)
    n_in, n_out = len(inputs), len(a.results)
    a_args = args[:n_a] + args[n_in:n_in + n_out]
    b_args = [args[position[read]] for read in b_reads] + args[n_in + n_out:]
    yielded = copy_body(a, block, a_args) + copy_body(b, block, b_args)
    with ir.InsertionPoint(block):
        linalg.YieldOp(yielded)
    results = list(merged.results)
    for old, new in zip(list(a.results) + list(b.results), results):
        old.replace_all_uses_with(new)
    a.erase()
    b.erase()


def _one_merge(module: ir.Module, mergeable, alike_inputs: bool) -> bool:
    """Merge the first pair of siblings found; whether there was one."""
    groups: dict[tuple, list] = {}
    for op in ops_where(module, lambda op: _candidate(op) and mergeable(op)):
        groups.setdefault(_key(op, alike_inputs), []).append(op.operation)
    for ops in groups.values():
        for j, b in enumerate(ops):
            for a in ops[:j]:
                shared = _shared_inputs(a, b)
                site = _site(a, b) if shared and _same_ranges(a, b, shared) else None
                if site is not None:
                    _merge(a, b, site)
                    return True
    return False


def fuse_sibling_reductions(module: ir.Module, mergeable=lambda op: True, alike_inputs: bool = False) -> int:
    """Merge sibling reductions (module docstring) until none is left, among the generics
    `mergeable` accepts (with `alike_inputs`, only siblings whose inputs have the same maps and
    types); returns how many merges."""
    merges = 0
    while _one_merge(module, mergeable, alike_inputs):
        merges += 1
    return merges


def reads_rows_contiguously(op) -> bool:
    """Whether op reduces along its innermost loop and every input reads that loop, if at all,
    in its own last dim with a step of one (`i`, or a blocked row's `c * block + i`): a reduction
    of contiguous rows, which a GPU sums a block per row (one result a kernel), not a column
    sum's thread per output."""
    maps = _maps(op)
    inner = maps[0].n_dims - 1
    if str(ir.ArrayAttr(op.attributes["iterator_types"])[inner]) != _REDUCTION:
        return False
    for m in maps[:_n_inputs(op)]:
        for k, e in enumerate(m.results):
            if inner in affine_dims(e) and (k != len(m.results) - 1 or linear_coefficient(e, inner) != 1):
                return False
    return True
