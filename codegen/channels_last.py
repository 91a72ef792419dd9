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
   An elementwise op whose operands are all free twins (a gradient broadcast from a global
   pool's) is computed NHWC when an op moved reads it; one with as many operands in a chain as
   operands without a twin moves too, copying those (the max-pool gradient, NCHW, read by the
   first relu gradient). A convolution reading a permute we made, or any permute of an NHWC
   value to NCHW (an argument laid out channels-last, below), takes the permute's source: the
   pair cancels, and conv -> bn -> relu -> pool -> conv has no transpose in between. A
   convolution reading anything else copies it to NHWC (a graph input: the first convolution's
   image).
3. Permutes left with readers are where NCHW is really needed (graph outputs, the flatten
   before a linear, any op not listed above); those with none are erased.

Training graphs (`training_ratio`, the cpu target's; only where training_pays):
- the gradients `dynamo.conv_grad_input` / `conv_grad_weight` are candidates as convolutions
  are (the output gradient and the input NHWC; the input gradient NHWC, the weight gradient
  FCHW);
- a forward's saved activations (FREE_RESULTS, frontend/saved_layouts.py) are returned NHWC,
  the runtime handing them on as NCHW tensors with channels-last strides (NHWC_RESULTS), and
  the backward receives them as NHWC arguments with a permute to NCHW, which step 2 cancels;
- a convolution whose weight has an FHWC copy in the function (a saved weight's, or such an
  argument) reads that copy (`weight_layout = "fhwc"`), so torch does not make one per call.

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

import numpy as np
from torch_mlir import ir

from ..dialects import dynamo as dy
from ..dialects.elementwise import ELEMENTWISE
from .attributes import FREE_RESULTS, NHWC_RESULTS

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


# Candidate op -> its role, when `training` (keep_channels_last) admits it. A candidate's 4-d
# activations (operands and, for all but the weight gradient, its result) go NHWC.
CONVOLUTIONS = {"dynamo.conv2d": "conv", "dynamo.conv_grad_input": "grad_input",
                "dynamo.conv_grad_weight": "grad_weight"}
CANDIDATES = frozenset(CONVOLUTIONS.values())


def _role(op, training: bool = False) -> str | None:
    """What the pass may do with `op`: one of CANDIDATES (conv; with `training`, the gradients
    too), one of LAYOUT_FREE (computed in NHWC when an operand is), or None (reads NCHW)."""
    name = op.name
    if name in CONVOLUTIONS and (training or name == "dynamo.conv2d"):  # if the target's library takes it
        role = CONVOLUTIONS[name]
        return role if dy.layout_of(op) == "nchw" and _static4(op.operands[0]) else None
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
    return list(range(len(op.operands))) if role in ("elementwise", "grad_weight") else [0]


def _is_nchw_view(value) -> bool:
    """A permute of an NHWC value to NCHW (one this pass made, or one of an argument laid out
    channels-last: frontend/input_views.unpermute_inputs): its source is its NHWC twin."""
    return _name(value) == "dynamo.permute" and dy.int_list(_owner(value).perm) == dy.TO_NCHW


def _free(value) -> bool:
    """Whether an NHWC twin of NCHW `value` costs no copy (see _free_twin)."""
    if not _static4(value):
        return False
    owner = _owner(value)
    if _name(value) == "dynamo.constant":  # a splat (a resource blob is never one)
        try:
            return ir.DenseElementsAttr(owner.value).is_splat
        except ValueError:  # not dense elements
            return False
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


def _plan(ops: list, candidates: set[int], training: bool) -> tuple[set[int], set[int]]:
    """Steps 1-2 on sets: (the candidate convolutions in a chain, the layout-free ops that would
    move to NHWC), as positions in `ops`. A value's chain is the set of convolutions whose NHWC
    results it comes from (empty for an NHWC view of a value already NHWC: _is_nchw_view)."""
    chains: dict[ir.Value, frozenset] = {}  # NCHW value -> convolutions it has an NHWC twin from
    copied: set[ir.Value] = set()  # NCHW values copied to NHWC for a convolution
    lazy: dict[ir.Value, int] = {}  # value -> the elementwise op of free operands computing it
    chained, moved = set(), set()
    for k, op in enumerate(ops):
        role = _role(op, training)
        if role in CANDIDATES and k in candidates:
            for x in (op.operands[i] for i in _activations(op, role)):
                if x in chains:
                    chained |= chains[x] | {k}
                else:
                    copied.add(x)
            if role != "grad_weight":  # (whose result is a weight's gradient, FCHW)
                chains[op.results[0]] = frozenset({k})
        elif role in LAYOUT_FREE and _movable(op, role, chains, copied, lazy):
            _move(ops, k, role, chains, copied, lazy, moved)
        elif role == "elementwise" and all(v in lazy or _free(v) for v in op.operands):
            lazy[op.results[0]] = k
        elif op.name == "dynamo.permute" and _is_nchw_view(op.results[0]) and _static4(op.results[0]):
            chains[op.results[0]] = frozenset()
    return chained, moved


def _move(ops: list, k: int, role: str, chains: dict, copied: set, lazy: dict, moved: set) -> None:
    """Op k goes NHWC, with the lazy ops it reads (first); its activations that have no twin are
    copied to NHWC."""
    op = ops[k]
    for v in (op.operands[i] for i in _activations(op, role)):
        if v in lazy and lazy[v] not in moved:
            _move(ops, lazy[v], "elementwise", chains, copied, lazy, moved)
        elif v not in chains and v not in lazy and not _free(v):
            copied.add(v)
    moved.add(k)
    if role != "reduce":
        chains[op.results[0]] = frozenset().union(*(chains.get(v, ()) for v in op.operands))


def _movable(op, role: str, chains: dict, copied: set, lazy: dict) -> bool:
    """A layout-free op goes NHWC when an activation is in a chain and every one has a twin (in a
    chain, copied already, free, or lazy: computed NHWC too at no cost); an elementwise op also
    when the activations it would copy are no more than those in a chain (each would go back
    through a transpose otherwise: the first relu gradient reads the max-pool gradient, NCHW)."""
    operands = [op.operands[i] for i in _activations(op, role)]
    in_chain = sum(v in chains for v in operands)
    without = sum(not (v in chains or v in copied or v in lazy or _free(v)) for v in operands)
    return in_chain > 0 and (without == 0 or (role == "elementwise" and without <= in_chain))


def choose(ops: list, eligible, training: bool = False) -> tuple[set[int], set[int]]:
    """The convolutions to run channels-last and the ops moved with them (positions in `ops`):
    every candidate, then only those chained, until each one left is chained (dropping one may
    break another's chain). Positions, as the bindings' op objects do not outlive edits."""
    candidates = {k for k, op in enumerate(ops) if _role(op, training) in CANDIDATES and eligible(op)}
    while True:
        chained, moved = _plan(ops, candidates, training)
        if chained == candidates:
            return candidates, moved
        candidates = chained


# ----------------------------------------------------------------------------- the rewrite


class _Twins:
    """NCHW value -> its NHWC twin, built before the op being rewritten (every op of a function's
    body is in one block, in order, so a twin built at its first reader dominates the rest)."""

    def __init__(self, block: ir.Block):
        self.twin: dict[ir.Value, ir.Value] = {}
        self.copies = 0
        # FCHW weight -> its FHWC copy, where the function makes one (a training forward's saved
        # weights: frontend/saved_layouts.py)
        self.weights = {op.x: op.out for op in block.operations
                        if op.name == "dynamo.permute" and dy.int_list(op.perm) == dy.TO_NHWC and _static4(op.x)}

    def weight(self, value: ir.Value) -> ir.Value | None:
        """The FHWC twin of a convolution's FCHW weight, when one costs no copy."""
        return _owner(value).x if _is_nchw_view(value) else self.weights.get(value)

    def of(self, value: ir.Value) -> ir.Value:
        if value not in self.twin:
            if _is_nchw_view(value):
                self.twin[value] = _owner(value).x
            else:
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
    if role in CANDIDATES or role == "pool":
        attrs["layout"] = ir.StringAttr.get("nhwc")
    if role == "reduce":
        dims = sorted(NHWC_POSITION[d] for d in dy.int_list(op.dims))
        attrs["dims"] = ir.DenseI64ArrayAttr.get(dims)
    if role == "pad":
        for side in ("low", "high"):
            widths = dy.int_list(attrs[side])
            attrs[side] = ir.DenseI64ArrayAttr.get([widths[p] for p in dy.TO_NHWC])
    return attrs


def _rewrite(op, role: str, twins: _Twins) -> None:
    """`op` recomputed on the NHWC twins of its activations; its readers get the result back in
    NCHW (a permute, erased later if nothing needs it) or, for a reduce or a weight gradient,
    the same result."""
    with ir.InsertionPoint(op), op.location:
        operands, attributes = list(op.operands), _attributes(op, role)
        for i in _activations(op, role):
            operands[i] = twins.of(operands[i])
        weight = twins.weight(operands[1]) if role in ("conv", "grad_input") else None
        if weight is not None:  # torch would make the FCHW weight channels-last itself, each call
            operands[1], attributes["weight_layout"] = weight, ir.StringAttr.get("fhwc")
        result = op.results[0]
        nhwc = role not in ("reduce", "grad_weight")
        new = ir.Operation.create(op.name, results=[_nhwc_type(result) if nhwc else result.type], operands=operands,
                                  attributes=attributes).result
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


def _returned(ops: list, chosen: set[int], free: frozenset[int], training: bool) -> int:
    """How many 4-d values computed by the ops at `chosen` positions the function returns at
    positions not in `free` (each transposed back; a reduction's result, whose kept dims stay in
    order, and a weight's gradient, FCHW, need none)."""
    computed = {r for k in chosen if _role(ops[k], training) not in ("reduce", "grad_weight")
                for r in ops[k].results if _type(r).rank == 4}
    if not ops or ops[-1].name != "func.return":
        return 0
    return sum(v in computed for k, v in enumerate(ops[-1].operands) if k not in free)


def free_results(fn) -> frozenset[int]:
    """The results of `fn` its caller takes in whatever layout the code returns them in (the
    importer marks a training forward's saved activations: frontend/compile.py), when every type
    of its signature is static (only a static region's runtime allocates results strided)."""
    if FREE_RESULTS not in fn.attributes:
        return frozenset()
    kind = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    if not all(ir.RankedTensorType(t).has_static_shape for t in (*kind.inputs, *kind.results)
               if isinstance(t, ir.RankedTensorType)):
        return frozenset()
    return frozenset(dy.int_list(fn.attributes[FREE_RESULTS]))


def _return_nhwc(fn, block: ir.Block, free: frozenset[int], twins: _Twins) -> list[int]:
    """Each free result that is a permute of an NHWC value returned as that value instead (the
    runtime gives the caller the NCHW tensor with channels-last strides over its bytes: no
    transpose); the function's type updated. Returns their positions."""
    ret = block.operations[len(block.operations) - 1]
    done = []
    for k in sorted(free):
        value = ret.operands[k]
        if value in twins.twin and _is_nchw_view(value) and _owner(twins.twin[value]) is not None:
            ret.operands[k] = twins.twin[value]  # (never an argument: a function may not return one)
            done.append(k)
    if done:
        kind = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(kind.inputs), [v.type for v in ret.operands]))
    return done


