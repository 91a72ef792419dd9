"""Builders shared by the lowering rules: empty tensors with dynamic sizes, linalg.generic."""

from typing import Callable, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, bufferization, linalg, tensor

from ..scalar import const, index

PARALLEL = "parallel"
REDUCTION = "reduction"


def ranked(value) -> ir.RankedTensorType:
    return ir.RankedTensorType(value.type)


def op_kind(op) -> str:
    """The op's name within the dialect ("add" for dynamo.add): the key of the tables that one
    rule serving a family of ops reads its scalar body from."""
    return op.name.split(".", 1)[1]


def dynamic_sizes(t: ir.RankedTensorType, source: ir.Value | None, dim_map=None) -> list[ir.Value]:
    """SSA sizes for t's dynamic dims, read off `source` (result dim i = source dim dim_map[i])."""
    sizes = []
    for i, s in enumerate(t.shape):
        if s == ir.ShapedType.get_dynamic_size():
            src_dim = dim_map[i] if dim_map else i
            sizes.append(tensor.dim(source, index(src_dim)))
    return sizes


def dim_value(x: ir.Value, d: int) -> ir.Value:
    """x's size along d as an index value (a constant where it is static)."""
    s = ranked(x).shape[d]
    return index(s) if s != ir.ShapedType.get_dynamic_size() else tensor.dim(x, index(d))


def dim_values(x: ir.Value) -> list[ir.Value]:
    return [dim_value(x, d) for d in range(ranked(x).rank)]


def index_in_range(i: ir.Value, size: ir.Value) -> ir.Value:
    """An integer index read from a tensor as a position in [0, size), as an index value:
    negative ones count from the end, as in eager, and what is still out of range is clamped,
    so no load leaves the tensor. (Eager rejects such an index, with an IndexError on CPU or a
    device assert that ends the CUDA context; a generated kernel must never read outside its
    buffers instead.) Two selects, no division: gathers run it for every element."""
    n = arith.index_cast(i.type, size)
    zero = const(i.type, 0)
    i = arith.select(arith.cmpi(arith.CmpIPredicate.slt, i, zero), arith.addi(i, n), i)
    last = arith.subi(n, const(i.type, 1))
    i = arith.maxsi(arith.minsi(i, last), zero)
    return arith.index_cast(ir.IndexType.get(), i)


def fresh_copy(value: ir.Value) -> ir.Value:
    """A fresh buffer holding `value`, which loops then update in place: never value's own
    buffer (a function argument is writable to bufferization, and an identity linalg.generic
    would be canonicalized away, leaving the stores to hit the caller's tensor)."""
    return bufferization.alloc_tensor(value.type, [], copy=value)


def empty(t: ir.RankedTensorType, like: ir.Value | None = None, dim_map=None) -> ir.Value:
    dynamic = iter(dynamic_sizes(t, like, dim_map))
    sizes = [next(dynamic) if s == ir.ShapedType.get_dynamic_size() else s for s in t.shape]
    return tensor.empty(sizes, t.element_type)


def sized_shape(t: ir.RankedTensorType, sizes) -> list:
    """t's shape with its dynamic dims replaced, in order, by the index values `sizes`."""
    given = iter(sizes)
    return [next(given) if s == ir.ShapedType.get_dynamic_size() else s for s in t.shape]


def empty_from(t: ir.RankedTensorType, sources) -> ir.Value:
    """tensor.empty of type t whose dynamic dim i has the size of dim sources[i][1] of value
    sources[i][0] (results whose sizes come from several operands, e.g. a matmul's)."""
    sizes = [tensor.dim(v, index(d)) for (v, d), s in zip(sources, t.shape)
             if s == ir.ShapedType.get_dynamic_size()]
    return tensor.empty(sized_shape(t, sizes), t.element_type)


def slice_dim(x: ir.Value, dim: int, start, size) -> ir.Value:
    """Elements start .. start + size of x along `dim` (ints, or index values at run time)."""
    src, dynamic = ranked(x), ir.ShapedType.get_dynamic_size()
    static_size = size if isinstance(size, int) else dynamic
    shape = [static_size if d == dim else s for d, s in enumerate(src.shape)]
    sizes = [size if d == dim else tensor.dim(x, index(d))
             for d, s in enumerate(shape) if s == dynamic]
    offsets = [(start if isinstance(start, int) else dynamic) if d == dim else 0 for d in range(src.rank)]
    out = ir.RankedTensorType.get(shape, src.element_type)
    if 0 in shape:
        # Nothing to read; and tensor.extract_slice's verifier rejects offset 0 into a dim of
        # static size 0 (a [0, ?] operand split along its `?` dim).
        return tensor.empty(sized_shape(out, sizes), src.element_type)
    return tensor.extract_slice(out, x, [] if isinstance(start, int) else [start], sizes, [],
                                offsets, shape, [1] * src.rank)


def filled(t: ir.RankedTensorType, scalar: ir.Value, like: ir.Value | None = None, dim_map=None) -> ir.Value:
    return linalg.fill(scalar, outs=[empty(t, like, dim_map)])


