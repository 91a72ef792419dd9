"""A reshape between two elementwise ops moved above the first, on tensors, before fusion.

A linear layer's output is a matmul over rows of [B*L, N], its bias add on the same 2-D rows,
then a view as [B, L, N] for what follows (GELU, a residual add). The view lowers to
`tensor.reshape`, which upstream elementwise fusion does not see through, so the bias add and
the GELU were two kernels, the [B*L, N] sum written and read back between them (GPT-2 small's
length sweep on an H200: two kernels of 1.3 ms each, launched once a layer and length, by their
counts these two; after this pass one kernel of 1.36 ms). Upstream's reshape propagation
(`collapse_shape` / `expand_shape` folded by expansion) would fuse them, but it also expands
the matmul into a generic, which is then no library call and fuses whole layer norms into its
inner loop.

So here only elementwise producers move: `reshape(g(x, bias))` becomes `g'(reshape(x), bias)`,
g' the same body over the reshaped loops, when
- g is an all-parallel linalg.generic with one result, used only by the reshape, whose body does
  not read loop indices and whose output is indexed by the identity map;
- every user of the reshape is a linalg.generic (what elementwise fusion then fuses g' into);
- the reshape only splits dims (an `expand_shape` in all but name: `reassociation` finds the
  groups), and every operand of g that is not read whole (its map not the identity) indexes only
  dims the reshape keeps as they are, so its map carries over (a bias indexed by the column).
Operands read whole are reshaped themselves (a view of the same elements); the move repeats up a
chain of such producers and stops at anything else (the matmul keeps its 2-D result).

The other way round, a reshape that merges dims (a layer norm's [B, L, E] rows viewed as the
[B*L, E] operand of a matmul) moves below an elementwise consumer that reads it alone (AMP's cast
of those rows to bf16): the cast then fuses into the norm's kernel, which writes the bf16 rows
only, not float32 rows a second kernel reads back (twice a layer in GPT-2's AMP step). So does
one that only adds unit dims (a bias gradient's column sum viewed as [1, N] before its cast).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from .walk import ops_where

_PARALLEL = "#linalg.iterator_type<parallel>"
_DYN = ir.ShapedType.get_dynamic_size()


def _run(big: list[int], start: int, stop: int, step: int, want: int) -> int | None:
    """The end (exclusive, in `step`'s direction) of the static dims of `big` from `start` whose
    product is `want`, or None."""
    product, i = 1, start
    while i != stop and product < want and big[i] != _DYN:
        product *= big[i]
        i += step
    return i if product == want and i != start else None


def reassociation(src: list[int], dst: list[int]) -> list[list[int]] | None:
    """The groups of dims of the longer of two shapes, one per dim of the shorter, when a reshape
    between them only merges or splits adjacent dims; else None.

    Static dims are matched from both ends; what is left in the middle must be one dim of the
    shorter shape (its group: every middle dim of the longer one) or unit dims of the longer one
    (added to a neighbouring group). A group holds a dynamic dim on both sides or on neither;
    zero-size dims are refused."""
    big, small = (src, dst) if len(src) > len(dst) else (dst, src)
    if len(big) == len(small) or not small or 0 in big or 0 in small:
        return None
    head, i = [], 0
    for want in small:
        end = _run(big, i, len(big), 1, want) if want != _DYN else None
        if end is None:
            break
        head.append(list(range(i, end)))
        i = end
    tail, k = [], len(big) - 1
    for want in reversed(small[len(head):]):
        end = _run(big, k, i - 1, -1, want) if want != _DYN else None
        if end is None:
            break
        tail.insert(0, list(range(end + 1, k + 1)))
        k = end
    middle, left = list(range(i, k + 1)), len(small) - len(head) - len(tail)
    if left == 1 and middle:
        groups = head + [middle] + tail
    elif left == 0 and all(big[d] == 1 for d in middle):
        groups = head + tail
        if middle:  # adjacent to the head's last group, else to the tail's first
            at = len(head) - 1 if head else 0
            groups[at] = sorted(groups[at] + middle)
    else:
        return None
    if any((small[j] == _DYN) != any(big[d] == _DYN for d in g) for j, g in enumerate(groups)):
        return None
    return groups


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _carried(amap: ir.AffineMap, groups: list[list[int]]) -> ir.AffineMap | None:
    """`amap` (of an operand not read whole) over the reshaped loops, or None: each dim it reads
    must be one the reshape leaves alone (a group of one)."""
    exprs = []
    for e in amap.results:
        if isinstance(e, ir.AffineConstantExpr):
            exprs.append(e)
        elif isinstance(e, ir.AffineDimExpr) and len(groups[e.position]) == 1:
            exprs.append(ir.AffineDimExpr.get(groups[e.position][0]))
        else:
            return None
    return ir.AffineMap.get(sum(map(len, groups)), 0, exprs)


def _elementwise_producer(reshape) -> ir.Operation | None:
    g = reshape.operands[0].owner
    if isinstance(g, ir.Block) or g.name != "linalg.generic" or len(g.results) != 1:
        return None
    if len(list(g.results[0].uses)) != 1:
        return None
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(g.attributes["iterator_types"])):
        return None
    if _maps(g)[-1] != ir.AffineMap.get_identity(_maps(g)[-1].n_dims):
        return None
    if any(o.operation.name == "linalg.index" for o in g.regions[0].blocks[0].operations):
        return None
    return g


def _plan(reshape) -> tuple[ir.Operation, list] | None:
    """(the producer, each input's new map or None where it is reshaped) if `reshape` moves."""
    if not all(use.owner.name == "linalg.generic" for use in reshape.results[0].uses):
        return None
    g = _elementwise_producer(reshape)
    if g is None:
        return None
    src, dst = ir.RankedTensorType(reshape.operands[0].type), ir.RankedTensorType(reshape.results[0].type)
    if dst.rank <= src.rank:
        return None  # merging dims: nothing to fuse it for (a matmul's operand)
    groups = reassociation(list(src.shape), list(dst.shape))
    if groups is None:
        return None
    identity = ir.AffineMap.get_identity(src.rank)
    n_inputs = len(g.operands) - 1
    plans = []
    for amap in _maps(g)[:n_inputs]:
        if amap == identity:
            plans.append(None)
            continue
        carried = _carried(amap, groups)
        if carried is None:
            return None
        plans.append(carried)
    return g, plans


def _reshaped(value: ir.Value, like: ir.RankedTensorType, shape: ir.Value) -> ir.Value:
    element = ir.RankedTensorType(value.type).element_type
    return tensor.reshape(ir.RankedTensorType.get(like.shape, element), value, shape)


def _hoist(reshape, g, plans) -> None:
    out_type = ir.RankedTensorType(reshape.results[0].type)
    shape = reshape.operands[1]
    rank = out_type.rank
    operands = list(g.operands)
    # Both locations: stats() reads the FX nodes a module computes off them (the add and the view).
    with ir.InsertionPoint(reshape), ir.Location.fused([g.location, reshape.location]):
        inputs = [_reshaped(v, out_type, shape) if p is None else v for v, p in zip(operands[:-1], plans)]
        init = _reshaped(operands[-1], out_type, shape)
        maps = [ir.AffineMap.get_identity(rank) if p is None else p for p in plans] + [ir.AffineMap.get_identity(rank)]
        new = linalg.GenericOp([out_type], inputs, [init], ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                               ir.ArrayAttr.get([ir.Attribute.parse(_PARALLEL)] * rank))
    _move_body(g, new)
    reshape.results[0].replace_all_uses_with(new.results[0])
    reshape.erase()
    g.erase()


def _move_body(old_op, new_op) -> None:
    """The payload of `old_op` moved into `new_op` (the same block arguments)."""
    old_block = old_op.regions[0].blocks[0]
    block = new_op.regions[0].blocks.append(*[a.type for a in old_block.arguments])
    for old, arg in zip(old_block.arguments, block.arguments):
        old.replace_all_uses_with(arg)
    at = ir.InsertionPoint(block)
    for op in list(old_block.operations):
        at.insert(op.operation.detach_from_parent())


def hoist_reshapes(module: ir.Module) -> int:
    """Every movable reshape of `module` moved above its producer, repeatedly, then every one
    that merges dims (or adds unit dims) below a consumer that reads it alone (`_sinkable`),
    repeatedly; returns how many moves were made."""
    moved = 0
    while True:
        plans = [(r, _plan(r)) for r in ops_where(module, lambda op: op.name == "tensor.reshape")]
        plans = [(r, p) for r, p in plans if p is not None]
        if not plans:
            break
        reshape, (g, inputs) = plans[0]  # one at a time: a move changes what the others see
        with module.context:
            _hoist(reshape, g, inputs)
        moved += 1
    while True:  # repeatedly: a sunk reshape may sink below the next cast too
        sinkable = ops_where(module, lambda op: op.name == "tensor.reshape" and _sinkable(op) is not None)
        if not sinkable:
            return moved
        with module.context:
            _sink(sinkable[0], _sinkable(sinkable[0]))
        moved += 1


def _sinkable(reshape) -> ir.Operation | None:
    """The consumer `reshape` (static, merging dims or adding unit dims) moves below: its only user, an all-parallel
    linalg.generic with one result whose only tensor input is the reshape, every map the
    identity, and no read of loop indices or of its init. A layer norm's rows [B, L, E] merged into the [B*L, E] operand of a
    matmul, then cast to its half type: the cast moves above the merge, where elementwise fusion
    makes it part of the norm's kernel, and the float32 rows are not written."""
    uses = list(reshape.results[0].uses)
    if len(uses) != 1 or uses[0].owner.name != "linalg.generic":
        return None
    src, dst = ir.RankedTensorType(reshape.operands[0].type), ir.RankedTensorType(reshape.results[0].type)
    if not (src.has_static_shape and dst.has_static_shape):
        return None  # symbolic sizes: the result reshaped into its out-param would be a copy
        # (codegen/result_copies.py writes only the op's own result)
    if dst.rank >= src.rank and not _adds_unit_dims(list(src.shape), list(dst.shape)):
        return None  # a split moves up instead (_plan)
    c = uses[0].owner.operation
    n_inputs = len(c.operands) - len(c.results)
    if len(c.results) != 1 or n_inputs != 1 or uses[0].operand_number != 0:
        return None
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(c.attributes["iterator_types"])):
        return None
    if any(m != ir.AffineMap.get_identity(m.n_dims) for m in _maps(c)):
        return None
    block = c.regions[0].blocks[0]
    if list(block.arguments[-1].uses) or any(o.operation.name == "linalg.index" for o in block.operations):
        return None
    return c


def _adds_unit_dims(src: list[int], dst: list[int]) -> bool:
    """Whether a reshape from src to dst only adds unit dims (a column sum's [768] viewed as the
    [1, 768] that sum(0, keepdim=True) returns): nothing above it to move it to (a reduction), so
    it moves below its cast instead, which then joins the reduction's kernel."""
    return [s for s in src if s != 1] == [s for s in dst if s != 1]


def _sink(reshape, c) -> None:
    src = ir.RankedTensorType(reshape.operands[0].type)
    out = ir.RankedTensorType(c.results[0].type)
    # At the reshape, right after what it reshapes: the row fusion groups ops in program order.
    with ir.InsertionPoint(reshape), ir.Location.fused([reshape.location, c.location]):
        result_type = ir.RankedTensorType.get(src.shape, out.element_type)
        init = tensor.empty(list(src.shape), out.element_type)  # static (_sinkable)
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(src.rank))
        new = linalg.GenericOp([result_type], [reshape.operands[0]], [init], ir.ArrayAttr.get([identity, identity]),
                               ir.ArrayAttr.get([ir.Attribute.parse(_PARALLEL)] * src.rank))
        moved = tensor.reshape(out, new.results[0], reshape.operands[1])
    _move_body(c, new)
    c.results[0].replace_all_uses_with(moved)
    c.erase()
    reshape.erase()
