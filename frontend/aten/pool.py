"""Pooling: average and max pooling (values, indices, backward) for any kernel/stride/padding/
dilation/ceil_mode over 2 or 3 spatial dims, and adaptive average/max pooling.

- Values come from dynamo.pool2d (2-d or 3-d). ceil_mode adds windows past the symmetric padding:
  the input is padded on the high side first (-inf for max, 0 for sums).
- Average pooling with count_include_pad=False, divisor_override or ceil_mode divides a sum pool
  by a per-output-position constant table of divisors (`_divisors`).
- Max-pool indices: a running maximum over the K window slots, each slot a strided slice of the
  -inf-padded input, taken over where larger or NaN as eager's kernels do; a constant table per
  slot gives torch's index in the unpadded volume (`_window_max_indices`).
- Max-pool backward: max_pool_backward.py.
- Adaptive pooling: output i of a dim of size n pooled to o reads [floor(i*n/o), ceil((i+1)*n/o)).
  The windows are separable, so each pooled dim is one masked reduction of x broadcast to
  [..., o, n, ...].
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind, output_read, per_dim
from .builders import (HALF, arg_reduce, compare, compute_dtype, const, emit_like, i64s, iota, isnan,
                       outer, pad, permute, reduce, row_major_strides, select, slice_box)

aten = torch.ops.aten

MAX_WINDOW_ELEMENTS = 1 << 22  # elements of a gathered [planes, out..., K] (or [in..., K, planes]) tensor


# ----------------------------------------------------------------------------- window geometry


class Geometry:
    """The windows of one pooling op over the last `spatial` dims of its input."""

    def __init__(self, kernel, stride, padding, dilation, ceil_mode, in_sizes, out_sizes):
        spatial = len(in_sizes)
        self.kernel = per_dim(kernel, spatial)
        self.stride = per_dim(stride, spatial) if stride else list(self.kernel)
        self.padding = per_dim(padding or 0, spatial)
        self.dilation = per_dim(dilation or 1, spatial)
        self.ceil_mode = bool(ceil_mode)
        self.ins, self.outs = list(in_sizes), list(out_sizes)

    @property
    def high(self) -> list[int]:
        """Padding past the symmetric one that the last (ceil_mode) window needs."""
        return [max(0, (o - 1) * s + (k - 1) * d + 1 - n - 2 * p)
                for n, o, k, s, p, d in zip(self.ins, self.outs, self.kernel, self.stride, self.padding, self.dilation)]

    def positions(self, i: int):
        """Dim i: per output position and window slot, the position in the padded dim, and
        whether it lies inside the input."""
        pos = (np.arange(self.outs[i]) * self.stride[i])[:, None] + (np.arange(self.kernel[i]) * self.dilation[i])[None, :]
        p = self.padding[i]
        return pos, (pos >= p) & (pos < p + self.ins[i])

    def attrs(self):
        return [i64s(v) for v in (self.kernel, self.stride, self.padding, self.dilation)]


def _batched(ctx, x, spatial):
    """x as [N, C, spatial...] (an unbatched input gets N = 1)."""
    shape = ctx.shape_of(x)
    if len(shape) == spatial + 1:
        return ctx.reshape(x, [1] + shape)
    if len(shape) != spatial + 2:
        raise Unsupported(f"pooling a rank-{len(shape)} input over {spatial} dims")
    return x


def _pooled(ctx, x, kind: str, geom: Geometry, out_shape):
    """dynamo.pool2d of x (batched or not) with ceil_mode's high padding made explicit."""
    spatial = len(geom.kernel)
    xb = _batched(ctx, x, spatial)
    if any(geom.high):
        fill = float("-inf") if kind == "max" else 0.0
        if kind == "max" and not ctx.dtype_of(x).is_floating_point:
            fill = torch.iinfo(ctx.dtype_of(x)).min
        xb = pad(ctx, xb, [0] * (spatial + 2), [0, 0, *geom.high], fill)
    batched_out = ctx.shape_of(xb)[:2] + geom.outs
    y = dy.Pool2dOp(xb, ir.StringAttr.get(kind), *geom.attrs(), out=ctx.type_like(xb, shape=batched_out)).out
    return ctx.reshape(y, out_shape)


# ----------------------------------------------------------------------------- average pooling


