"""A tensor.pad of an elementwise op's result, written by that op straight into the padded tensor.

Why. One-shot bufferization makes a tensor.pad a fill of the whole padded buffer and a copy of
its source into it, so the source is written twice and read once more. The pads that
frontend/padded_matmuls.py puts before a half matmul are of [4096, 50257] matrices in AMP GPT-2
(the logits' gradient, the bf16 copy of the embedding): two extra passes over 400 MB each.

How. `pad(G)`, where G is a linalg.generic of parallel loops whose result has an identity map
and whose body does not read that result's init, becomes destination-passing style:

    %e = tensor.empty (padded shape)
    per padded dim, the slabs outside the source: %e = insert_slice(fill(extract_slice %e)) (zeros, or the pad value)
    %g = G with its init := extract_slice %e at the source's place
    %p = insert_slice %g into %e at that place

which bufferization does in place: G's kernel writes the padded buffer's interior, the fills
write only the border (a few columns), and G's other readers read its result as a view of the
padded buffer. A pad of anything else, or by a value other than a constant, is left as is.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg, tensor

from .recompute_producers import _PARALLEL
from .walk import ops_where


def fuse_pads_into_producers(module: ir.Module) -> int:
    """Every pad `_producer_result` accepts, rewritten (module docstring); returns how many."""
    pads = ops_where(module, lambda op: op.name == "tensor.pad" and _rewritable(op))
    for pad in pads:
        _rewrite(pad)
    return len(pads)


def _static(values) -> list[int] | None:
    values = list(values)
    return None if any(v == ir.ShapedType.get_dynamic_size() for v in values) else values


def _padding_constant(pad):
    """The arith.constant the pad's region yields, else None."""
    block = pad.regions[0].blocks[0]
    owner = list(block.operations)[-1].operands[0].owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    return owner.operation


def _producer_result(value: ir.Value):
    """(the generic, its result number) when `value` is a result G writes whole, in parallel
    loops, without reading its init, or a reshape of one to its own shape (left of a view
    there and back); else None."""
    owner = value.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "tensor.reshape" \
            and owner.operation.operands[0].type == value.type:
        value = owner.operation.operands[0]
        owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "linalg.generic":
        return None
    op = owner.operation
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    number = ir.OpResult(value).result_number
    inputs = len(op.operands) - len(op.results)
    amap = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[inputs + number]).value
    if not amap.is_permutation or any(ir.AffineDimExpr(e).position != i for i, e in enumerate(amap.results)):
        return None
    init_arg = op.regions[0].blocks[0].arguments[inputs + number]
    if list(init_arg.uses):
        return None
    return op, number


def _rewritable(pad) -> bool:
    source, result = pad.operands[0], pad.results[0]
    shapes = (_static(ir.RankedTensorType(source.type).shape), _static(ir.RankedTensorType(result.type).shape))
    return (None not in shapes and len(pad.operands) == 1  # static low/high: no operands but the source
            and _padding_constant(pad) is not None and _producer_result(source) is not None)


def _rewrite(pad) -> None:
    source, result = pad.operands[0], pad.results[0]
    producer, number = _producer_result(source)
    shape = list(ir.RankedTensorType(source.type).shape)
    padded_type = ir.RankedTensorType(result.type)
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    # At the producer, which G's other readers follow (they read the new G's result).
    at = ir.InsertionPoint(producer)
    value = _padding_constant(pad).clone(ip=at).results[0]
    with at, pad.location:
        padded = tensor.empty(list(padded_type.shape), padded_type.element_type)
        for offsets, sizes in _border(list(padded_type.shape), low, shape):
            part = _slice(padded, offsets, sizes)
            padded = _insert(linalg.fill(value, outs=[part]), padded, offsets, sizes)
        interior = _slice(padded, low, shape)
        inputs = len(producer.operands) - len(producer.results)
        writer = producer.clone(ip=at)
        writer.operands[inputs + number] = interior
        inserted = _insert(writer.results[number], padded, low, shape)
    result.replace_all_uses_with(inserted)
    pad.erase()
    for old, new in zip(producer.results, writer.results):
        old.replace_all_uses_with(new)
    producer.erase()


def _border(padded: list[int], low: list[int], shape: list[int]) -> list[tuple[list[int], list[int]]]:
    """(offsets, sizes) of slabs covering the padded shape outside the source's box, each
    element once: for dim d, the part before and after the box in d, within the box in the dims
    before d and whole in the dims after it."""
    slabs = []
    for d in range(len(padded)):
        inside = [(low[j], shape[j]) for j in range(d)]
        whole = [(0, padded[j]) for j in range(d + 1, len(padded))]
        for start, size in ((0, low[d]), (low[d] + shape[d], padded[d] - low[d] - shape[d])):
            if size:
                box = inside + [(start, size)] + whole
                slabs.append(([o for o, _ in box], [s for _, s in box]))
    return slabs


def _slice(x: ir.Value, offsets: list[int], sizes: list[int]) -> ir.Value:
    elem = ir.RankedTensorType(x.type).element_type
    return tensor.extract_slice(ir.RankedTensorType.get(sizes, elem), x, [], [], [], offsets, sizes,
                                [1] * len(sizes))


def _insert(part: ir.Value, into: ir.Value, offsets: list[int], sizes: list[int]) -> ir.Value:
    return tensor.insert_slice(part, into, [], [], [], offsets, sizes, [1] * len(sizes))
