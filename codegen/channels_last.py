"""Channels-last (NHWC) activations around a target's library convolutions, chosen per graph at
the dynamo level: the cpu target's (option `channels_last`, with `library_matmul`) and the cuda
target's (the same options; cuDNN's NHWC kernels are its tensor-core layout: one 3x3 convolution
of 32x256x56x56 on an H200 took 0.39 ms NHWC against 0.52 ms NCHW, and eager ResNet-50 at batch
32 4.6 against 7.0 ms; a one-off probe, 2026-11-28). Each target says which convolutions its
library takes (`eligible`).

Why on the cpu target: torch's convolution (cpu/library_conv.py) runs its channels-last kernel when its input is
channels-last, and oneDNN's NCHW path allocates megabyte reorder buffers each call (page faults,
heap.py). Converting layouts around each convolution costs what the kernel saves (library_conv.py
measured it), so the layout must hold from one convolution to the next, as inductor keeps it.

What (before library_conv.call_library_convs, on each function's top-level ops, in order):

1. A chosen 2-d convolution (the target's `eligible`; the cpu's: float, static; any groups,
   stride, padding, dilation) becomes `dynamo.conv2d {layout = "nhwc"}`: input and result NHWC (logical dims
   N, H, W, C), the weight FCHW as before. Its result goes back to NCHW through a
   `dynamo.permute` (TO_NCHW) for whatever reads it.
2. That permute is sunk through the layout-free ops that read it, each recomputed in NHWC with
   a permute after it in turn:
   - elementwise ops (dialects/elementwise.py's ELEMENTWISE, compare, select, cast) whose 4-d
     operands all have an NHWC twin: one computed so already, a per-channel parameter or scalar
     (a broadcast of [C] -> [1,C,1,1] -> NCHW becomes [C] -> [1,1,1,C] -> NHWC: reshapes and a
     broadcast, no copy), a splat constant, or a value already copied to NHWC for a convolution
     (a residual block's input);
   - `dynamo.pool2d` (max, avg, sum; any window) becomes `{layout = "nhwc"}`;
   - `dynamo.reduce` over dims whose kept dims stay in order (batch norm's per-channel sums over
     N, H, W in training, a global average pool over H, W): its result is the same tensor, so
     no permute follows it;
   - `dynamo.pad` (ceil_mode pooling pads first): its widths permuted.
   A convolution reading a permute we made takes the permute's NHWC source: the pair cancels,
   and conv -> bn -> relu -> pool -> conv has no transpose in between. A convolution reading
   anything else copies it to NHWC (a graph input: the first convolution's image).
3. Permutes left with readers are where NCHW is really needed (graph outputs, the flatten
   before a linear, any op not listed above); those with none are erased.

Which convolutions (the rule): those in a chain, i.e. whose NHWC input or result reaches another
chosen convolution through the ops of step 2 without a transpose. The choice is made before
rewriting, by running steps 1-2 over the function on sets of values (`_plan`), dropping
unchained convolutions until none is left. A lone convolution pays a transpose in and one out
for its kernel's gain. Measured (2026-11-24, this 2-core EPYC, torch 2.13, one thread, median of
60 calls, each configuration in its own process, 3 runs), conv 8x32x32x32 -> 64 channels, relu,
NHWC forced vs NCHW: with freed memory kept (retain_freed_memory) 4.8-5.2 vs 4.1-4.8 ms, a
loss; with malloc as it is (the default) 6.2-7.3 vs 10.6-10.8 ms, a gain that is all page
faults (oneDNN's NCHW path: ~2250 a call, NHWC 300-400), which are the allocator's matter
(heap.py), not the layout's. So the rule does not depend on the allocator: lone convolutions
stay NCHW. (A stem conv-bn-relu-maxpool before a flatten broke even with memory kept: its
image has 3 channels and the pool shrinks what goes back.)

On the benchmark CNN (3x conv-bn-relu-maxpool, 8x3x64x64) this leaves two transposes, the
image's and the last pool's; `bench_models.py --only cnn`: mlir/inductor 0.97-1.05 at 2 threads,
0.98-1.03 at one, against 0.85-0.93 without (library_conv.py's docstring has the figures).
"""

