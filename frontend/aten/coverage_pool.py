"""Pooling for any kernel/stride/padding/dilation/ceil_mode over 2 or 3 spatial dims (the OpInfo
samples), where nn.py/training.py handle only the plain 2-d cases.

- Values come from dynamo.pool2d (2-d or 3-d). ceil_mode adds windows past the symmetric padding:
  the input is padded on the high side first (-inf for max, 0 for sums).
- Average pooling with count_include_pad=False, divisor_override or ceil_mode divides a sum pool
  by a per-output-position constant table of divisors (`_divisors`).
- Max-pool indices: every window's elements are gathered with a constant index (the window's
  positions in the -inf-padded volume): [planes, out..., K]. The argmax over K gives the window
  slot, and a constant table maps (window, slot) to torch's index in the unpadded volume.
- Max-pool backward: each input position sums grad_output over the (at most K) windows that can
  contain it and whose saved index names it; the candidate windows are a constant table, so the
  scatter-add of eager becomes a gather and a sum, in eager's order (ascending output position).
"""

import itertools

import numpy as np
import torch
from torch._decomp import get_decompositions
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..half_precision import in_float32
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .coverage_nn import _const, _outer, _strides, ordered_sum
from .elementwise import compute_dtype
from .nn import _i64s
from .reduction import reduce
from .training import _attr_i64, _indices_read, _iota, _max_pool_backward, _max_pool_with_indices, _pad, _permute

aten = torch.ops.aten

MAX_WINDOW_ELEMENTS = 1 << 22  # elements of a gathered [planes, out..., K] (or [in..., K, planes]) tensor


# ----------------------------------------------------------------------------- window geometry


