"""A buffer that is only written, then copied whole into a view of another buffer: its writers
write that view instead, and the copy goes.

Why. A concatenation bufferizes into a buffer of its own per operand chain: in a training
step's attention backward, dq, dk and dv (written by attention_grad's call through transposed
views, to_gpu.fold_transposes_of_attention) are copied into a [B, L, 2E] buffer, which is
copied with dv into the [B, L, 3E] gradient of the fused qkv projection: four copy kernels a
layer moving 5 x 6 MB in GPT-2's AMP step (8 x 512 tokens), where the three gradients could
have been written where the last buffer holds them.

How. For `memref.copy %S, %V` where %S is an allocation B (or a reshape of B that only splits
dims) and every other use of B, through views, is a write before the copy that reads nothing
of B (a copy's target, a transpose's or fill's output, a library attention's result, a
linalg.generic's output its body does not read), and nothing between B's first use and the
copy touches the buffer %V views: B becomes %V's view (split back to B's shape), rebuilt
before B's first use, every view of B rebuilt on it. Run to a fixed point, a concatenation of
concatenations collapses into its last buffer.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import memref

from ..gpu.loopnest import VIEW_OPS, op_name, root_of
from ..sliced_reshapes import split_groups
from .host_ops import between, host_ops, output_of, touches
from .library_calls import ATTENTIONS, is_call, retype, written_operands
from .to_gpu import transposed_view

_REBUILT_VIEWS = ("memref.subview", "memref.expand_shape", "memref.transpose")


def forward_copies(func_op) -> int:
    """Every copy the module docstring describes, forwarded; returns how many."""
    count = 0
    while True:
        for op in host_ops(func_op):
            if op.name == "memref.copy" and _forward(op):
                count += 1
                break
        else:
            return count


def _users(value: ir.Value) -> list:
    return [use.owner.operation if hasattr(use.owner, "operation") else use.owner for use in value.uses]


def _source_buffer(copy) -> tuple[ir.Value, ir.Operation | None] | None:
    """(B, the reshape between B and the copy or None) for the copy's source."""
    source = copy.operands[0]
    reshape = None
    if op_name(source) == "memref.reshape":
        reshape = source.owner.operation
        if len(_users(source)) != 1:
            return None
        source = reshape.operands[0]
    if op_name(source) != "memref.alloc" or not ir.MemRefType(source.type).has_static_shape:
        return None
    t = ir.MemRefType(source.type)
    if t.layout != ir.MemRefType.get(t.shape, t.element_type).layout:
        return None
    return source, reshape


def _only_written(value: ir.Value, skip) -> list[ir.Operation] | None:
    """The ops that use `value` or views of it (all but `skip`), when every such use is a view
    _rebase rebuilds or a write that reads nothing of it; else None."""
    ops = []
    for user in _users(value):
        if user == skip or user.name == "memref.dealloc":
            continue
        if user.name in _REBUILT_VIEWS:
            if list(user.operands)[1:]:  # dynamic offsets or sizes
                return None
            inner = _only_written(user.results[0], skip)
            if inner is None:
                return None
            ops += [user, *inner]
        elif _overwrites(user, value):
            ops.append(user)
        else:
            return None
    return ops


def _overwrites(op, buffer: ir.Value) -> bool:
    """Whether `op` writes `buffer` and reads nothing of it."""
    if op.name in ("memref.copy", "linalg.transpose", "linalg.fill"):
        return output_of(op) == buffer and list(op.operands).count(buffer) == 1
    if any(is_call(op, kind) for kind in ATTENTIONS):
        return buffer in written_operands(op) and list(op.operands).count(buffer) == 1
    if op.name == "linalg.generic":
        view = op.opview
        outputs = list(view.outputs)
        if buffer in list(view.inputs) or buffer not in outputs:
            return False
        block = op.regions[0].blocks[0]
        arg = block.arguments[len(view.inputs) + outputs.index(buffer)]
        parallel = all("parallel" in str(t) for t in ir.ArrayAttr(op.attributes["iterator_types"]))
        return parallel and not list(arg.uses)
    return False


def _forward(copy) -> bool:
    found = _source_buffer(copy)
    if found is None:
        return False
    buffer, reshape = found
    target = copy.operands[1]
    dest = root_of(target)
    if dest == buffer:
        return False
    groups = None
    if reshape is not None:
        groups = split_groups(list(ir.MemRefType(target.type).shape), list(ir.MemRefType(buffer.type).shape))
        if groups is None:
            return False
    uses = _only_written(buffer, reshape if reshape is not None else copy)
    if not uses:
        return False
    block_ops = [o.operation for o in copy.block.operations]
    first = min(uses, key=block_ops.index)
    if any(block_ops.index(u) > block_ops.index(copy) for u in uses):
        return False
    chain = _view_chain(target, dest)
    if chain is None or not _available_at(dest, first, block_ops):
        return False
    region = _box(target, dest)
    if any(_may_overlap(o, dest, region) for o in between(first, copy)):
        return False
    with ir.InsertionPoint(first), copy.location:
        view = dest
        for op in chain:
            clone = op.clone()
            clone.operands[0] = view
            view = clone.results[0]
        if groups is not None:
            view = _expanded(view, groups, list(ir.MemRefType(buffer.type).shape))
        _rebase(buffer, view, keep=reshape if reshape is not None else copy)
    copy.erase()
    if reshape is not None:
        reshape.erase()
    for user in _users(buffer):  # deallocs
        user.erase()
    buffer.owner.erase()
    for op in reversed(chain):  # the copy's target views, read by nothing now
        if not list(op.results[0].uses):
            op.erase()
    return True