from __future__ import annotations

import logging

from torch_mlir import ir

from ..dialects import dynamo as dy
from ..dialects.elementwise import ELEMENTWISE

log = logging.getLogger("dynamo_mlir")

ELEMENTWISE_OPS = frozenset({f"dynamo.{name}" for name in ELEMENTWISE} | {"dynamo.compare", "dynamo.select", "dynamo.cast"})
NHWC_POSITION = [dy.TO_NHWC.index(d) for d in range(4)]  # NCHW dim d is NHWC dim NHWC_POSITION[d]
# Ops the rewrite may leave unread (a parameter's old broadcast, a permute every reader of
# which was rewritten): erased at the end.
ORPHANS = ("dynamo.permute", "dynamo.broadcast", "dynamo.reshape", "dynamo.constant")


# ----------------------------------------------------------------------------- shapes


def _type(value) -> ir.RankedTensorType:
    return ir.RankedTensorType(value.type)


def _static4(value) -> bool:
    t = _type(value)
    return t.rank == 4 and t.has_static_shape


def _nhwc_type(value) -> ir.RankedTensorType:
    t = _type(value)
    return ir.RankedTensorType.get([t.shape[p] for p in dy.TO_NHWC], t.element_type)


def _keeps_order(shape) -> bool:
    """Whether NCHW `shape`'s non-unit dims keep their order in NHWC: then the NHWC tensor has
    the same elements in the same order, a reshape."""
    positions = [NHWC_POSITION[d] for d, size in enumerate(shape) if size != 1]
    return positions == sorted(positions)


