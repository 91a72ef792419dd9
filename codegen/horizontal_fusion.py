"""Small independent elementwise ops over the same loops merged into one linalg.generic.

A foreach optimizer step updates every parameter on its own: for GPT-2's AdamW, 148 step counts
(0-d), 74 layer-norm weights and biases of 768 elements, and 148 other parameters. Each update is
a kernel of its own on the cuda target; for a step count or a 768-element vector that kernel is
a launch of a microsecond or two whose work takes nanoseconds (148 step counts took 0.18 ms of an
H100's step, in CUDA-graph replays). Merged, one kernel makes several of them, each thread doing
its element of each. Large ops gain nothing from it (their launch is a small part of them) and
stay apart: only loops of at most MAX_ELEMENTS points are merged.

The rule is structural. linalg.generic ops on tensors with only parallel loops (or none), flat
bodies, identity output maps and static shapes, with the same loop ranges, taken in block order:
an op joins the group of earlier ones if every use of their results comes after it (so none of
them feeds it, and the merged op can stand where it is) and the merged op stays within
MAX_OPERANDS operands (kernel parameters). The merged op reads an input two members read with the
same map once.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg

from .sibling_reductions import copy_body, new_generic, uses_after
from .walk import ops_where

_PARALLEL = "#linalg.iterator_type<parallel>"
MAX_ELEMENTS = 1 << 14  # a 3072-element bias: its update is launch-bound on a GPU
MAX_OPERANDS = 64       # 512 bytes of kernel parameters


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _n_inputs(op) -> int:
    return len(op.operands) - len(op.results)


def _loops(op) -> tuple[int, ...] | None:
    """The loop ranges of a small elementwise generic (module docstring), else None."""
    if op.name != "linalg.generic" or len(op.regions[0].blocks) != 1 or not op.results:
        return None
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape for t in types):
        return None
    if any(len(inner.operation.regions) for inner in op.regions[0].blocks[0].operations):
        return None
    maps = _maps(op)
    if any(m != ir.AffineMap.get_identity(m.n_dims) for m in maps[_n_inputs(op):]):
        return None
    shape = tuple(ir.RankedTensorType(op.results[0].type).shape)
    size = 1
    for n in shape:
        size *= n
    return shape if size <= MAX_ELEMENTS else None


def _groups(module: ir.Module) -> list[list]:
    """Groups of at least two ops to merge, each in block order."""
    open_groups: dict[tuple, list] = {}
    done: list[list] = []
    for view in ops_where(module, lambda op: _loops(op) is not None):
        op = view.operation
        key = _loops(op)
        group = open_groups.get(key, [])
        operands = sum(len(m.operands) for m in group) + len(op.operands)
        if group and (group[0].block != op.block or operands > MAX_OPERANDS
                      or not all(uses_after(m, op) for m in group)):
            done.append(group)
            group = []
        open_groups[key] = group + [op]
    return [g for g in done + list(open_groups.values()) if len(g) > 1]


def _merge(group: list) -> None:
    """One generic computing every member's results, built right before the last member."""
    inputs, in_maps, outputs, out_maps, spans = [], [], [], [], []
    for op in group:
        maps, n = _maps(op), _n_inputs(op)
        at = []
        for v, m in zip(list(op.operands)[:n], maps[:n]):
            same = [k for k, (w, wm) in enumerate(zip(inputs, in_maps)) if w == v and wm == m]
            if not same:
                inputs.append(v)
                in_maps.append(m)
            at.append(same[0] if same else len(inputs) - 1)
        spans.append((at, len(outputs), len(op.results)))
        outputs.extend(list(op.operands)[n:])
        out_maps.extend(maps[n:])
    last = group[-1]
    merged, block = new_generic(inputs, outputs, in_maps + out_maps, last, group[0], ir.InsertionPoint(last))
    args = list(block.arguments)
    yielded = []
    for op, (at, first, count) in zip(group, spans):
        out_args = args[len(inputs) + first:len(inputs) + first + count]
        yielded += copy_body(op, block, [args[k] for k in at] + out_args)
    with ir.InsertionPoint(block):
        linalg.YieldOp(yielded)
    results = iter(merged.results)
    for op in group:
        for old in op.results:
            old.replace_all_uses_with(next(results))
    for op in group:
        op.erase()


def fuse_horizontally(module: ir.Module) -> int:
    """Merge small independent elementwise ops (module docstring); returns how many were merged away."""
    groups = _groups(module)
    with module.context:
        for group in groups:
            _merge(group)
    return sum(len(g) - 1 for g in groups)
