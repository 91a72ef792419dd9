"""The builders import rules share: small functions that make dynamo ops from values.

Where builders live, and why here: `ImportContext` (frontend/importer.py) keeps the builders
that need the import's state: the FX value map (`tensor`), the dynamic sizes (`broadcast`,
`reshape`, `full`) and the half-precision rounding chain (`cast`, `rounded`, `opmath`,
`operand`), plus `emit` and `scalar`. Everything else that a rule composes from dialect ops
is a plain function here, taking `ctx` first as the rules do: it needs no state of its own, so
the driver class stays small and any rule file (or a plugin's) imports the same one instead of
writing its own `_select`. A helper used by one family only stays in that family's file; a
helper two families need moves here. Rule files import nothing private from each other.

Shapes are lists of ints (`dy.DYN` for `?` dims); dims are non-negative (normalize them with
args.norm_dim first).
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from .. import dtypes
from ..registry import Unsupported

I64 = torch.int64


# ----------------------------------------------------------------------------- types and attributes


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The type an op on `dtype` computes in: float32 for the half types (as eager's kernels)."""
    return dtypes.UPCAST_DTYPES.get(dtype, dtype)


def i64(value) -> ir.IntegerAttr:
    """An i64 attribute (a dim, a flag, a stream number)."""
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def i64s(values) -> ir.DenseI64ArrayAttr:
    """An array of i64 attribute (permutations, starts, strides, padding)."""
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def numel(shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def element_count(ctx, x, dims, dtype: torch.dtype) -> ir.Value:
    """The product of x's sizes along `dims` as a 0-d tensor of dtype (a mean's divisor, an
    index's wrap-around size or stride): a constant, or read off x at run time."""
    shape = ctx.shape_of(x)
    if all(shape[d] != dy.DYN for d in dims):
        return ctx.scalar(numel([shape[d] for d in dims]), dtype)
    return dy.NumelOp(x, dims=i64s(dims), out=ctx.type_like(x, dtype, [])).out


def require_static(ctx, x, what: str) -> None:
    """Raise Unsupported where x has a dynamic dim (`what`: the op, for the reason)."""
    if any(s == dy.DYN for s in ctx.shape_of(x)):
        raise Unsupported(f"{what} with a dynamic dim")


# ----------------------------------------------------------------------------- elementwise


def emit_like(ctx, name: str, *operands) -> ir.Value:
    """The elementwise op `name` with the type of its first operand (all operands alike)."""
    return ctx.emit(name, *operands, out=ctx.type_like(operands[0]))


def compare(ctx, a, b, predicate: str) -> ir.Value:
    """a `predicate` b (eq, ne, lt, le, gt, ge) as a bool tensor."""
    return dy.CompareOp(a, b, ir.StringAttr.get(predicate), out=ctx.type_like(a, torch.bool)).out


def select(ctx, cond, a, b) -> ir.Value:
    """a where cond, else b (a and b alike)."""
    return dy.SelectOp(cond, a, b, out=ctx.type_like(a)).out


def like(ctx, number, x, dtype: torch.dtype | None = None) -> ir.Value:
    """`number` broadcast to x's shape, in x's dtype unless given (a 0-d constant broadcast, so
    dynamic dims are read off x)."""
    return ctx.broadcast(ctx.scalar(number, dtype or ctx.dtype_of(x)), ctx.shape_of(x), like=x)


def isnan(ctx, x) -> ir.Value:
    """Where x is NaN (nowhere for an integer tensor)."""
    if not ctx.dtype_of(x).is_floating_point:
        return ctx.full(False, ctx.shape_of(x), torch.bool)
    return ctx.emit("isnan", x, out=ctx.type_like(x, torch.bool))


def isinf(ctx, x) -> ir.Value:
    """Where x is +-inf (a float tensor)."""
    return ctx.emit("isinf", x, out=ctx.type_like(x, torch.bool))


# ----------------------------------------------------------------------------- constants


def const(ctx, array: np.ndarray, dtype: torch.dtype = I64) -> ir.Value:
    """A tensor constant holding a numpy array (index tables, masks, divisors) in `dtype`."""
    shape = list(np.shape(array))  # before ascontiguousarray, which makes a 0-d array 1-d
    array = np.ascontiguousarray(array, dtype=dtypes.NUMPY_TYPES[dtype])
    if array.size == 0:  # an empty attribute is dropped by ext: ctx.full makes empty tensors
        return ctx.full(0, shape, dtype)
    t = dtypes.tensor_type(shape, dtype)
    return dy.ConstantOp(ir.DenseElementsAttr.get(array, type=t.element_type, shape=shape), out=t).out


def iota(ctx, shape, dim: int, start=0, step=1, dtype: torch.dtype = I64, like=None) -> ir.Value:
    """start + step * (index along dim), shaped `shape`; `like`: a value of that shape to read
    its `?` dims from (needed where it has some)."""
    return dy.IotaOp(ctx.scalar(start, dtype), ctx.scalar(step, dtype), [] if like is None else [like], i64(dim),
                     out=dtypes.tensor_type(list(shape), dtype)).out


# ----------------------------------------------------------------------------- data movement


def permute(ctx, x, perm) -> ir.Value:
    """x with its dims reordered (result dim i is x's dim perm[i]); the identity is x itself."""
    perm = [int(p) for p in perm]
    if perm == list(range(len(perm))):
        return x
    shape = ctx.shape_of(x)
    return dy.PermuteOp(x, perm=i64s(perm), out=ctx.type_like(x, shape=[shape[p] for p in perm])).out


def inverse_permutation(perm) -> list[int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def slice_box(ctx, x, starts, sizes, steps=None) -> ir.Value:
    """The box of `sizes` elements from `starts` (every `steps`-th element along each dim)."""
    steps = [1] * len(starts) if steps is None else steps
    return dy.SliceOp(x, i64s(starts), i64s(steps), out=ctx.type_like(x, shape=list(sizes))).out


def slice_along(ctx, x, dim: int, start: int, size: int) -> ir.Value:
    """`size` elements from `start` along one dim, the others whole."""
    shape = ctx.shape_of(x)
    starts = [0] * len(shape)
    starts[dim] = start
    return slice_box(ctx, x, starts, shape[:dim] + [size] + shape[dim + 1:])


def pad(ctx, x, low, high, value=0.0) -> ir.Value:
    """x padded with `value`: low[d] elements before and high[d] after along each dim."""
    if not any(low) and not any(high):
        return x
    shape = [s + lo + hi for s, lo, hi in zip(ctx.shape_of(x), low, high)]
    return dy.PadOp(x, ctx.scalar(value, ctx.dtype_of(x)), i64s(low), i64s(high), out=ctx.type_like(x, shape=shape)).out


def gather_along(ctx, x, index, dim: int) -> ir.Value:
    """x[..., index[...], ...] along dim (torch.gather): shaped like index."""
    return dy.GatherAlongOp(x, index, i64(dim), out=ctx.type_like(x, shape=ctx.shape_of(index))).out


def flip(ctx, x, dims) -> ir.Value:
    """x reversed along each of `dims` (a gather with a descending iota)."""
    shape = ctx.shape_of(x)
    for dim in dims:
        x = gather_along(ctx, x, iota(ctx, shape, dim, shape[dim] - 1, -1), dim)
    return x


# ----------------------------------------------------------------------------- reductions


def reduce(ctx, x, kind: str, dims: list[int], keepdim: bool = False) -> ir.Value:
    """dynamo.reduce of x over `dims` (sum, prod, max, min, any, all); no dims is x itself."""
    shape = ctx.shape_of(x)
    if not dims:  # reducing a 0-d tensor is the identity
        return x
    kept = [s for i, s in enumerate(shape) if i not in dims]
    r = dy.ReduceOp(x, ir.StringAttr.get(kind), i64s(dims), out=ctx.type_like(x, shape=kept)).out
    if keepdim:
        r = ctx.reshape(r, [1 if i in dims else s for i, s in enumerate(shape)])
    return r


def arg_reduce(ctx, x, kind: str, dim: int) -> ir.Value:
    """The i64 position of the first max (or min) along dim, that dim dropped (dynamo.arg_reduce)."""
    shape = ctx.shape_of(x)
    out = ctx.type_like(x, I64, shape[:dim] + shape[dim + 1:])
    return dy.ArgReduceOp(x, ir.StringAttr.get(kind), i64(dim), out=out).out


HALF = (torch.bfloat16, torch.float16)


def ordered_sum(ctx, x, dim: int, dtype: torch.dtype) -> ir.Value:
    """Sum x over `dim` in index order. For a half `dtype`, rounded to it after every addition,
    as eager's kernels that accumulate into a half-typed result do."""
    if dtype not in HALF:
        return reduce(ctx, x, "sum", [dim], False)
    shape = ctx.shape_of(x)
    kept = shape[:dim] + shape[dim + 1:]
    total = None
    for i in range(shape[dim]):
        term = ctx.reshape(slice_along(ctx, x, dim, i, 1), kept)
        total = term if total is None else emit_like(ctx, "add", total, term)
        total = ctx.cast(ctx.cast(total, dtype), ctx.dtype_of(x))
    return total


# ----------------------------------------------------------------------------- numpy index tables


def outer(tables, combine) -> np.ndarray:
    """Combine per-dim [o_i, k_i] tables into one over axes (o_1.., k_1..)."""
    spatial = len(tables)
    total = None
    for i, t in enumerate(tables):
        shape = [1] * (2 * spatial)
        shape[i], shape[spatial + i] = t.shape
        t = t.reshape(shape)
        total = t if total is None else combine(total, t)
    return total


def row_major_strides(sizes) -> list[int]:
    return [int(np.prod(sizes[i + 1:])) for i in range(len(sizes))]