def _may_overlap(op, dest: ir.Value, region) -> bool:
    """Whether `op` may touch the part `region` of `dest` (a view op touches nothing itself; an
    operand whose box in `dest` is disjoint from `region` does not: dq's part of the
    concatenation, written by the call that writes the dk being forwarded)."""
    if op.name in VIEW_OPS or not touches(op, dest):
        return False
    for v in op.operands:
        if isinstance(v.type, ir.MemRefType) and root_of(v) == dest:
            other = _box(v, dest)
            if region is None or other is None or not _disjoint(region, other):
                return True
    return False


def _box(view: ir.Value, dest: ir.Value) -> tuple[list[int], list[int]] | None:
    """(offsets, sizes) in `dest`'s dims of the elements `view` reaches, when its chain from
    `dest` is unit-stride subviews followed by views that only rearrange them (expand,
    transpose); None where unknown."""
    chain = _view_chain(view, dest)
    if chain is None:
        return None
    shape = list(ir.MemRefType(dest.type).shape)
    offsets, sizes = [0] * len(shape), shape
    for op in chain:
        if op.name != "memref.subview":
            break
        steps = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        inner = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        new_sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        if steps != [1] * len(steps) or len(new_sizes) != len(shape):
            return None
        offsets, sizes = [o + i for o, i in zip(offsets, inner)], new_sizes
    else:
        return offsets, sizes
    rest = chain[chain.index(op):]
    return (offsets, sizes) if all(o.name != "memref.subview" for o in rest) else None


def _disjoint(a, b) -> bool:
    """Whether two boxes (offsets, sizes) share no element: apart in some dim."""
    return any(oa + sa <= ob or ob + sb <= oa for oa, sa, ob, sb in zip(a[0], a[1], b[0], b[1]))


def _view_chain(target: ir.Value, dest: ir.Value) -> list[ir.Operation] | None:
    """The static view ops from `dest` to `target`, in order; None if one has dynamic operands."""
    chain = []
    while target != dest:
        op = target.owner.operation
        if op.name not in VIEW_OPS or list(op.operands)[1:]:
            return None
        chain.append(op)
        target = op.operands[0]
    return chain[::-1]


def _available_at(dest: ir.Value, first, block_ops: list) -> bool:
    """Whether `dest` can be used at `first`: an argument, or an allocation (moved there)."""
    if isinstance(dest.owner, ir.Block):
        return True
    if op_name(dest) != "memref.alloc" or list(dest.owner.operation.operands):
        return False
    if block_ops.index(dest.owner.operation) > block_ops.index(first):
        dest.owner.move_before(first)
    return True


def _expanded(view: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    """`view` with its dims split into `shape` (groups[i]: the dims source dim i becomes)."""
    t = ir.MemRefType(view.type)
    strides, offset = t.get_strides_and_offset()
    new_strides = [0] * len(shape)
    for dim, group in enumerate(groups):
        stride = strides[dim]
        for j in reversed(group):
            new_strides[j] = stride
            stride *= shape[j]
    result = ir.MemRefType.get(shape, t.element_type, ir.StridedLayoutAttr.get(offset, new_strides))
    return memref.expand_shape(result, view, groups, [], shape)


def _rebase(old: ir.Value, new: ir.Value, keep) -> None:
    """Every use of `old` (but `keep`) reads `new`: views of it rebuilt on `new` (their types
    follow its layout), library calls pointed at the declaration of their new operand types."""
    for use in list(old.uses):
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if user == keep or user.name == "memref.dealloc":
            continue
        if user.name in _REBUILT_VIEWS:
            with ir.InsertionPoint(user), user.location:
                rebuilt = _rebuilt_view(user, new)
            _rebase(user.results[0], rebuilt, keep)
            user.erase()
        else:
            user.operands[use.operand_number] = new
            if user.name == "func.call":
                retype(user)


def _rebuilt_view(view, source: ir.Value) -> ir.Value:
    attrs = view.attributes
    if view.name == "memref.subview":
        return memref.subview(source, *(list(ir.DenseI64ArrayAttr(attrs[k]))
                                        for k in ("static_offsets", "static_sizes", "static_strides")))
    if view.name == "memref.transpose":
        permutation = [e.position for e in ir.AffineMapAttr(attrs["permutation"]).value.results]
        return transposed_view(source, permutation)
    groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(attrs["reassociation"])]
    return _expanded(source, groups, list(ir.MemRefType(view.results[0].type).shape))
