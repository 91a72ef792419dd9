"""Scalar math that every iteration of a loop computes alike, computed once before it, on tensors.

Elementwise fusion inlines a producer into its consumer's body, also when the producer is a
0-d tensor broadcast to every element. An optimizer step is the common case: Adam's bias
corrections, `1 - beta ** step` and its square root, are 0-d ops on the step counter, and after
fusion every element of every parameter computed two powf calls, a sqrt and three divisions of
its own (LLVM cannot hoist them: the step counter is loaded from a buffer the loop's stores may
alias, as far as it knows). Here, after fusion, the ops of a linalg.generic's body that read only
broadcast scalars (inputs whose indexing map names no loop) and values from outside the body
move into a 0-d linalg.generic placed before it, whose results the loop reads as broadcast
scalars. Only where an expensive op (a math function, a division) is among them: moving a cast
or an add would only add a buffer.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from .walk import ops_where

_CHEAP_MATH = ("math.absf", "math.absi", "math.copysign")


def _expensive(op) -> bool:
    name = op.operation.name
    return (name.startswith("math.") and name not in _CHEAP_MATH) or name in ("arith.divf", "arith.remf")


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _outside(value: ir.Value, body: ir.Block) -> bool:
    """Defined outside `body` (a constant or a value of the enclosing function)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return owner != body
    return owner.operation.parent != body.owner.operation


def _invariant_ops(op) -> list:
    """The body's pure arith/math ops whose operands are broadcast scalars, values from outside
    the body, or results of such ops, in order."""
    generic = op.opview
    body = op.regions[0].blocks[0]
    maps, args = _maps(op), list(body.arguments)
    invariant = {args[i] for i in range(len(generic.inputs))
                 if all(isinstance(e, ir.AffineConstantExpr) for e in maps[i].results)}
    found = []
    for o in body.operations:
        name = o.operation.name
        if not name.startswith(("arith.", "math.")) or len(o.operation.regions):
            continue
        if all(v in invariant or _outside(v, body) for v in o.operands):
            found.append(o)
            invariant.update(o.results)
    return found


def _hoist(op) -> bool:
    generic = op.opview
    maps = _maps(op)
    body = op.regions[0].blocks[0]
    if maps[0].n_dims == 0 or any(len(o.operation.regions) for o in body.operations):
        return False
    hoisted = _invariant_ops(op)
    if not any(_expensive(o) for o in hoisted):
        return False
    moved = {o.operation for o in hoisted}
    frontier = [r for o in hoisted for r in o.results if any(u.owner.operation not in moved for u in r.uses)]
    n_in = len(generic.inputs)
    args = list(body.arguments)
    read = [i for i in range(n_in) if any(u.owner.operation in moved for u in args[i].uses)]
    with ir.InsertionPoint(op), op.location:
        scalars = _scalar_generic(generic, maps, read, hoisted, frontier)
        _rebuild(op, scalars, frontier, moved)
    return True


def _clone(o, mapping: dict) -> ir.Operation:
    new = ir.Operation.create(o.operation.name, results=[r.type for r in o.results],
                              operands=[mapping.get(v, v) for v in o.operands],
                              attributes={n: o.operation.attributes[n] for n in o.operation.attributes})
    mapping.update(zip(o.results, new.results))
    return new


def _scalar_generic(generic, maps, read: list[int], hoisted: list, frontier: list) -> list[ir.Value]:
    """The hoisted ops as a 0-d linalg.generic over the scalar inputs they read; its results are
    the values the loop still uses."""
    args = list(generic.regions[0].blocks[0].arguments)
    ins = [generic.inputs[i] for i in read]
    outs = [tensor.empty([], v.type) for v in frontier]
    in_maps = [ir.AffineMap.get(0, 0, list(maps[i].results)) for i in read]
    out_maps = [ir.AffineMap.get(0, 0, [])] * len(frontier)
    op = linalg.GenericOp([o.type for o in outs], ins, outs,
                          ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in in_maps + out_maps]), ir.ArrayAttr.get([]))
    block = op.regions[0].blocks.append(*[args[i].type for i in read], *[v.type for v in frontier])
    mapping = dict(zip([args[i] for i in read], block.arguments))
    with ir.InsertionPoint(block):
        for o in hoisted:
            _clone(o, mapping)
        linalg.YieldOp([mapping[v] for v in frontier])
    return list(op.results)


def _rebuild(op, scalars: list[ir.Value], frontier: list, moved: set) -> None:
    """`op` again with `scalars` as broadcast inputs standing for `frontier`, the moved ops gone
    (and the inputs only they read)."""
    generic = op.opview
    maps = _maps(op)
    n_in, loops = len(generic.inputs), maps[0].n_dims
    old_args = list(op.regions[0].blocks[0].arguments)
    # An input only moved ops read goes; one read by nothing stays (it may give a loop its size).
    kept = [i for i in range(n_in) if not list(old_args[i].uses)
            or any(u.owner.operation not in moved for u in old_args[i].uses)]
    broadcast = [ir.AffineMap.get(loops, 0, [])] * len(scalars)
    new_maps = [maps[i] for i in kept] + broadcast + maps[n_in:]
    new = linalg.GenericOp([r.type for r in op.results], [*(generic.inputs[i] for i in kept), *scalars],
                           list(generic.outputs), ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
                           op.attributes["iterator_types"])
    for name in op.attributes:
        if name not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
            new.operation.attributes[name] = op.attributes[name]
    types = [old_args[i].type for i in kept] + [v.type for v in frontier] + [a.type for a in old_args[n_in:]]
    block = new.regions[0].blocks.append(*types)
    new_args = list(block.arguments)
    mapping = dict(zip([old_args[i] for i in kept], new_args[:len(kept)]))
    mapping.update(zip(frontier, new_args[len(kept):len(kept) + len(scalars)]))
    mapping.update(zip(old_args[n_in:], new_args[len(kept) + len(scalars):]))
    with ir.InsertionPoint(block):
        for o in op.regions[0].blocks[0].operations:
            if o.operation not in moved:
                _clone(o, mapping)
    for old, res in zip(op.results, new.results):
        old.replace_all_uses_with(res)
    op.erase()


def hoist_invariant_scalars(module: ir.Module) -> int:
    """Every linalg.generic on tensors: its expensive loop-invariant scalar math computed once
    before it (see the module's doc). Returns how many generics changed."""
    changed = 0
    with module.context, ir.Location.unknown():
        for op in ops_where(module, lambda o: o.name == "linalg.generic" and len(o.results) > 0):
            changed += _hoist(op)
    return changed