def affine_map(n_dims: int, exprs: Sequence) -> ir.AffineMapAttr:
    """`exprs`: per result, a loop-dim index (int), the constant 0 written as None, or an
    ir.AffineExpr (e.g. a window position, window_expr)."""
    results = [ir.AffineConstantExpr.get(0) if e is None else ir.AffineDimExpr.get(e) if isinstance(e, int) else e
               for e in exprs]
    return ir.AffineMapAttr.get(ir.AffineMap.get(n_dims, 0, results))


def identity(n_dims: int) -> ir.AffineMapAttr:
    return affine_map(n_dims, range(n_dims))


def generic(inputs: Sequence[ir.Value], outputs: Sequence[ir.Value], maps: Sequence[ir.AffineMapAttr],
            iterators: Sequence[str], body: Callable[..., Sequence[ir.Value]]) -> list[ir.Value]:
    """linalg.generic whose region is `body(*scalar_args) -> yielded values`."""
    result_types = [o.type for o in outputs]
    op = linalg.GenericOp(
        result_types, list(inputs), list(outputs), ir.ArrayAttr.get(list(maps)),
        ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in iterators]),
    )
    arg_types = [ranked(v).element_type for v in (*inputs, *outputs)]
    block = op.regions[0].blocks.append(*arg_types)
    with ir.InsertionPoint(block):
        linalg.YieldOp(list(body(*block.arguments)))
    return list(op.results)


def elementwise(inputs: Sequence[ir.Value], out_type: ir.RankedTensorType, body) -> ir.Value:
    """An all-parallel generic over operands of out_type's shape; body(*scalars) -> scalar."""
    rank = out_type.rank
    init = empty(out_type, inputs[0] if inputs else None)
    maps = [identity(rank)] * (len(inputs) + 1)
    return generic(inputs, [init], maps, [PARALLEL] * rank, lambda *a: [body(*a[:-1])])[0]


def loop_index(dim: int) -> ir.Value:
    """The current iteration index of loop `dim` inside a linalg.generic body.
    (`linalg.index` in the bindings is the OpDSL helper, not this op.)"""
    return linalg.IndexOp(dim).result


def matmul_init(op, value) -> ir.Value:
    """A matmul's accumulator filled with `value` (of its element type): batch and M sizes from
    lhs, N from rhs."""
    out = ranked(op.out)
    acc = ir.RankedTensorType.get(out.shape, value.type)
    sources = [(op.lhs, d) for d in range(out.rank - 1)] + [(op.rhs, out.rank - 1)]
    return linalg.fill(value, outs=[empty_from(acc, sources)])


def accumulator_element(t: ir.RankedTensorType) -> ir.Type:
    """What a contraction with result type t sums in: float32 for a half result (the dialect's
    contractions accumulate half products in float32, dialects/matmul.py), else t's element."""
    elem = t.element_type
    return ir.F32Type.get() if isinstance(elem, (ir.BF16Type, ir.F16Type)) else elem


def stored_as(acc: ir.Value, t: ir.RankedTensorType) -> ir.Value:
    """A contraction's accumulator as its result type t: rounded once, elementwise, where they differ."""
    if ranked(acc).element_type == t.element_type:
        return acc
    return elementwise([acc], ir.RankedTensorType.get(ranked(acc).shape, t.element_type),
                       lambda a: arith.truncf(t.element_type, a))


# ----------------------------------------------------------------------------- windows (conv, pool)


def pad_spatial(x, padding, value, first: int = 2):
    """Pad the spatial dims of a tensor with a scalar on both sides: dims first.. of NC[D]HW
    (first = 2), dims 1..rank-2 of NHWC (first = 1)."""
    if not any(padding):
        return x
    src = ranked(x)
    low = [0] * first + list(padding) + [0] * (src.rank - first - len(padding))
    shape = [s + 2 * p for s, p in zip(src.shape, low)]
    out = ir.RankedTensorType.get(shape, src.element_type)
    pad = tensor.PadOp(out, x, [], [], low, low)
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * src.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(value)
    return pad.result


def transposed(x, perm) -> ir.Value:
    """x with its dims permuted (result dim i is x's dim perm[i]): a linalg.transpose."""
    src = ranked(x)
    out = ir.RankedTensorType.get([src.shape[p] for p in perm], src.element_type)
    return linalg.transpose(x, outs=[empty(out, x, perm)], permutation=list(perm)).results[0]


def window_attrs(stride, dilation) -> dict:
    return dict(strides=list(stride), dilations=list(dilation))


def window_expr(out_dim: int, win_dim: int, stride: int, dilation: int) -> ir.AffineExpr:
    """The input position `o * stride + k * dilation` of window slot k at output o."""
    o, k = ir.AffineDimExpr.get(out_dim), ir.AffineDimExpr.get(win_dim)
    return o * ir.AffineConstantExpr.get(stride) + k * ir.AffineConstantExpr.get(dilation)