def training_pays(activations: int, weights: int, ratio: float) -> bool:
    """Whether a training graph whose convolutions' activations and weights have these many
    elements runs channels-last (the cpu option channels_last_training: `ratio`). Each weight is
    made channels-last for the kernels, and its gradient made FCHW again, once a step, while
    what the channels-last kernels save grows with the activations."""
    return activations >= ratio * weights


def _sizes(ops: list) -> tuple[int, int]:
    """(activation elements, weight elements) over a function's static convolutions and
    gradients: each one's output (the output gradient for a gradient) and weight."""
    def count(v) -> int:
        return int(np.prod(_type(v).shape))
    activations = weights = 0
    for op in ops:
        if op.name in CONVOLUTIONS and all(_type(v).has_static_shape for v in (*op.operands, *op.results)):
            weight = op.results[0] if op.name == "dynamo.conv_grad_weight" else op.operands[1]
            activations += count(op.results[0] if op.name == "dynamo.conv2d" else op.operands[0])
            weights += count(weight)
    return activations, weights


def keep_channels_last(module: ir.Module, eligible, training_ratio: float | None = None) -> None:
    """Chained convolutions that `eligible(op)` says the target's library takes, and the ops
    between them, in NHWC (see the module docstring); before the convolutions become calls.
    `training_ratio` (a target whose runtime takes arguments and returns results channels-last:
    the cpu's): a training graph (convolution gradients, or free results) where training_pays
    has the convolution gradients as candidates too, and its free results (free_results)
    returned NHWC where they are computed so, which the module's NHWC_RESULTS lists; a training
    graph where it does not, or any with None, has neither."""
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        block = fn.regions[0].blocks[0]
        if not any(op.operation.name in CONVOLUTIONS for op in block.operations):
            continue  # (an optimizer's graph: building the op views alone cost 15 ms for 186 ops)
        ops = [op.opview for op in block.operations]
        training = training_ratio is not None and training_pays(*_sizes(ops), training_ratio)
        convs, moved = choose(ops, eligible, training)
        free = free_results(fn) if training else frozenset()
        if not convs or _returned(ops, convs | moved, free, training) >= len(convs):
            # Each returned NHWC value goes back through a transpose, but for a free result. A
            # training graph's forward returns its activations for the backward, one or more
            # per convolution: without free results it stays NCHW (ResNet-50's SGD step at
            # batch 2, `bench_models.py --scale --only train_resnet50_b2_sgd`, 2026-11-27:
            # 263.6 ms channels-last, 237.5 ms NCHW, eager 233.5). An inference graph returns
            # its logits, or a few feature maps of many convolutions.
            continue
        twins, chosen = _Twins(block), convs | moved
        for k, op in enumerate(ops):
            if k in chosen:
                _rewrite(op, _role(op, training), twins)
        nhwc = _return_nhwc(fn, block, free, twins) if free else []
        if nhwc:
            module.operation.attributes[NHWC_RESULTS] = ir.DenseI64ArrayAttr.get(nhwc)
        _erase_orphans(block)
        left = sum(op.name == "dynamo.permute" and dy.int_list(op.perm) == dy.TO_NCHW for op in block.operations)
        log.debug("channels_last: %d convolutions and %d ops in NHWC, %d copies to NHWC, %d back to NCHW, "
                  "%d results returned NHWC", len(convs), len(moved), twins.copies, left, len(nhwc))
