"""Elementwise loops over contiguous buffers with a narrow innermost dim, run as rows x one flat dim.

A convolution's weight is O x I x 3 x 3: an optimizer step over it (SGD's momentum, Adam's
moments) is an elementwise op whose innermost loop runs 3 times, too short for LLVM's
vectorizer, so the whole update ran scalar (ResNet-50's SGD step took 3.5x eager's time, 89% of
it in those loops). Where every operand is a contiguous buffer read and written through the same
identity map (or is a scalar), dims 1.. of the op are one contiguous range per row: the op is
rewritten over memref.collapse_shape views of shape d0 x (d1 * ... * dn) (no copies), whose
inner loop (O x 4608 for a 512 x 512 x 3 x 3 weight) vectorizes.

The first dim is kept, not folded in: the views keep rows (row i of the view is row i of the
buffer), so parallel.py still splits the op over d0 and still groups it with the nests over
the same rows (a momentum buffer's update and the parameter's update that reads it run chunk by
chunk in one parallel region, the buffer's rows still in cache). An op of rank 2 (a linear
layer's 64 x 10 weight) is one flat dim: a d0 x d1 view would change nothing.

Runs on buffers, after bufferization: a buffer's layout says whether it is contiguous, and the
op already writes its final destination (a parameter updated in place, a planned workspace).
Ops whose innermost dim is at least VECTOR_LANES wide keep their shape: their loops vectorize as
they are.
"""

from __future__ import annotations

import math

from torch_mlir import ir
from torch_mlir.dialects import linalg, memref

from ..walk import ops_where

# An innermost dim narrower than this is what leaves a loop unvectorized (16 f32 lanes of AVX-512).
VECTOR_LANES = 16
# A rank-2 op is made one flat loop only from this many elements (8 vectors): a 4 x 8 one gains
# nothing worth a view per buffer.
MIN_FLAT = 8 * VECTOR_LANES
_PARALLEL = "#linalg.iterator_type<parallel>"


def _identity(m: ir.AffineMap) -> bool:
    return m == ir.AffineMap.get_identity(m.n_dims)


def _contiguous(value: ir.Value) -> bool:
    """A static-shape buffer with the identity layout (its elements one dense range)."""
    if not isinstance(value.type, ir.MemRefType):
        return False
    t = ir.MemRefType(value.type)
    return t.has_static_shape and isinstance(t.layout, ir.AffineMapAttr) and _identity(t.layout.value)


def _scalar(value: ir.Value) -> bool:
    return not isinstance(value.type, ir.ShapedType) or value.type.rank == 0


def narrow_elementwise(op: ir.Operation) -> bool:
    """A linalg.generic on buffers of rank >= 3 (or of rank 2 and at least MIN_FLAT elements)
    with an innermost dim under VECTOR_LANES, every loop parallel, every operand a scalar or a
    contiguous buffer read through the identity map, its body free of linalg.index (which reads
    the dims the rewrite folds)."""
    if op.name != "linalg.generic" or op.results:
        return False
    iterators = list(op.attributes["iterator_types"])
    if len(iterators) < 2 or any(str(it) != _PARALLEL for it in iterators):
        return False
    shaped = [v for v in op.operands if not _scalar(v)]
    if not shaped or not all(_contiguous(v) for v in shaped):
        return False
    shape = ir.MemRefType(shaped[0].type).shape
    if shape[-1] >= VECTOR_LANES or (len(shape) == 2 and math.prod(shape) < MIN_FLAT):
        return False
    maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
    if not all(_identity(m) or not len(m.results) for m in maps):
        return False
    return not any(inner.operation.name == "linalg.index" for inner in op.regions[0].blocks[0].operations)


def _groups(rank: int) -> list:
    """The dims each dim of the view folds: d0 and the rest (rank >= 3), or all (rank 2)."""
    return [range(rank)] if rank == 2 else [[0], range(1, rank)]


def _rows_view(value: ir.Value, views: dict) -> ir.Value:
    """`value` (contiguous, rank >= 2) as d0 x (d1 * ... * dn), or flat for rank 2; one view per
    buffer and op."""
    if value not in views:
        t = ir.MemRefType(value.type)
        groups = _groups(t.rank)
        shape = [math.prod(t.shape[d] for d in dims) for dims in groups]
        reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)
                                                            for d in dims])
                                          for dims in groups])
        views[value] = memref.CollapseShapeOp(ir.MemRefType.get(shape, t.element_type), value, reassociation).result
    return views[value]


def _collapse_rows(op: ir.Operation) -> None:
    """Rewrite `op` (narrow_elementwise) over d0 x rest views (flat views for rank 2): the same
    body, 2-d (1-d) maps."""
    ins = len(op.opview.inputs)
    rank = len(_groups(len(list(op.attributes["iterator_types"]))))
    identity, scalar = ir.AffineMap.get_identity(rank), ir.AffineMap.get(rank, 0, [])
    with ir.InsertionPoint(op), op.location:
        views: dict = {}
        operands = [v if _scalar(v) else _rows_view(v, views) for v in op.operands]
        maps = [ir.AffineMapAttr.get(scalar if _scalar(v) else identity) for v in op.operands]
        parallel = ir.Attribute.parse(_PARALLEL)
        collapsed = linalg.GenericOp([], operands[:ins], operands[ins:], ir.ArrayAttr.get(maps),
                                ir.ArrayAttr.get([parallel] * rank))
    op.regions[0].blocks[0].append_to(collapsed.regions[0])
    op.erase()


def collapse_narrow_elementwise(module: ir.Module) -> int:
    """Rewrite every `narrow_elementwise` op of the module; returns how many."""
    targets = ops_where(module, narrow_elementwise)
    for op in targets:
        _collapse_rows(op)
    return len(targets)
