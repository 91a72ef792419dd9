"""Data movement -> broadcasting generics (static, or like another tensor), tensor.reshape,
linalg.transpose, slices, concats, pads."""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, index
from .common import PARALLEL, affine_map, empty, generic, identity, ranked, sized_shape, transposed


@register_lowering(dy.BroadcastOp)
def _lower_broadcast(ctx, op):
    src, out = ranked(op.x), ranked(op.out)
    dims = dy.int_list(op.dims)
    # Operand dim i reads result dim dims[i], or index 0 where it is a size-1 dim being stretched.
    exprs = [None if (src.shape[i] == 1 and out.shape[d] != 1) else d for i, d in enumerate(dims)]
    if len(op.sizes):
        init = tensor.empty(sized_shape(out, op.sizes), out.element_type)
    else:  # the verifier checked that every dynamic result dim is a dynamic operand dim
        init = empty(out, op.x, {d: i for i, d in enumerate(dims)})
    return generic([op.x], [init], [affine_map(out.rank, exprs), identity(out.rank)],
                   [PARALLEL] * out.rank, lambda x, _: [x])[0]


def _shape_tensor(op_out: ir.RankedTensorType, source: ir.Value, sizes):
    """The i64 shape operand of tensor.reshape: constants, the op's `sizes`, or (without sizes)
    the source's dims where the reshape only inserts/removes unit dims."""
    i64 = ir.IntegerType.get_signless(64)
    if len(sizes):
        dims = sized_shape(op_out, sizes)
    else:
        unit_map = dy.unit_dim_map(ranked(source).shape, op_out.shape)
        dims = [tensor.dim(source, index(unit_map[i])) if s == dy.DYN else s
                for i, s in enumerate(op_out.shape)]
    values = [const(i64, d) if isinstance(d, int) else arith.index_cast(i64, d) for d in dims]
    return tensor.from_elements(ir.RankedTensorType.get([len(values)], i64), values)


@register_lowering(dy.ReshapeOp)
def _lower_reshape(ctx, op):
    out = ranked(op.out)
    if out.rank == 0 or ranked(op.x).rank == 0:
        # tensor.reshape needs a non-empty shape; collapse/expand with no reassociation handles 0-d.
        if out.rank == 0:
            return tensor.collapse_shape(out, op.x, [])
        return tensor.expand_shape(out, op.x, [], output_shape=[], static_output_shape=out.shape)
    return tensor.reshape(out, op.x, _shape_tensor(out, op.x, op.sizes))


@register_lowering(dy.PermuteOp)
def _lower_permute(ctx, op):
    perm = dy.int_list(op.perm)
    if perm == sorted(perm):  # identity (0-d included: linalg.transpose of rank 0 exhausts memory)
        return op.x
    # linalg.transpose wants each dim static in both or dynamic in both; the import may know a
    # size on one side only (a symbolic size a guard fixed, typed on the result): both get it.
    src, out = ranked(op.x), ranked(op.out)
    shape = list(src.shape)
    for i, p in enumerate(perm):
        if out.shape[i] != ir.ShapedType.get_dynamic_size():
            shape[p] = out.shape[i]
    x = op.x if shape == list(src.shape) else tensor.cast(ir.RankedTensorType.get(shape, src.element_type), op.x)
    result = transposed(x, perm)
    return result if result.type == out else tensor.cast(out, result)


@register_lowering(dy.SliceOp)
def _lower_slice(ctx, op):
    out = ranked(op.out)
    start, step = dy.int_list(op.start), dy.int_list(op.step)
    if len(op.sizes):  # run-time bounds: offsets and sizes as the op gives them
        sizes = list(op.sizes)
    else:  # a dynamic result dim is the operand's dim from start (the verifier checks step 1)
        sizes = [arith.subi(tensor.dim(op.x, index(d)), index(start[d])) if start[d] else tensor.dim(op.x, index(d))
                 for d, n in enumerate(out.shape) if n == dy.DYN]
    if 0 in out.shape:
        # An empty slice has no elements to read, and tensor.extract_slice rejects its offset
        # whenever the source dim is empty too or the slice starts at the end (x[5:5]).
        return tensor.empty(sized_shape(out, sizes), out.element_type)
    return tensor.extract_slice(out, op.x, list(op.offsets), sizes, [], start, list(out.shape), step)


def _size(value: ir.Value, dim: int):
    """value's size along `dim`: an int where static, an index value where dynamic."""
    n = ranked(value).shape[dim]
    return tensor.dim(value, index(dim)) if n == dy.DYN else n


def _add_sizes(a, b):
    return a + b if isinstance(a, int) and isinstance(b, int) else arith.addi(index(a), index(b))


def _insert_slice(source: ir.Value, dest: ir.Value, offsets: list, sizes: list) -> ir.Value:
    """tensor.insert_slice with unit strides; offsets and sizes mix ints and index values."""
    dynamic = lambda xs: [x for x in xs if not isinstance(x, int)]  # noqa: E731
    static = lambda xs: [x if isinstance(x, int) else dy.DYN for x in xs]  # noqa: E731
    return tensor.insert_slice(source, dest, dynamic(offsets), dynamic(sizes), [], static(offsets),
                               static(sizes), [1] * len(sizes))


@register_lowering(dy.ConcatOp)
def _lower_concat(ctx, op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    # Off `dim` the operands agree (the verifier checks it); a `?` dim there is read off lhs.
    lhs_sizes, rhs_sizes = ([_size(v, d) for d in range(out.rank)] for v in (op.lhs, op.rhs))
    out_sizes = list(lhs_sizes)
    out_sizes[dim] = _add_sizes(lhs_sizes[dim], rhs_sizes[dim])
    result = tensor.empty([index(s) if n == dy.DYN else n for s, n in zip(out_sizes, out.shape)], out.element_type)
    if 0 in out.shape:  # no element to write (an insert into an empty dim is not even valid IR)
        return result
    offsets = [0] * out.rank
    offsets[dim] = lhs_sizes[dim]
    for piece, at, sizes in ((op.lhs, [0] * out.rank, lhs_sizes), (op.rhs, offsets, rhs_sizes)):
        # An empty piece writes nothing, and its insert at the end of `dim` (offset == size) is
        # refused by the verifier (block_diag of an empty block).
        if 0 not in ranked(piece).shape:
            result = _insert_slice(piece, result, at, sizes)
    return result


@register_lowering(dy.PadOp)
def _lower_pad(ctx, op):
    out = ranked(op.out)
    value = tensor.extract(op.value, [])
    pad = tensor.PadOp(out, op.x, [], [], dy.int_list(op.low), dy.int_list(op.high))
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * out.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(value)
    return pad.result


@register_lowering(dy.BroadcastLikeOp)
def _lower_broadcast_like(ctx, op):
    src, out = ranked(op.x), ranked(op.out)
    dims = dy.int_list(op.dims)
    # A size-1 operand dim facing a result dim that is not statically 1 is stretched (index 0).
    exprs = [None if (src.shape[i] == 1 and out.shape[d] != 1) else d for i, d in enumerate(dims)]
    init = empty(out, op.like)
    return generic([op.x], [init], [affine_map(out.rank, exprs), identity(out.rank)],
                   [PARALLEL] * out.rank, lambda x, _: [x])[0]