def _per_dim(v, spatial: int) -> list[int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return [int(e) for e in (v * spatial if len(v) == 1 else v)]


class Geometry:
    """The windows of one pooling op over the last `spatial` dims of its input."""

    def __init__(self, kernel, stride, padding, dilation, ceil_mode, in_sizes, out_sizes):
        spatial = len(in_sizes)
        self.kernel = _per_dim(kernel, spatial)
        self.stride = _per_dim(stride, spatial) if stride else list(self.kernel)
        self.padding = _per_dim(padding or 0, spatial)
        self.dilation = _per_dim(dilation or 1, spatial)
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
        return [_i64s(v) for v in (self.kernel, self.stride, self.padding, self.dilation)]


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
        xb = _pad(ctx, xb, [0] * (spatial + 2), [0, 0, *geom.high], fill)
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
    args = list(node.args) + [None] * 7
    val = ctx.out_meta(node)
    out_shape = list(static_shape(val))
    x = ctx.tensor(node.args[0])
    if 0 in out_shape or 0 in ctx.shape_of(x):
        raise Unsupported("average pooling of an empty tensor")
    geom = Geometry(args[1], args[2], args[3], 1, args[4], ctx.shape_of(x)[-spatial:], out_shape[-spatial:])
    count_include_pad = args[5] is not False
    divisors = _divisors(geom, count_include_pad, args[6])
    compute = compute_dtype(val.dtype)
    x = ctx.cast(x, compute)
    if np.all(divisors == np.prod(geom.kernel)) and not any(geom.high):
        return ctx.cast(_pooled(ctx, x, "avg", geom, out_shape), val.dtype)
    total = _pooled(ctx, x, "sum", geom, out_shape)
    d = _const(ctx, divisors.astype(np.float32 if compute == torch.float32 else np.float64), compute)
    y = ctx.emit("div", total, ctx.broadcast(d, out_shape), out=ctx.type_like(total))
    return ctx.cast(y, val.dtype)


@import_rule(aten.avg_pool2d)
def _avg_pool2d(ctx, node):
    return _avg_pool(ctx, node, 2)


@import_rule(aten.avg_pool3d)
def _avg_pool3d(ctx, node):
    if ctx.out_meta(node).dtype in (torch.bfloat16, torch.float16):
        raise Unsupported("half-precision 3-d average pooling (eager has no kernel for it)")
    return _avg_pool(ctx, node, 3)


# ----------------------------------------------------------------------------- max pooling


def _max_geometry(ctx, node, x, out_shape, spatial: int, first: int = 1) -> Geometry:
    """max_poolNd_with_indices(x, k, s, p, d, ceil) or its backward(g, x, k, s, p, d, ceil, idx)."""
    args = list(node.args) + [None] * 8
    k, s, p, d, ceil = args[first:first + 5]
    return Geometry(k, s, p, d, ceil, ctx.shape_of(x)[-spatial:], out_shape[-spatial:])


def _index_tables(geom: Geometry):
    """(gather index into the flattened padded volume, torch index per slot), both [out..., K]."""
    spatial = len(geom.kernel)
    padded = [n + 2 * p + h for n, p, h in zip(geom.ins, geom.padding, geom.high)]
    pos, inside = zip(*(geom.positions(i) for i in range(spatial)))
    gather = _outer([q * st for q, st in zip(pos, _strides(padded))], np.add)
    torch_index = _outer([(q - p) * st for q, p, st in zip(pos, geom.padding, _strides(geom.ins))], np.add)
    inside = _outer(list(inside), np.logical_and)
    k = int(np.prod(geom.kernel))
    gather, torch_index, inside = (t.reshape(geom.outs + [k]) for t in (gather, torch_index, inside))
    # A window of -inf only keeps slot 0 (argmax sees nothing larger): there eager reports the
    # window's first position inside the input, so slot 0 maps to that.
    first_inside = np.take_along_axis(torch_index, inside.argmax(axis=-1)[..., None], axis=-1)[..., 0]
    torch_index[..., 0] = np.where(inside[..., 0], torch_index[..., 0], first_inside)
    return gather, torch_index, padded


def _general_max_pool(ctx, x, geom: Geometry, out_shape, out_dtype):
    spatial = len(geom.kernel)
    shape = ctx.shape_of(x)
    planes, k = int(np.prod(shape[:-spatial])), int(np.prod(geom.kernel))
    if planes * int(np.prod(geom.outs)) * k > MAX_WINDOW_ELEMENTS:
        raise Unsupported("max pooling windows too large to gather")
    gather, torch_index, padded = _index_tables(geom)
    xp = ctx.reshape(ctx.cast(x, compute_dtype(out_dtype)), [planes] + geom.ins)
    xp = _pad(ctx, xp, [0, *geom.padding], [0] + [p + h for p, h in zip(geom.padding, geom.high)], float("-inf"))
    rows = _permute(ctx, ctx.reshape(xp, [planes, int(np.prod(padded))]), [1, 0])
    g = dy.GatherOp(rows, _const(ctx, gather, torch.int64), out=ctx.type_like(rows, shape=geom.outs + [k, planes])).out
    g = _permute(ctx, g, [spatial + 1] + list(range(spatial + 1)))  # planes, out..., K
    values = reduce(ctx, g, "max", [spatial + 1], False)
    window = [planes] + geom.outs
    slot = dy.ArgReduceOp(g, ir.StringAttr.get("max"), _attr_i64(spatial + 1), out=ctx.type_like(g, torch.int64, window)).out
    table = ctx.broadcast(_const(ctx, torch_index, torch.int64), window + [k])
    index = dy.GatherAlongOp(table, ctx.reshape(slot, window + [1]), _attr_i64(spatial + 1),
                             out=ctx.type_like(slot, shape=window + [1])).out
    return ctx.cast(ctx.reshape(values, out_shape), out_dtype), ctx.reshape(index, out_shape)


def _max_pool(ctx, node, spatial: int):
    val = ctx.out_meta(node, 0)
    x = ctx.tensor(node.args[0])
    out_shape = list(static_shape(val))
    if 0 in ctx.shape_of(x) or 0 in out_shape:
        raise Unsupported("max pooling of an empty tensor")
    geom = _max_geometry(ctx, node, x, out_shape, spatial)
    if not _indices_read(node):
        compute = compute_dtype(val.dtype)
        return ctx.cast(_pooled(ctx, ctx.cast(x, compute), "max", geom, out_shape), val.dtype), None
    if spatial == 2 and not any(geom.padding):
        # Disjoint, unpadded windows: training.py's rule (its backward rule matches it). With padding,
        # its argmax may pick a padded slot of an all -inf window, where eager names an input position.
        try:
            return _max_pool_with_indices(ctx, node)
        except Unsupported:
            pass
    return _general_max_pool(ctx, x, geom, out_shape, val.dtype)


@import_rule(aten.max_pool2d_with_indices)
def _max_pool2d_with_indices(ctx, node):
    return _max_pool(ctx, node, 2)


@import_rule(aten.max_pool3d_with_indices)
def _max_pool3d_with_indices(ctx, node):
    return _max_pool(ctx, node, 3)


# ----------------------------------------------------------------------------- max-pool backward


def _candidates(geom: Geometry):
    """Per input position (flat) and candidate slot: the flat output position of a window that
    can hold it (0 where none) and whether there is one, [in..., K] each. Slots run over the
    kernel backwards, so the candidates of each position ascend as eager's scatter visits them."""
    outs, valid = [], []
    for n, o, k, s, p, d in zip(geom.ins, geom.outs, geom.kernel, geom.stride, geom.padding, geom.dilation):
        start = np.arange(n)[:, None] + p - (np.arange(k)[::-1] * d)[None, :]  # o * s for slot k
        ok = (start >= 0) & (start % s == 0) & (start // s < o)
        outs.append(np.where(ok, start // s, 0))
        valid.append(ok)
    k = int(np.prod(geom.kernel))
    flat = _outer([t * st for t, st in zip(outs, _strides(geom.outs))], np.add).reshape(geom.ins + [k])
    ok = _outer(valid, np.logical_and).reshape(geom.ins + [k])
    return np.where(ok, flat, 0), ok


def _general_max_pool_backward(ctx, node, spatial: int):
    grad, x, indices = (ctx.tensor(node.args[i]) for i in (0, 1, 7))
    val = ctx.out_meta(node)
    shape, gshape = ctx.shape_of(x), ctx.shape_of(grad)
    if 0 in shape or 0 in gshape:
        raise Unsupported("max-pool backward of an empty tensor")
    geom = _max_geometry(ctx, node, x, gshape, spatial, first=2)
    planes, k = int(np.prod(shape[:-spatial])), int(np.prod(geom.kernel))
    n_in, n_out = int(np.prod(geom.ins)), int(np.prod(geom.outs))
    if n_in * k * planes > MAX_WINDOW_ELEMENTS:
        raise Unsupported("max-pool backward windows too large to gather")
    table, ok = _candidates(geom)
    table = _const(ctx, table.reshape(n_in, k), torch.int64)
    wide = [n_in, k, planes]

    def gathered(v):  # [planes, out...] -> [in, K, planes]: each candidate window's value
        rows = _permute(ctx, ctx.reshape(v, [planes, n_out]), [1, 0])
        return dy.GatherOp(rows, table, out=ctx.type_like(rows, shape=wide)).out

    compute = compute_dtype(val.dtype)
    g, idx = gathered(ctx.cast(grad, compute)), gathered(indices)
    here = ctx.broadcast(ctx.reshape(_iota(ctx, [n_in], 0), [n_in, 1, 1]), wide)
    hit = dy.CompareOp(idx, here, ir.StringAttr.get("eq"), out=ctx.type_like(idx, torch.bool)).out
    valid = ctx.broadcast(ctx.cast(_const(ctx, ok.reshape(n_in, k, 1).astype(np.int64), torch.int64), torch.bool), wide)
    hit = ctx.emit("and", hit, valid, out=ctx.type_like(hit))
    routed = dy.SelectOp(hit, g, ctx.broadcast(ctx.scalar(0, compute), wide), out=ctx.type_like(g)).out
    total = _permute(ctx, ordered_sum(ctx, routed, 1, val.dtype), [1, 0])  # eager's order and half roundings
    return ctx.cast(ctx.reshape(total, shape), val.dtype)


@import_rule(aten.max_pool2d_with_indices_backward)
def _max_pool2d_backward(ctx, node):
    try:  # disjoint, unpadded windows: training.py's rule recomputes the argmax, no gathers
        return _max_pool_backward(ctx, node)
    except Unsupported:
        return _general_max_pool_backward(ctx, node, 2)


@import_rule(aten.max_pool3d_with_indices_backward)
def _max_pool3d_backward(ctx, node):
    return _general_max_pool_backward(ctx, node, 3)


# ----------------------------------------------------------------------------- grid sampling


def full_precision_decompositions() -> dict:
    """Grid sampling as gathers and arithmetic we import: 2-d through torch's reference, 3-d
    through our own steps (one scalar kernel for all types in eager). Half inputs are computed in
    float32 and rounded once, as CUDA's kernels do (eager's CPU kernels round every step in the
    half type, and how depends on the CPU's vector width: not followed)."""
    table = {op: in_float32(ref) for op, ref in get_decompositions([aten.grid_sampler_2d]).items()}
    table[aten.grid_sampler_3d.default] = in_float32(lambda *args: _grid_sample(*args))
    return table


def _source_index(coord, size: int, padding_mode: int, align_corners: bool):
    """A grid coordinate in [-1, 1] as a position along a dim of `size`, with eager's roundings;
    border clamps it, reflection folds it back (about the end pixels' centers with
    align_corners, else about their outer edges) and clamps."""
    if align_corners:
        x = ((coord + 1) / 2) * (size - 1)
    else:
        x = ((coord + 1) * size - 1) / 2
    if padding_mode == 2:  # reflection
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if hi > lo:
            span = hi - lo
            d = (x - lo).abs()
            extra = torch.fmod(d, span)
            odd = torch.fmod(torch.floor(d / span), 2) != 0
            x = torch.where(odd, span - extra + lo, extra + lo)
        else:
            x = torch.zeros_like(x)
    if padding_mode in (1, 2):
        x = x.clamp(0, size - 1)
    return x


def _grid_sample(x, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    """Bilinear/trilinear (mode 0) or nearest (mode 1) sampling of x [N, C, (D,) H, W] at grid
    [N, ..., 2 or 3] (coordinates in x, y(, z) order): gathers from the flattened input, zero
    outside it; the corners' products are summed in eager's order (slowest dim outermost)."""
    if interpolation_mode not in (0, 1):
        return NotImplemented  # bicubic: its import rule leaves it eager
    n, c, *sizes = x.shape
    out_shape = grid.shape[1:-1]
    coords = [_source_index(grid[..., len(sizes) - 1 - i], size, padding_mode, align_corners)
              for i, size in enumerate(sizes)]  # slowest dim first
    flat = x.reshape(n, c, -1)

    def corner(points):
        inside = None
        for p, size in zip(points, sizes):
            ok = (p >= 0) & (p < size)
            inside = ok if inside is None else inside & ok
        index = None
        for p, size in zip(points, sizes):
            p = torch.where(inside, p, 0).to(torch.int64)  # integer math: a half can't hold the index
            index = p if index is None else index * size + p
        index = index.reshape(n, 1, -1)
        values = torch.gather(flat, 2, index.expand(n, c, index.shape[-1])).reshape(n, c, *out_shape)
        return torch.where(inside.unsqueeze(1), values, 0)

    if interpolation_mode == 1:
        return corner([torch.round(p) for p in coords])
    lows = [torch.floor(p) for p in coords]
    # per dim: (corner, weight) for the low and high neighbour
    sides = [((lo, lo + 1 - p), (lo + 1, p - lo)) for lo, p in zip(lows, coords)]
    out = None
    for choice in itertools.product(*sides):
        weight = None
        for _, w in reversed(choice):  # eager multiplies the x weight first
            weight = w if weight is None else weight * w
        term = corner([pt for pt, _ in choice]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


@import_rule(aten.grid_sampler_2d)
def _grid_sampler(ctx, node):
    raise Unsupported("half-precision bicubic grid sampling")


# ----------------------------------------------------------------------------- antialiased resize
# Bilinear resizing with antialiasing is separable: each resized dim is a product with a constant
# [out, in] weight matrix of a triangle filter stretched by the downscale factor, normalized per
# output. Eager resizes the width first, then the height, each a sum over the window in order;
# a dense matrix adds only exact zeros besides, so two matmuls round as eager does.


def _aa_weights(n_in: int, n_out: int, align_corners: bool, scale) -> np.ndarray:
    """[n_out, n_in] float32 weights, computed in float32 as eager's kernel computes them."""
    f = np.float32
    if align_corners:
        scale = f((n_in - 1) / (n_out - 1)) if n_out > 1 else f(0)
    else:
        scale = f(1.0 / scale) if scale else f(n_in / n_out)
    support = scale if scale >= 1 else f(1.0)
    invscale = f(1.0) / scale if scale >= 1 else f(1.0)
    w = np.zeros((n_out, n_in), dtype=np.float32)
    for i in range(n_out):
        center = scale * f(i + 0.5)
        lo = max(int(center - support + f(0.5)), 0)
        size = min(int(center + support + f(0.5)), n_in) - lo
        taps = np.array([max(f(0), f(1) - abs((f(j + lo) - center + f(0.5)) * invscale)) for j in range(size)], dtype=np.float32)
        total = f(0)
        for t in taps:
            total = f(total + t)
        w[i, lo:lo + size] = taps / total if total != 0 else taps
    return w


@import_rule(aten._upsample_bilinear2d_aa)
def _upsample_bilinear2d_aa(ctx, node):
    args = list(node.args) + [None] * 5
    val = ctx.out_meta(node)
    if val.dtype != torch.float32:
        raise Unsupported("antialiased resize of a non-float32 tensor")
    x = ctx.tensor(node.args[0])
    shape, out_shape = ctx.shape_of(x), list(static_shape(val))
    if 0 in shape or 0 in out_shape:
        raise Unsupported("antialiased resize of an empty tensor")
    (h, w), (oh, ow) = shape[-2:], out_shape[-2:]
    planes = int(np.prod(shape[:-2]))
    ww = _const(ctx, _aa_weights(w, ow, bool(args[2]), args[4]).T.copy(), torch.float32)  # [w, ow]
    wh = _const(ctx, _aa_weights(h, oh, bool(args[2]), args[3]), torch.float32)  # [oh, h]
    rows = ctx.reshape(x, [planes * h, w])
    y = dy.MatmulOp(rows, ww, out=ctx.type_like(rows, shape=[planes * h, ow])).out  # width first
    y = ctx.reshape(y, [planes, h, ow])
    wh = ctx.broadcast(ctx.reshape(wh, [1, oh, h]), [planes, oh, h])
    y = dy.MatmulOp(wh, y, out=ctx.type_like(y, shape=[planes, oh, ow])).out
    return ctx.reshape(y, out_shape)
