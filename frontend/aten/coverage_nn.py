"""Convolutions and pools found missing by the OpInfo sweep, built from dynamo.conv2d/pool2d:
- 1-d convolution is a 2-d one over a unit height; 3-d is dynamo.conv2d over three spatial dims;
- transposed convolution is a convolution of the stride-dilated, padded input with the flipped,
  in/out-swapped weight (the input-gradient construction of training.py);
- adaptive average/max pooling is one masked reduction per pooled dim (windows are separable).
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype
from .nn import _i64s
from .reduction import reduce
from .training import _attr_i64, _iota, _pad, _permute, _slice

aten = torch.ops.aten
HALF = (torch.bfloat16, torch.float16)


def _conv(ctx, x, w, stride, padding, dilation, groups):
    """dynamo.conv2d over the input's 2 or 3 spatial dims."""
    xs, ws = ctx.shape_of(x), ctx.shape_of(w)
    spatial = [(xs[2 + i] + 2 * padding[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1
               for i in range(len(xs) - 2)]
    return dy.Conv2dOp(x, w, stride=_i64s(stride), padding=_i64s(padding), dilation=_i64s(dilation),
                       groups=_attr_i64(groups), out=ctx.type_like(x, shape=[xs[0], ws[0], *spatial])).out


def _flip(ctx, w, dims):
    """Reverse w along each of `dims` (a gather with a descending iota)."""
    shape = ctx.shape_of(w)
    for dim in dims:
        reverse = _iota(ctx, shape, dim, shape[dim] - 1, -1)
        w = dy.GatherAlongOp(w, reverse, _attr_i64(dim), out=ctx.type_like(w)).out
    return w


def _transposed_weight(ctx, w, groups):
    """[C_in, C_out/g, k...] -> [C_out, C_in/g, k...], spatially flipped."""
    cin, cout_g, *k = ctx.shape_of(w)
    w = ctx.reshape(w, [groups, cin // groups, cout_g, *k])
    w = _permute(ctx, w, [0, 2, 1] + list(range(3, 3 + len(k))))
    w = ctx.reshape(w, [groups * cout_g, cin // groups, *k])
    return _flip(ctx, w, range(2, 2 + len(k)))


def _dilate(ctx, x, stride):
    """Insert stride-1 zeros between neighbours along each spatial dim (a transposed conv's input):
    [N, C, s...] -> [N, C, s..., 1...] padded to [..., stride...], interleaved, trailing zeros cut."""
    if all(s == 1 for s in stride):
        return x
    n, c, *sizes = ctx.shape_of(x)
    k = len(sizes)
    x = ctx.reshape(x, [n, c] + [v for size in sizes for v in (size, 1)])
    x = _pad(ctx, x, [0] * (2 + 2 * k), [0, 0] + [v for st in stride for v in (0, st - 1)])
    x = ctx.reshape(x, [n, c] + [size * st for size, st in zip(sizes, stride)])
    return _slice(ctx, x, [0] * (2 + k), [n, c] + [(size - 1) * st + 1 for size, st in zip(sizes, stride)])


def _conv_transpose(ctx, x, w, stride, padding, dilation, output_padding, groups):
    k = ctx.shape_of(w)[2:]
    pad = [dilation[i] * (k[i] - 1) - padding[i] for i in range(len(k))]
    x = _dilate(ctx, x, list(stride))
    x = _pad(ctx, x, [0] * (2 + len(k)), [0, 0, *output_padding])
    # Padding beyond the kernel's reach makes `pad` negative: the convolution then drops that
    # many positions at both ends of its input instead.
    crop = [max(-p, 0) for p in pad]
    if any(crop):
        n, c, *sizes = ctx.shape_of(x)
        x = _slice(ctx, x, [0, 0, *crop], [n, c, *[size - 2 * cut for size, cut in zip(sizes, crop)]])
    w = _transposed_weight(ctx, w, groups)
    return _conv(ctx, x, w, [1] * len(k), [max(p, 0) for p in pad], dilation, groups)


MAX_COLUMN_GATHER = 1 << 24  # elements of the [out positions, K, N*C_out] gather of col2vol


def _outer(tables, combine):
    """Combine per-dim [o_i, k_i] tables into one over axes (o_1.., k_1..)."""
    spatial = len(tables)
    total = None
    for i, t in enumerate(tables):
        shape = [1] * (2 * spatial)
        shape[i], shape[spatial + i] = t.shape
        t = t.reshape(shape)
        total = t if total is None else combine(total, t)
    return total


def _strides(sizes):
    return [int(np.prod(sizes[i + 1:])) for i in range(len(sizes))]


def _col2vol_table(ins, outs, kernel, stride, padding, dilation):
    """Per output position (flat) and kernel offset (flat, ascending): the flat index into the
    [K, input positions] columns that lands there, and whether one does, [out, K] each."""
    pos, ok = [], []
    for n, o, k, s, p, d in zip(ins, outs, kernel, stride, padding, dilation):
        start = np.arange(o)[:, None] + p - (np.arange(k) * d)[None, :]  # input position * stride
        ok.append((start >= 0) & (start % s == 0) & (start // s < n))
        pos.append(np.where(ok[-1], start // s, 0))
    n_out, n_k, n_in = int(np.prod(outs)), int(np.prod(kernel)), int(np.prod(ins))
    index = _outer([q * st for q, st in zip(pos, _strides(ins))], np.add).reshape(n_out, n_k)
    valid = _outer(ok, np.logical_and).reshape(n_out, n_k)
    index = index + (np.arange(n_k) * n_in)[None, :]
    return np.where(valid, index, 0), valid


MAX_FMA_STEPS = 16  # input channels per group: one unrolled step each


def _fma_matmul(ctx, a, b):
    """[B, M, K] @ [B, K, N] as BLAS's kernels sum: a fused multiply-add per k, in order. Each step
    adds the exact float64 product and rounds once to float32, as an fma does."""
    batch, m, k = ctx.shape_of(a)
    n = ctx.shape_of(b)[2]
    shape = [batch, m, n]
    acc = None
    for i in range(k):
        ai = ctx.broadcast(ctx.cast(_slice(ctx, a, [0, 0, i], [batch, m, 1]), torch.float64), shape)
        bi = ctx.broadcast(ctx.cast(_slice(ctx, b, [0, i, 0], [batch, 1, n]), torch.float64), shape)
        term = ctx.emit("mul", ai, bi, out=ctx.type_like(ai))
        if acc is not None:
            term = ctx.emit("add", ctx.cast(acc, torch.float64), term, out=ctx.type_like(term))
        acc = ctx.cast(term, ctx.dtype_of(a))
    return acc


def _eager_conv_backend(x, w, ctx, stride, padding, dilation, output_padding, groups) -> str | None:
    """The kernel eager's CPU convolution would pick for these shapes (it depends on shapes,
    groups and the thread count), asked with uninitialized tensors of the same shapes."""
    try:
        backend = torch._C._select_conv_backend(
            torch.empty(ctx.shape_of(x)), torch.empty(ctx.shape_of(w)), None, list(stride), list(padding),
            list(dilation), True, list(output_padding), groups, None)
    except (AttributeError, RuntimeError, TypeError):
        return None
    return str(backend).rsplit(".", 1)[-1]


def ordered_sum(ctx, x, dim: int, dtype):
    """Sum x over `dim` in index order. For a half `dtype`, rounded to it after every addition,
    as eager's kernels that accumulate into a half-typed result do."""
    if dtype not in HALF:
        return reduce(ctx, x, "sum", [dim], False)
    shape = ctx.shape_of(x)
    kept = shape[:dim] + shape[dim + 1:]
    total = None
    for i in range(shape[dim]):
        start, size = [0] * len(shape), list(shape)
        start[dim], size[dim] = i, 1
        term = ctx.reshape(_slice(ctx, x, start, size), kept)
        total = term if total is None else ctx.emit("add", total, term, out=ctx.type_like(term))
        total = ctx.cast(ctx.cast(total, dtype), ctx.dtype_of(x))
    return total


def _conv_transpose_col2vol(ctx, x, w, stride, padding, dilation, output_padding, groups):
    """Float transposed convolution as eager's slow kernel takes it: per group, columns =
    weight^T @ x ([C_out/g * K, input positions], a BLAS matmul, fused multiply-adds), then each
    output element adds its columns over the kernel offsets in ascending order (col2vol), here a
    gather and an ordered sum."""
    n, cin, *ins = ctx.shape_of(x)
    _, cout_g, *kernel = ctx.shape_of(w)
    outs = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
            for i, s, p, d, k, op in zip(ins, stride, padding, dilation, kernel, output_padding)]
    n_in, n_k, n_out, cin_g = int(np.prod(ins)), int(np.prod(kernel)), int(np.prod(outs)), cin // groups
    planes = n * groups * cout_g
    if _eager_conv_backend(x, w, ctx, stride, padding, dilation, output_padding, groups) != "SlowTranspose3d":
        raise Unsupported("3-d transposed convolution that eager gives to oneDNN (its own summation order)")
    if n_out * n_k * planes > MAX_COLUMN_GATHER or 0 in (n_in, n_out, planes, cin_g):
        raise Unsupported("transposed convolution too large (or empty) for its column gather")
    if cin_g > MAX_FMA_STEPS:
        raise Unsupported(f"3-d transposed convolution over more than {MAX_FMA_STEPS} input channels per group")
    wt = _permute(ctx, ctx.reshape(w, [groups, cin_g, cout_g * n_k]), [0, 2, 1])  # g, C_out/g*K, C_in/g
    wt = ctx.reshape(ctx.broadcast(ctx.reshape(wt, [1, groups, cout_g * n_k, cin_g]), [n, groups, cout_g * n_k, cin_g]),
                     [n * groups, cout_g * n_k, cin_g])
    xs = ctx.reshape(x, [n * groups, cin_g, n_in])
    cols = _fma_matmul(ctx, wt, xs)
    rows = _permute(ctx, ctx.reshape(cols, [planes, n_k * n_in]), [1, 0])  # (K, in) rows, planes
    table, valid = _col2vol_table(ins, outs, kernel, stride, padding, dilation)
    wide = [n_out, n_k, planes]
    g = dy.GatherOp(rows, _const(ctx, table, torch.int64), out=ctx.type_like(rows, shape=wide)).out
    keep = ctx.broadcast(ctx.cast(_const(ctx, valid.reshape(n_out, n_k, 1).astype(np.int64), torch.int64), torch.bool), wide)
    g = dy.SelectOp(keep, g, ctx.broadcast(ctx.scalar(0, ctx.dtype_of(g)), wide), out=ctx.type_like(g)).out
    y = _permute(ctx, ordered_sum(ctx, g, 1, ctx.dtype_of(g)), [1, 0])
    return ctx.reshape(y, [n, groups * cout_g, *outs])


def _transposed_conv(ctx, x, w, spatial: int, half: bool, *params):
    """x, w in the compute dtype (float32 for half types). Float 3-d: eager's slow kernel, its
    order of sums. Half types: the float32 computation, rounded once by the caller, as a careful
    kernel does. Eager's half kernels round their columns and partial sums to the half type (off
    by several ulps where terms cancel), and which one eager runs depends on the CPU (its slow
    kernel, or oneDNN where the CPU has avx512_bf16): their rounding is no reference to copy."""
    use_col2vol = spatial == 3 and not half
    return (_conv_transpose_col2vol if use_col2vol else _conv_transpose)(ctx, x, w, *params)


def _per_dim(values, spatial: int, unit):
    """A per-dim parameter for `spatial` dims; a 1-d conv's gets `unit` for the added height."""
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    values = values * max(spatial, 1) if len(values) == 1 else values
    return [unit] + values if spatial == 1 else values


@import_rule(aten.convolution)
def _convolution(ctx, node):
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = node.args[:9]
    val = ctx.out_meta(node)
    compute = compute_dtype(val.dtype)
    xv, wv = ctx.cast(ctx.tensor(x), compute), ctx.cast(ctx.tensor(w), compute)
    rank = len(ctx.shape_of(xv))
    if rank not in (3, 4, 5):
        raise Unsupported(f"convolution of a rank-{rank} input (only 1-d, 2-d and 3-d, batched)")
    if rank == 3:  # N, C, L -> N, C, 1, L
        xv = ctx.reshape(xv, ctx.shape_of(xv)[:2] + [1] + ctx.shape_of(xv)[2:])
        wv = ctx.reshape(wv, ctx.shape_of(wv)[:2] + [1] + ctx.shape_of(wv)[2:])
    spatial = rank - 2
    stride, padding, dilation = (_per_dim(v, spatial, u) for v, u in ((stride, 1), (padding, 0), (dilation, 1)))
    if transposed:
        params = stride, padding, dilation, _per_dim(output_padding, spatial, 0), groups
        y = _transposed_conv(ctx, xv, wv, spatial, val.dtype in HALF, *params)
    else:
        y = _conv(ctx, xv, wv, stride, padding, dilation, groups)
    y = ctx.reshape(y, static_shape(val))
    if bias is not None:
        shape = ctx.shape_of(y)
        b = ctx.reshape(ctx.cast(ctx.tensor(bias), compute), [1, shape[1]] + [1] * (len(shape) - 2))
        y = ctx.emit("add", y, ctx.broadcast(b, shape), out=ctx.type_like(y))
    return ctx.cast(y, val.dtype)


# ----------------------------------------------------------------------------- adaptive pooling
# Output i of a dim of size n pooled to o reads [floor(i*n/o), ceil((i+1)*n/o)). The windows are
# separable, so each pooled dim is one masked reduction of x broadcast to [..., o, n, ...].


def _window_mask(n: int, o: int) -> np.ndarray:
    i = np.arange(o)[:, None]
    h = np.arange(n)[None, :]
    return (h >= (i * n) // o) & (h < -((-(i + 1) * n) // o))


def _pool_dim(ctx, x, d: int, o: int, kind: str):
    shape = ctx.shape_of(x)
    wide = shape[:d] + [o] + shape[d:]
    mask = _window_mask(shape[d], o).astype(np.int64)
    itype = ir.RankedTensorType.get(list(mask.shape), ir.IntegerType.get_signless(64))
    m = dy.ConstantOp(ir.DenseElementsAttr.get(mask, type=itype.element_type, shape=list(mask.shape)), out=itype).out
    m = ctx.broadcast(ctx.reshape(m, [1] * d + list(mask.shape) + [1] * (len(shape) - d - 1)), wide)
    keep = dy.CompareOp(m, ctx.broadcast(ctx.scalar(0, torch.int64), wide), ir.StringAttr.get("ne"),
                        out=ctx.type_like(m, torch.bool)).out
    xb = ctx.broadcast(ctx.reshape(x, shape[:d] + [1] + shape[d:]), wide)
    fill = ctx.broadcast(ctx.scalar(float("-inf") if kind == "max" else 0.0, ctx.dtype_of(x)), wide)
    picked = dy.SelectOp(keep, xb, fill, out=ctx.type_like(xb)).out
    return reduce(ctx, picked, kind, [d + 1], False)


def _counts(in_sizes, out_sizes) -> np.ndarray:
    """Elements per output window (the outer product of each dim's window lengths)."""
    total = np.ones([], dtype=np.float64)
    for n, o in zip(in_sizes, out_sizes):
        total = np.multiply.outer(total, _window_mask(n, o).sum(axis=1))
    return total


def _adaptive_pool(ctx, node, kind, spatial: int):
    val = ctx.out_meta(node)
    val = val[0] if isinstance(val, (tuple, list)) else val
    compute = compute_dtype(val.dtype)
    x = ctx.cast(ctx.tensor(node.args[0]), compute)
    shape, out_shape = ctx.shape_of(x), list(static_shape(val))
    if 0 in out_shape:
        return ctx.full(0, out_shape, val.dtype)
    if 0 in shape:
        raise Unsupported("adaptive pooling of an empty tensor")
    first = len(shape) - spatial
    for d in range(first, len(shape)):
        x = _pool_dim(ctx, x, d, out_shape[d], "max" if kind == "max" else "sum")
    if kind == "avg":
        counts = _counts(shape[first:], out_shape[first:]).astype(np.float32 if compute == torch.float32 else np.float64)
        ctype = ctx.type_like(x, compute, list(counts.shape))
        c = dy.ConstantOp(ir.DenseElementsAttr.get(counts, type=ctype.element_type, shape=list(counts.shape)), out=ctype).out
        x = ctx.emit("div", x, ctx.broadcast(c, out_shape), out=ctx.type_like(x))
    return ctx.cast(x, val.dtype)


def _const(ctx, array: np.ndarray, dtype: torch.dtype):
    t = ctx.type_like(ctx.scalar(0, dtype), dtype, list(array.shape))
    return dy.ConstantOp(ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=t.element_type,
                                                  shape=list(array.shape)), out=t).out


MAX_INDEX_WINDOWS = 1 << 22  # elements of the [..., out..., in...] tensor the indices are taken from


def _max_indices(ctx, x, values, spatial: int):
    """torch's indices (flat over the input's pooled dims) of each window's first maximum: x
    broadcast to [..., out..., in...], -inf outside each window, one argmax over the flattened
    input dims. A window of -inf only gets its first element's index, as eager's kernel gives."""
    shape, out_shape = ctx.shape_of(x), ctx.shape_of(values)
    first = len(shape) - spatial
    ins, outs = shape[first:], out_shape[first:]
    wide = shape[:first] + outs + ins
    if int(np.prod(wide)) > MAX_INDEX_WINDOWS:
        raise Unsupported("adaptive max pooling indices of a large input")
    mask = np.ones([], dtype=bool)
    for k, (n, o) in enumerate(zip(ins, outs)):
        mask = np.logical_and.outer(mask, _window_mask(n, o))  # axes: o0, n0, o1, n1, ...
    mask = mask.transpose(list(range(0, 2 * spatial, 2)) + list(range(1, 2 * spatial, 2)))
    keep = ctx.cast(ctx.broadcast(_const(ctx, mask.astype(np.int64), torch.int64), wide), torch.bool)
    xb = ctx.broadcast(ctx.reshape(x, shape[:first] + [1] * spatial + ins), wide)
    picked = dy.SelectOp(keep, xb, ctx.broadcast(ctx.scalar(float("-inf"), ctx.dtype_of(x)), wide),
                         out=ctx.type_like(xb)).out
    flat = ctx.reshape(picked, shape[:first] + outs + [int(np.prod(ins))])
    idx = dy.ArgReduceOp(flat, ir.StringAttr.get("max"), _attr_i64(len(out_shape)),
                         out=ctx.type_like(flat, torch.int64, out_shape)).out
    starts = np.zeros([], dtype=np.int64)
    for n, o in zip(ins, outs):
        starts = np.add.outer(starts * n, (np.arange(o) * n) // o)
    start_idx = ctx.broadcast(_const(ctx, starts, torch.int64), out_shape)
    all_inf = dy.CompareOp(values, ctx.broadcast(ctx.scalar(float("-inf"), ctx.dtype_of(values)), out_shape),
                           ir.StringAttr.get("eq"), out=ctx.type_like(values, torch.bool)).out
    return dy.SelectOp(all_inf, start_idx, idx, out=ctx.type_like(idx)).out


# op -> (kind, pooled dims)
ADAPTIVE = {aten._adaptive_avg_pool2d: ("avg", 2), aten._adaptive_avg_pool3d: ("avg", 3),
            aten.adaptive_max_pool2d: ("max", 2), aten.adaptive_max_pool3d: ("max", 3)}


@import_rule(*ADAPTIVE)
def _adaptive(ctx, node):
    kind, spatial = ADAPTIVE[node.target.overloadpacket]
    if kind == "avg" and spatial == 3 and ctx.out_meta(node).dtype in HALF:
        raise Unsupported("half-precision 3-d adaptive average pooling: eager's kernel sums in the half type")
    if kind == "avg":
        return _adaptive_pool(ctx, node, kind, spatial)
    values = _adaptive_pool(ctx, node, kind, spatial)
    if not any(u.args[1] == 1 for u in node.users):
        return values, None
    x = ctx.tensor(node.args[0])
    if ctx.dtype_of(x) != ctx.dtype_of(values) or 0 in ctx.shape_of(values):
        raise Unsupported("adaptive max pooling indices of a half or empty tensor")
    return values, _max_indices(ctx, x, values, spatial)


# ----------------------------------------------------------------------------- contractions
# Eager contracts with BLAS calls in a fixed order; the rules below take the same steps (and, for
# half types, round where eager's half-typed intermediate results round).


def _scaled(ctx, x, factor):
    if factor == 1:
        return x
    return ctx.emit("mul", x, ctx.broadcast(ctx.scalar(factor, ctx.dtype_of(x)), ctx.shape_of(x)), out=ctx.type_like(x))


@import_rule(aten.addbmm)
def _addbmm(ctx, node):
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b]): one batched matmul, a sum over b."""
    val = ctx.out_meta(node)
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    if not all(isinstance(v, (int, float)) for v in (beta, alpha)) or not val.dtype.is_floating_point:
        raise Unsupported("addbmm with non-number alpha/beta or integer tensors")
    compute, shape = compute_dtype(val.dtype), list(static_shape(val))
    b1, b2 = (ctx.cast(ctx.tensor(a), compute) for a in node.args[1:3])
    if 0 in ctx.shape_of(b1)[:1] + shape:
        raise Unsupported("addbmm over an empty batch")
    prod = dy.MatmulOp(b1, b2, out=ctx.type_like(b1, shape=[ctx.shape_of(b1)[0], *shape])).out
    y = _scaled(ctx, reduce(ctx, prod, "sum", [0], False), alpha)
    if beta != 0:  # beta == 0 ignores self, NaNs included
        y = ctx.emit("add", _scaled(ctx, ctx.operand(node.args[0], compute, shape), beta), y, out=ctx.type_like(y))
    return ctx.cast(y, val.dtype)


def _product_sum(ctx, a, b, dims):
    """sum over `dims` of a * b (both broadcast to their common shape), summed in order."""
    shape = [max(x, y) for x, y in zip(ctx.shape_of(a), ctx.shape_of(b))]
    p = ctx.emit("mul", ctx.broadcast(a, shape), ctx.broadcast(b, shape), out=ctx.type_like(a, shape=shape))
    if not dims:
        return p
    return reduce(ctx, p, "sum", sorted(dims), True)


@import_rule(aten._trilinear)
def _trilinear(ctx, node):
    """torch.nn.functional.bilinear's contraction: each input unsqueezed at its `expand` dims,
    the product summed over `sumdim`. Like eager, in two steps: i1 * i2 summed over the dims
    i3 lacks, then times i3 summed over the rest."""
    i1, i2, i3, e1, e2, e3, sumdim = node.args[:7]
    val = ctx.out_meta(node)
    if not val.dtype.is_floating_point:
        raise Unsupported("_trilinear of integer tensors")
    compute = compute_dtype(val.dtype)
    ops = []
    for arg, expand in ((i1, e1), (i2, e2), (i3, e3)):
        v = ctx.cast(ctx.tensor(arg), compute)
        shape = ctx.shape_of(v)
        rank = len(shape) + len(expand)
        full, it = [], iter(shape)
        for d in range(rank):
            full.append(1 if d in expand else next(it))
        ops.append(ctx.reshape(v, full))
    if 0 in ctx.shape_of(ops[0]) + ctx.shape_of(ops[1]) + ctx.shape_of(ops[2]):
        return ctx.full(0, list(static_shape(val)), val.dtype)  # empty sums are zeros
    first = [d for d in sumdim if d in e3]
    t = _product_sum(ctx, ops[0], ops[1], first)
    if val.dtype != compute:  # eager's first product is a half tensor
        t = ctx.cast(ctx.cast(t, val.dtype), compute)
    y = _product_sum(ctx, t, ops[2], [d for d in sumdim if d not in e3])
    return ctx.cast(ctx.reshape(y, list(static_shape(val))), val.dtype)