def _owner(value):
    """The op defining `value`, None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.opview


def _name(value) -> str | None:
    owner = _owner(value)
    return owner.name if owner is not None else None


def _kept_in_order(op) -> bool:
    """A dynamo.reduce whose kept dims stay in order in NHWC: its result is the same either way."""
    dims = dy.int_list(op.dims)
    kept = [NHWC_POSITION[d] for d in range(4) if d not in dims]
    return kept == sorted(kept)


# ----------------------------------------------------------------------------- which ops


def _role(op) -> str | None:
    """What the pass may do with `op`: "conv" (a candidate), one of LAYOUT_FREE (computed in NHWC
    when an operand is), or None (reads NCHW)."""
    name = op.name
    if name == "dynamo.conv2d":  # a candidate if the target's library takes it (choose)
        return "conv" if dy.layout_of(op) == "nchw" and _static4(op.x) else None
    if name in ELEMENTWISE_OPS:
        return "elementwise" if all(_static4(v) for v in (*op.operands, *op.results)) else None
    if name == "dynamo.pool2d":
        return "pool" if dy.layout_of(op) == "nchw" and _static4(op.x) and _static4(op.out) else None
    if name == "dynamo.reduce":
        return "reduce" if _static4(op.x) and _kept_in_order(op) else None
    if name == "dynamo.pad":  # ceil_mode pooling pads first
        return "pad" if _static4(op.x) and _static4(op.out) else None
    return None


LAYOUT_FREE = ("elementwise", "pool", "reduce", "pad")


def _activations(op, role: str) -> list[int]:
    """The operands (positions) that are 4-d activations: the ones given an NHWC twin."""
    return list(range(len(op.operands))) if role == "elementwise" else [0]


def _free(value) -> bool:
    """Whether an NHWC twin of NCHW `value` costs no copy (see _free_twin)."""
    if not _static4(value):
        return False
    owner = _owner(value)
    if _name(value) == "dynamo.constant":  # a splat (a resource blob is never one)
        return ir.DenseElementsAttr.isinstance(owner.value) and ir.DenseElementsAttr(owner.value).is_splat
    if _name(value) == "dynamo.broadcast":
        return _broadcast_source_shape(owner) is not None
    return _keeps_order(_type(value).shape)


def _broadcast_source_shape(op) -> list[int] | None:
    """The NHWC shape a broadcast's operand is reshaped to (its dims, ones between), when that
    is a reshape; None otherwise."""
    src = _type(op.x)
    if not src.has_static_shape:
        return None
    expanded = [1] * 4
    for i, d in enumerate(dy.int_list(op.dims)):
        expanded[d] = src.shape[i]
    return [expanded[p] for p in dy.TO_NHWC] if _keeps_order(expanded) else None


# ----------------------------------------------------------------------------- the choice


def _plan(ops: list, candidates: set[int]) -> tuple[set[int], set[int]]:
    """Steps 1-2 on sets: (the candidate convolutions in a chain, the layout-free ops that would
    move to NHWC), as positions in `ops`. A value's chain is the set of convolutions whose NHWC
    results it comes from."""
    chains: dict[ir.Value, frozenset] = {}  # NCHW value -> convolutions it has an NHWC twin from
    copied: set[ir.Value] = set()  # NCHW values copied to NHWC for a convolution
    chained, moved = set(), set()
    for k, op in enumerate(ops):
        role = _role(op)
        if role == "conv" and k in candidates:
            x = op.operands[0]
            if x in chains:
                chained |= chains[x] | {k}
            else:
                copied.add(x)
            chains[op.results[0]] = frozenset({k})
        elif role in LAYOUT_FREE and _movable(op, role, chains, copied):
            moved.add(k)
            if role != "reduce":
                chains[op.results[0]] = frozenset().union(*(chains.get(v, ()) for v in op.operands))
    return chained, moved


def _movable(op, role: str, chains: dict, copied: set) -> bool:
    """A layout-free op goes NHWC when an activation is in a chain and every one has a twin."""
    operands = [op.operands[i] for i in _activations(op, role)]
    return (any(v in chains for v in operands)
            and all(v in chains or v in copied or _free(v) for v in operands))


def choose(ops: list, eligible) -> tuple[set[int], set[int]]:
    """The convolutions to run channels-last and the ops moved with them (positions in `ops`):
    every candidate, then only those chained, until each one left is chained (dropping one may
    break another's chain). Positions, as the bindings' op objects do not outlive edits."""
    candidates = {k for k, op in enumerate(ops) if _role(op) == "conv" and eligible(op)}
    while True:
        chained, moved = _plan(ops, candidates)
        if chained == candidates:
            return candidates, moved
        candidates = chained


# ----------------------------------------------------------------------------- the rewrite


class _Twins:
    """NCHW value -> its NHWC twin, built before the op being rewritten (every op of a function's
    body is in one block, in order, so a twin built at its first reader dominates the rest)."""

    def __init__(self):
        self.twin: dict[ir.Value, ir.Value] = {}
        self.copies = 0

    def of(self, value: ir.Value) -> ir.Value:
        if value not in self.twin:
            self.twin[value] = _free_twin(value) if _free(value) else self._copy(value)
        return self.twin[value]

    def _copy(self, value: ir.Value) -> ir.Value:
        self.copies += 1
        return dy.PermuteOp(value, out=_nhwc_type(value), perm=ir.DenseI64ArrayAttr.get(dy.TO_NHWC)).out


def _reshaped(value: ir.Value, shape: list[int]) -> ir.Value:
    """`value` reshaped (reshapes of reshapes read their first source)."""
    while _name(value) == "dynamo.reshape":
        value = _owner(value).x
    t = _type(value)
    if list(t.shape) == list(shape):
        return value
    return dy.ReshapeOp(value, out=ir.RankedTensorType.get(shape, t.element_type)).out


def _free_twin(value: ir.Value) -> ir.Value:
    """The NHWC twin of a value _free accepts: a splat, a broadcast of a reshaped operand, or a
    reshape."""
    owner, out = _owner(value), _nhwc_type(value)
    if _name(value) == "dynamo.constant":
        splat = ir.DenseElementsAttr(owner.value).get_splat_value()
        return dy.ConstantOp(ir.DenseElementsAttr.get_splat(out, splat), out=out).out
    if _name(value) == "dynamo.broadcast":
        source = _reshaped(owner.x, _broadcast_source_shape(owner))
        return dy.BroadcastOp(source, out=out, dims=ir.DenseI64ArrayAttr.get(list(range(4)))).out
    return _reshaped(value, list(out.shape))


def _attributes(op, role: str) -> dict:
    attrs = {name: op.operation.attributes[name] for name in op.operation.attributes}
    if role in ("conv", "pool"):
        attrs["layout"] = ir.StringAttr.get("nhwc")
    if role == "reduce":
        dims = sorted(NHWC_POSITION[d] for d in dy.int_list(op.dims))
        attrs["dims"] = ir.DenseI64ArrayAttr.get(dims)
    if role == "pad":
        for side in ("low", "high"):
            widths = dy.int_list(attrs[side])
            attrs[side] = ir.DenseI64ArrayAttr.get([widths[p] for p in dy.TO_NHWC])
    return attrs


def _rewrite(op, twins: _Twins) -> None:
    """`op` recomputed on the NHWC twins of its activations; its readers get the result back in
    NCHW (a permute, erased later if nothing needs it) or, for a reduce, the same result."""
    role = _role(op)
    with ir.InsertionPoint(op), op.location:
        operands = list(op.operands)
        for i in _activations(op, role):
            operands[i] = twins.of(operands[i])
        result = op.results[0]
        nhwc = role != "reduce"
        new = ir.Operation.create(op.name, results=[_nhwc_type(result) if nhwc else result.type], operands=operands,
                                  attributes=_attributes(op, role)).result
        if nhwc:
            back = dy.PermuteOp(new, out=result.type, perm=ir.DenseI64ArrayAttr.get(dy.TO_NCHW)).out
            twins.twin[back] = new
            new = back
    result.replace_all_uses_with(new)
    op.erase()


def _erase_orphans(block: ir.Block) -> None:
    for op in reversed(list(block.operations)):
        if op.name in ORPHANS and all(not list(r.uses) for r in op.results):
            op.erase()


def _returned(ops: list, chosen: set[int]) -> int:
    """How many 4-d values computed by the ops at `chosen` positions the function returns (each
    transposed back; a reduction's result, whose kept dims stay in order, needs none)."""
    computed = {r for k in chosen for r in ops[k].results if _type(r).rank == 4}
    return sum(v in computed for v in ops[-1].operands) if ops and ops[-1].name == "func.return" else 0


def keep_channels_last(module: ir.Module, eligible) -> None:
    """Chained convolutions that `eligible(op)` says the target's library takes, and the ops
    between them, in NHWC (see the module docstring); before the convolutions become calls."""
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        block = fn.regions[0].blocks[0]
        if not any(op.operation.name == "dynamo.conv2d" for op in block.operations):
            continue  # (an optimizer's graph: building the op views alone cost 15 ms for 186 ops)
        ops = [op.opview for op in block.operations]
        convs, moved = choose(ops, eligible)
        if not convs or _returned(ops, convs | moved) >= len(convs):
            # Each returned NHWC value goes back through a transpose. A training graph's forward
            # returns its activations for the backward, one or more per convolution: it stays
            # NCHW (ResNet-50's SGD step at batch 2, `bench_models.py --scale --only
            # train_resnet50_b2_sgd`, 2026-11-27: 263.6 ms channels-last, 237.5 ms NCHW, eager
            # 233.5). An inference graph returns its logits, or a few feature maps of many convolutions.
            continue
        twins, chosen = _Twins(), convs | moved
        for k, op in enumerate(ops):
            if k in chosen:
                _rewrite(op, twins)
        _erase_orphans(block)
        left = sum(op.name == "dynamo.permute" and dy.int_list(op.perm) == dy.TO_NCHW for op in block.operations)
        log.debug("channels_last: %d convolutions and %d ops in NHWC, %d copies to NHWC, %d back to NCHW",
                  len(convs), len(moved), twins.copies, left)
