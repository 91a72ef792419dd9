"""Shape ops -> linalg.broadcast-like generics, tensor.reshape, linalg.transpose, slices, pads."""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const
from .common import PARALLEL, affine_map, empty, generic, identity, ranked

INDEX = ir.IndexType


@register_lowering(dy.BroadcastOp)
def _lower_broadcast(op):
    src, out = ranked(op.x), ranked(op.out)
    dims = dy.int_list(op.dims)
    # Operand dim i reads result dim dims[i], or index 0 where it is a size-1 dim being stretched.
    exprs = [None if (src.shape[i] == 1 and out.shape[d] != 1) else d for i, d in enumerate(dims)]
    dim_map = {d: i for i, d in enumerate(dims)}
    if not out.has_static_shape and any(s == ir.ShapedType.get_dynamic_size() and d not in dim_map for d, s in enumerate(out.shape)):
        raise NotImplementedError("broadcast to a new dynamic dim needs the size as an operand")
    init = empty(out, op.x, dim_map)
    return generic([op.x], [init], [affine_map(out.rank, exprs), identity(out.rank)],
                   [PARALLEL] * out.rank, lambda x, _: [x])[0]


def _unit_dim_map(src: ir.RankedTensorType, out: ir.RankedTensorType) -> dict[int, int] | None:
    """Result dim -> source dim when the reshape only inserts/removes size-1 dims."""
    keep_src = [i for i, s in enumerate(src.shape) if s != 1]
    keep_out = [i for i, s in enumerate(out.shape) if s != 1]
    if len(keep_src) != len(keep_out):
        return None
    dyn = ir.ShapedType.get_dynamic_size()
    if any(src.shape[a] != out.shape[b] and dyn not in (src.shape[a], out.shape[b]) for a, b in zip(keep_src, keep_out)):
        return None
    return dict(zip(keep_out, keep_src))


def _shape_tensor(op_out: ir.RankedTensorType, source: ir.Value):
    i64 = ir.IntegerType.get_signless(64)
    sizes, unit_map = [], None
    for i, s in enumerate(op_out.shape):
        if s == ir.ShapedType.get_dynamic_size():
            # A dynamic size is known only where the reshape just adds/drops unit dims
            # (keepdim reductions); general dynamic reshapes need sizes as operands.
            unit_map = unit_map or _unit_dim_map(ir.RankedTensorType(source.type), op_out)
            if unit_map is None:
                raise NotImplementedError("reshape to a dynamic shape needs the sizes as operands")
            sizes.append(arith.index_cast(i64, tensor.dim(source, const(INDEX.get(), unit_map[i]))))
        else:
            sizes.append(const(i64, s))
    return tensor.from_elements(ir.RankedTensorType.get([len(sizes)], i64), sizes)


@register_lowering(dy.ReshapeOp)
def _lower_reshape(op):
    out = ranked(op.out)
    if out.rank == 0 or ranked(op.x).rank == 0:
        # tensor.reshape needs a non-empty shape; collapse/expand with no reassociation handles 0-d.
        if out.rank == 0:
            return tensor.collapse_shape(out, op.x, [])
        return tensor.expand_shape(out, op.x, [], output_shape=[], static_output_shape=out.shape)
    return tensor.reshape(out, op.x, _shape_tensor(out, op.x))


@register_lowering(dy.PermuteOp)
def _lower_permute(op):
    perm = dy.int_list(op.perm)
    if perm == sorted(perm):  # identity (0-d included: linalg.transpose of rank 0 exhausts memory)
        return op.x
    init = empty(ranked(op.out), op.x, perm)
    return linalg.transpose(op.x, outs=[init], permutation=perm)


@register_lowering(dy.SliceOp)
def _lower_slice(op):
    out = ranked(op.out)
    start, step = dy.int_list(op.start), dy.int_list(op.step)
    return tensor.extract_slice(out, op.x, [], [], [], start, list(out.shape), step)


@register_lowering(dy.ConcatOp)
def _lower_concat(op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    result, offset = empty(out), 0
    for v in (op.lhs, op.rhs):
        shape = list(ranked(v).shape)
        offsets = [0] * out.rank
        offsets[dim] = offset
        result = tensor.insert_slice(v, result, [], [], [], offsets, shape, [1] * out.rank)
        offset += shape[dim]
    return result


@register_lowering(dy.PadOp)
def _lower_pad(op):
    out = ranked(op.out)
    value = tensor.extract(op.value, [])
    pad = tensor.PadOp(out, op.x, [], [], dy.int_list(op.low), dy.int_list(op.high))
    block = pad.regions[0].blocks.append(*([INDEX.get()] * out.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(value)
    return pad.result
