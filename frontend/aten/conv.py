"""Convolutions, forward and backward, built from dynamo.conv2d (which takes 2 or 3 spatial dims):
- 1-d convolution is a 2-d one over a unit height;
- transposed convolution is a convolution of the stride-dilated, padded input with the flipped,
  in/out-swapped weight; float 3-d transposed convolution follows eager's slow kernel instead
  (a column matmul and col2vol), for its order of sums;
- convolution_backward (2-d, groups=1): the input and weight gradients are dynamo.conv_grad_input
  and conv_grad_weight (a target may run them whole: cuDNN's backward on cuda; the generic rule
  is a convolution each, lowering/rules/conv.py); the bias gradient is a sum.
"""

import numpy as np
import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind, per_dim
from .builders import (HALF, const, compute_dtype, emit_like, flip, i64, i64s, ordered_sum, outer, pad, permute,
                       reduce, row_major_strides, select, slice_box)

aten = torch.ops.aten


def _conv(ctx, x, w, stride, padding, dilation, groups):
    """dynamo.conv2d over the input's 2 or 3 spatial dims."""
    xs, ws = ctx.shape_of(x), ctx.shape_of(w)
    spatial = [(xs[2 + i] + 2 * padding[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1
               for i in range(len(xs) - 2)]
    return dy.Conv2dOp(x, w, stride=i64s(stride), padding=i64s(padding), dilation=i64s(dilation),
                       groups=i64(groups), out=ctx.type_like(x, shape=[xs[0], ws[0], *spatial])).out


def _transposed_weight(ctx, w, groups):
    """[C_in, C_out/g, k...] -> [C_out, C_in/g, k...], spatially flipped."""
    cin, cout_g, *k = ctx.shape_of(w)
    w = ctx.reshape(w, [groups, cin // groups, cout_g, *k])
    w = permute(ctx, w, [0, 2, 1] + list(range(3, 3 + len(k))))
    w = ctx.reshape(w, [groups * cout_g, cin // groups, *k])
    return flip(ctx, w, range(2, 2 + len(k)))


def _dilate(ctx, x, stride):
    """Insert stride-1 zeros between neighbours along each spatial dim (a transposed conv's input):
    [N, C, s...] -> [N, C, s..., 1...] padded to [..., stride...], interleaved, trailing zeros cut."""
    if all(s == 1 for s in stride):
        return x
    n, c, *sizes = ctx.shape_of(x)
    k = len(sizes)
    x = ctx.reshape(x, [n, c] + [v for size in sizes for v in (size, 1)])
    x = pad(ctx, x, [0] * (2 + 2 * k), [0, 0] + [v for st in stride for v in (0, st - 1)])
    x = ctx.reshape(x, [n, c] + [size * st for size, st in zip(sizes, stride)])
    return slice_box(ctx, x, [0] * (2 + k), [n, c] + [(size - 1) * st + 1 for size, st in zip(sizes, stride)])


def _conv_transpose(ctx, x, w, stride, padding, dilation, output_padding, groups):
    k = ctx.shape_of(w)[2:]
    reach = [dilation[i] * (k[i] - 1) - padding[i] for i in range(len(k))]
    x = _dilate(ctx, x, list(stride))
    x = pad(ctx, x, [0] * (2 + len(k)), [0, 0, *output_padding])
    # Padding beyond the kernel's reach makes `reach` negative: the convolution then drops that
    # many positions at both ends of its input instead.
    crop = [max(-p, 0) for p in reach]
    if any(crop):
        n, c, *sizes = ctx.shape_of(x)
        x = slice_box(ctx, x, [0, 0, *crop], [n, c, *[size - 2 * cut for size, cut in zip(sizes, crop)]])
    w = _transposed_weight(ctx, w, groups)
    return _conv(ctx, x, w, [1] * len(k), [max(p, 0) for p in reach], dilation, groups)


MAX_COLUMN_GATHER = 1 << 24  # elements of the [out positions, K, N*C_out] gather of col2vol


def _col2vol_table(ins, outs, kernel, stride, padding, dilation):
    """Per output position (flat) and kernel offset (flat, ascending): the flat index into the
    [K, input positions] columns that lands there, and whether one does, [out, K] each."""
    pos, ok = [], []
    for n, o, k, s, p, d in zip(ins, outs, kernel, stride, padding, dilation):
        start = np.arange(o)[:, None] + p - (np.arange(k) * d)[None, :]  # input position * stride
        ok.append((start >= 0) & (start % s == 0) & (start // s < n))
        pos.append(np.where(ok[-1], start // s, 0))
    n_out, n_k, n_in = int(np.prod(outs)), int(np.prod(kernel)), int(np.prod(ins))
    index = outer([q * st for q, st in zip(pos, row_major_strides(ins))], np.add).reshape(n_out, n_k)
    valid = outer(ok, np.logical_and).reshape(n_out, n_k)
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
        ai = ctx.broadcast(ctx.cast(slice_box(ctx, a, [0, 0, i], [batch, m, 1]), torch.float64), shape)
        bi = ctx.broadcast(ctx.cast(slice_box(ctx, b, [0, i, 0], [batch, 1, n]), torch.float64), shape)
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
    wt = permute(ctx, ctx.reshape(w, [groups, cin_g, cout_g * n_k]), [0, 2, 1])  # g, C_out/g*K, C_in/g
    wt = ctx.reshape(ctx.broadcast(ctx.reshape(wt, [1, groups, cout_g * n_k, cin_g]), [n, groups, cout_g * n_k, cin_g]),
                     [n * groups, cout_g * n_k, cin_g])
    xs = ctx.reshape(x, [n * groups, cin_g, n_in])
    cols = _fma_matmul(ctx, wt, xs)
    rows = permute(ctx, ctx.reshape(cols, [planes, n_k * n_in]), [1, 0])  # (K, in) rows, planes
    table, valid = _col2vol_table(ins, outs, kernel, stride, padding, dilation)
    wide = [n_out, n_k, planes]
    g = dy.GatherOp(rows, const(ctx, table, torch.int64), out=ctx.type_like(rows, shape=wide)).out
    keep = ctx.broadcast(ctx.cast(const(ctx, valid.reshape(n_out, n_k, 1).astype(np.int64), torch.int64), torch.bool), wide)
    g = select(ctx, keep, g, ctx.broadcast(ctx.scalar(0, ctx.dtype_of(g)), wide))
    y = permute(ctx, ordered_sum(ctx, g, 1, ctx.dtype_of(g)), [1, 0])
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
    values = per_dim(values, max(spatial, 1))
    return [unit] + values if spatial == 1 else values


@import_rule(aten.convolution)
def _convolution(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    compute = compute_dtype(val.dtype)
    # A transposed convolution's rewrites (col2vol's ordered sums) compute in float32; a plain
    # one keeps half operands, which it sums in float32 (dialects/conv.py).
    operands = compute if a.transposed else val.dtype
    xv, wv = ctx.cast(ctx.tensor(a.input), operands), ctx.cast(ctx.tensor(a.weight), operands)
    rank = len(ctx.shape_of(xv))
    if rank not in (3, 4, 5):
        raise Unsupported(f"convolution of a rank-{rank} input (only 1-d, 2-d and 3-d, batched)")
    if rank == 3:  # N, C, L -> N, C, 1, L
        xv = ctx.reshape(xv, ctx.shape_of(xv)[:2] + [1] + ctx.shape_of(xv)[2:])
        wv = ctx.reshape(wv, ctx.shape_of(wv)[:2] + [1] + ctx.shape_of(wv)[2:])
    spatial = rank - 2
    stride, padding, dilation = (_per_dim(v, spatial, u) for v, u in ((a.stride, 1), (a.padding, 0), (a.dilation, 1)))
    if a.transposed:
        params = stride, padding, dilation, _per_dim(a.output_padding, spatial, 0), a.groups
        y = _transposed_conv(ctx, xv, wv, spatial, val.dtype in HALF, *params)
    else:
        y = ctx.cast(_conv(ctx, xv, wv, stride, padding, dilation, a.groups), compute)
    y = ctx.reshape(y, static_shape(val))
    if a.bias is not None:
        shape = ctx.shape_of(y)
        b = ctx.reshape(ctx.cast(ctx.tensor(a.bias), compute), [1, shape[1]] + [1] * (len(shape) - 2))
        y = emit_like(ctx, "add", y, ctx.broadcast(b, shape))
    return ctx.cast(y, val.dtype)


# ----------------------------------------------------------------------------- backward


@import_rule(aten.convolution_backward)
def _convolution_backward(ctx, node):
    a = bind(node)
    if a.transposed or a.groups != 1 or len(ctx.shape_of(ctx.tensor(a.input))) != 4:
        raise Unsupported("convolution backward: only 2-d, groups=1, not transposed")
    val = [v for v in ctx.out_meta(node) if v is not None][0]
    compute = compute_dtype(val.dtype)
    g, xv, wv = (ctx.cast(ctx.tensor(t), val.dtype) for t in (a.grad_output, a.input, a.weight))
    stride, padding, dilation = per_dim(a.stride, 2), per_dim(a.padding, 2), per_dim(a.dilation, 2)
    mask = a.output_mask
    window = dict(stride=i64s(stride), padding=i64s(padding), dilation=i64s(dilation), groups=i64(1))
    out = [None, None, None]
    if mask[0]:
        out[0] = dy.ConvGradInputOp(g, wv, **window, out=ctx.type_like(xv)).out
    if mask[1]:
        out[1] = dy.ConvGradWeightOp(g, xv, **window, out=ctx.type_like(wv)).out
    if mask[2]:
        out[2] = ctx.cast(reduce(ctx, ctx.cast(g, compute), "sum", [0, 2, 3]), val.dtype)
    return tuple(out)