def _divisors(geom: Geometry, count_include_pad: bool, divisor_override) -> np.ndarray:
    """Per output position, what eager divides the window sum by: the override; else the window
    clipped to the padded input (ceil_mode windows may overhang it); without count_include_pad,
    clipped to the input itself."""
    if divisor_override:
        return np.full(geom.outs, float(divisor_override))
    sizes = []
    for n, o, k, s, p in zip(geom.ins, geom.outs, geom.kernel, geom.stride, geom.padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        sizes.append(end - start)
    total = np.ones([])
    for size in sizes:
        total = np.multiply.outer(total, size)
    return total.astype(np.float64)


def _avg_pool(ctx, node, spatial: int):
    a = bind(node)
    val = ctx.out_meta(node)
    out_shape = list(static_shape(val))
    x = ctx.tensor(a.self)
    if 0 in out_shape or 0 in ctx.shape_of(x):
        raise Unsupported("average pooling of an empty tensor")
    geom = Geometry(a.kernel_size, a.stride, a.padding, 1, a.ceil_mode, ctx.shape_of(x)[-spatial:], out_shape[-spatial:])
    divisors = _divisors(geom, a.count_include_pad is not False, a.divisor_override)
    compute = compute_dtype(val.dtype)
    x = ctx.cast(x, compute)
    if np.all(divisors == np.prod(geom.kernel)) and not any(geom.high):
        return ctx.cast(_pooled(ctx, x, "avg", geom, out_shape), val.dtype)
    total = _pooled(ctx, x, "sum", geom, out_shape)
    d = const(ctx, divisors.astype(np.float32 if compute == torch.float32 else np.float64), compute)
    return ctx.cast(emit_like(ctx, "div", total, ctx.broadcast(d, out_shape)), val.dtype)


@import_rule(aten.avg_pool2d)
def _avg_pool2d(ctx, node):
    return _avg_pool(ctx, node, 2)


@import_rule(aten.avg_pool3d)
def _avg_pool3d(ctx, node):
    if ctx.out_meta(node).dtype in (torch.bfloat16, torch.float16):
        raise Unsupported("half-precision 3-d average pooling (eager has no kernel for it)")
    return _avg_pool(ctx, node, 3)


# ----------------------------------------------------------------------------- max pooling


def _max_geometry(ctx, a, x, out_shape, spatial: int) -> Geometry:
    """The windows of max_poolNd_with_indices or its backward (bound arguments `a`)."""
    return Geometry(a.kernel_size, a.stride, a.padding, a.dilation, a.ceil_mode, ctx.shape_of(x)[-spatial:],
                    out_shape[-spatial:])


def _index_table(geom: Geometry) -> np.ndarray:
    """torch's index of each window slot in the unpadded input, [out..., K]; slot 0 of a window
    names the window's first position inside the input even where it lies in the padding: a
    window of -inf keeps its initial index, and eager reports that position for it."""
    spatial = len(geom.kernel)
    pos, inside = zip(*(geom.positions(i) for i in range(spatial)))
    torch_index = outer([(q - p) * st for q, p, st in zip(pos, geom.padding, row_major_strides(geom.ins))], np.add)
    inside = outer(list(inside), np.logical_and)
    k = int(np.prod(geom.kernel))
    torch_index, inside = torch_index.reshape(geom.outs + [k]), inside.reshape(geom.outs + [k])
    first_inside = np.take_along_axis(torch_index, inside.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    torch_index[..., 0] = np.where(inside[..., 0], torch_index[..., 0], first_inside)
    return torch_index


def _window_max_indices(ctx, x, geom: Geometry, out_shape, out_dtype):
    """torch's indices of the window maxima: a running maximum over the K window slots, each slot
    a strided slice of the padded input, in eager's scan order; a slot takes over where its
    value is larger or NaN (eager's kernels: `val > max || isnan(val)`, so the last NaN wins),
    from -inf and the window's first position inside the input. Elementwise over [planes,
    out...] only: no [planes, out..., K] tensor of gathered windows (whose argmax took the first
    NaN: wrong indices, and gradients, for windows holding two NaNs)."""
    spatial = len(geom.kernel)
    planes = int(np.prod(ctx.shape_of(x)[:-spatial]))
    compute = compute_dtype(out_dtype)
    floating = compute.is_floating_point
    lowest = float("-inf") if floating else torch.iinfo(compute).min
    xp = ctx.reshape(ctx.cast(x, compute), [planes] + geom.ins)
    xp = pad(ctx, xp, [0, *geom.padding], [0] + [p + h for p, h in zip(geom.padding, geom.high)], lowest)
    window = [planes] + geom.outs
    torch_index = _index_table(geom)
    best = ctx.broadcast(ctx.scalar(lowest, compute), window)
    index = ctx.broadcast(const(ctx, torch_index[..., 0], torch.int64), window)
    for slot, offsets in enumerate(np.ndindex(*geom.kernel)):
        start = [0] + [o * d for o, d in zip(offsets, geom.dilation)]
        v = slice_box(ctx, xp, start, window, [1, *geom.stride])
        take = compare(ctx, v, best, "gt")
        if floating:
            take = emit_like(ctx, "or", take, isnan(ctx, v))
        best = select(ctx, take, v, best)
        here = ctx.broadcast(const(ctx, torch_index[..., slot], torch.int64), window)
        index = select(ctx, take, here, index)
    return ctx.reshape(index, out_shape)


def _max_pool(ctx, node, spatial: int):
    a = bind(node)
    val = ctx.out_meta(node, 0)
    x = ctx.tensor(a.self)
    out_shape = list(static_shape(val))
    if 0 in ctx.shape_of(x) or 0 in out_shape:
        raise Unsupported("max pooling of an empty tensor")
    geom = _max_geometry(ctx, a, x, out_shape, spatial)
    # The values are one pooling op (which the cpu target's channels-last pass keeps NHWC).
    values = ctx.cast(_pooled(ctx, ctx.cast(x, compute_dtype(val.dtype)), "max", geom, out_shape), val.dtype)
    return values, (_window_max_indices(ctx, x, geom, out_shape, val.dtype) if output_read(node, 1) else None)


@import_rule(aten.max_pool2d_with_indices)
def _max_pool2d_with_indices(ctx, node):
    return _max_pool(ctx, node, 2)


@import_rule(aten.max_pool3d_with_indices)
def _max_pool3d_with_indices(ctx, node):
    return _max_pool(ctx, node, 3)


# ----------------------------------------------------------------------------- disjoint 2-d windows


def _pool2d(ctx, x, kind, out_val, kernel, stride, padding, dilation):
    """dynamo.pool2d of a batched 2-d (NCHW) input, computed in the compute dtype."""
    attrs = [i64s(per_dim(v, 2)) for v in (kernel, stride or kernel, padding, dilation)]
    compute = compute_dtype(out_val.dtype)
    y = dy.Pool2dOp(ctx.cast(x, compute), ir.StringAttr.get(kind), *attrs,
                    out=ctx.type_like(x, compute, static_shape(out_val))).out
    return ctx.cast(y, out_val.dtype)


class Windows:
    """Disjoint pooling windows of an NCHW tensor (stride == kernel, dilation 1): the windows
    are a reshape of the input, so a gradient routed per window slot is scattered back by the
    inverse reshape (max_pool_backward.py). `a`: the bound arguments of the backward."""

    def __init__(self, a, x_shape):
        kernel = per_dim(a.kernel_size, 2)
        stride = per_dim(a.stride, 2) if a.stride else kernel
        padding, dilation = per_dim(a.padding or 0, 2), per_dim(a.dilation or 1, 2)
        if stride != kernel or dilation != [1, 1] or a.ceil_mode or len(x_shape) != 4:
            raise Unsupported("max-pool indices/backward need stride == kernel, dilation 1, NCHW, no ceil_mode")
        self.kernel, self.padding = kernel, padding
        self.n, self.c, self.h, self.w = x_shape
        self.oh = (self.h + 2 * padding[0] - kernel[0]) // kernel[0] + 1
        self.ow = (self.w + 2 * padding[1] - kernel[1]) // kernel[1] + 1

    @property
    def window_shape(self):
        return [self.n, self.c, self.oh, self.ow, self.kernel[0] * self.kernel[1]]

    def gather(self, ctx, x):
        """x (N,C,H,W) -> (N,C,OH,OW,kh*kw): padding with -inf, trailing rows cut."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        x = pad(ctx, x, [0, 0, ph, pw], [0, 0, ph, pw], float("-inf") if ctx.dtype_of(x).is_floating_point else 0)
        x = slice_box(ctx, x, [0, 0, 0, 0], [self.n, self.c, self.oh * kh, self.ow * kw])
        x = ctx.reshape(x, [self.n, self.c, self.oh, kh, self.ow, kw])
        return ctx.reshape(permute(ctx, x, [0, 1, 2, 4, 3, 5]), self.window_shape)

    def scatter(self, ctx, windows):
        """The inverse of gather for gradients: (N,C,OH,OW,kh*kw) -> (N,C,H,W), zeros elsewhere."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        x = ctx.reshape(windows, [self.n, self.c, self.oh, self.ow, kh, kw])
        x = ctx.reshape(permute(ctx, x, [0, 1, 2, 4, 3, 5]), [self.n, self.c, self.oh * kh, self.ow * kw])
        x = pad(ctx, x, [0] * 4, [0, 0, self.h + 2 * ph - self.oh * kh, self.w + 2 * pw - self.ow * kw])
        return slice_box(ctx, x, [0, 0, ph, pw], [self.n, self.c, self.h, self.w])

    def flat_indices(self, ctx, arg):
        """torch's indices (row * W + col in the unpadded input) of window slots `arg`
        (0..kh*kw-1), shaped [N, C, OH, OW, ...]."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        shape = ctx.shape_of(arg)

        def scalar(v):
            return ctx.broadcast(ctx.scalar(v, torch.int64), shape)

        i = emit_like(ctx, "floordiv", arg, scalar(kw))
        j = emit_like(ctx, "rem", arg, scalar(kw))
        row = emit_like(ctx, "add", iota(ctx, shape, 2, -ph, kh), i)
        col = emit_like(ctx, "add", iota(ctx, shape, 3, -pw, kw), j)
        return emit_like(ctx, "add", emit_like(ctx, "mul", row, scalar(self.w)), col)


# ----------------------------------------------------------------------------- adaptive pooling


def _window_mask(n: int, o: int) -> np.ndarray:
    i = np.arange(o)[:, None]
    h = np.arange(n)[None, :]
    return (h >= (i * n) // o) & (h < -((-(i + 1) * n) // o))


def _pool_dim(ctx, x, d: int, o: int, kind: str):
    shape = ctx.shape_of(x)
    wide = shape[:d] + [o] + shape[d:]
    mask = _window_mask(shape[d], o).astype(np.int64)
    m = ctx.broadcast(ctx.reshape(const(ctx, mask), [1] * d + list(mask.shape) + [1] * (len(shape) - d - 1)), wide)
    keep = compare(ctx, m, ctx.broadcast(ctx.scalar(0, torch.int64), wide), "ne")
    xb = ctx.broadcast(ctx.reshape(x, shape[:d] + [1] + shape[d:]), wide)
    fill = ctx.broadcast(ctx.scalar(float("-inf") if kind == "max" else 0.0, ctx.dtype_of(x)), wide)
    return reduce(ctx, select(ctx, keep, xb, fill), kind, [d + 1], False)


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
    x = ctx.cast(ctx.tensor(bind(node).self), compute)
    shape, out_shape = ctx.shape_of(x), list(static_shape(val))
    if 0 in out_shape:
        return ctx.full(0, out_shape, val.dtype)
    if 0 in shape:
        raise Unsupported("adaptive pooling of an empty tensor")
    first = len(shape) - spatial
    for d in range(first, len(shape)):
        x = _pool_dim(ctx, x, d, out_shape[d], "max" if kind == "max" else "sum")
    if kind == "avg":
        counts = const(ctx, _counts(shape[first:], out_shape[first:]), compute)
        x = emit_like(ctx, "div", x, ctx.broadcast(counts, out_shape))
    return ctx.cast(x, val.dtype)


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
    for n, o in zip(ins, outs):
        mask = np.logical_and.outer(mask, _window_mask(n, o))  # axes: o0, n0, o1, n1, ...
    mask = mask.transpose(list(range(0, 2 * spatial, 2)) + list(range(1, 2 * spatial, 2)))
    keep = ctx.cast(ctx.broadcast(const(ctx, mask.astype(np.int64)), wide), torch.bool)
    xb = ctx.broadcast(ctx.reshape(x, shape[:first] + [1] * spatial + ins), wide)
    picked = select(ctx, keep, xb, ctx.broadcast(ctx.scalar(float("-inf"), ctx.dtype_of(x)), wide))
    flat = ctx.reshape(picked, shape[:first] + outs + [int(np.prod(ins))])
    idx = arg_reduce(ctx, flat, "max", len(out_shape))
    starts = np.zeros([], dtype=np.int64)
    for n, o in zip(ins, outs):
        starts = np.add.outer(starts * n, (np.arange(o) * n) // o)
    start_idx = ctx.broadcast(const(ctx, starts), out_shape)
    all_inf = compare(ctx, values, ctx.broadcast(ctx.scalar(float("-inf"), ctx.dtype_of(values)), out_shape), "eq")
    return select(ctx, all_inf, start_idx, idx)


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
    if not output_read(node, 1):
        return values, None
    x = ctx.tensor(bind(node).self)
    if ctx.dtype_of(x) != ctx.dtype_of(values) or 0 in ctx.shape_of(values):
        raise Unsupported("adaptive max pooling indices of a half or empty tensor")
    return values, _max_indices(ctx, x, values, spatial)
