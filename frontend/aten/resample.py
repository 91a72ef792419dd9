"""Resampling: grid sampling (grid_sampler_2d/3d, as decompositions), nearest upsampling (a
decomposition: eager's source index) and antialiased bilinear resizing. (Other interpolation and
upsampling reach the importer decomposed into gathers and arithmetic by torch's own
decompositions.)"""

import contextlib
import itertools

import numpy as np
import torch
from torch._decomp import get_decompositions

from ...dialects import dynamo as dy
from ..half_precision import in_float32
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import const

aten = torch.ops.aten


def full_precision_decompositions() -> dict:
    """Grid sampling as gathers and arithmetic we import: 2-d through torch's reference, 3-d
    through our own steps (one scalar kernel for all types in eager). Half inputs are computed in
    float32 and rounded once, as CUDA's kernels do (eager's CPU kernels round every step in the
    half type, and how depends on the CPU's vector width: not followed)."""
    table = {op: in_float32(ref) for op, ref in get_decompositions([aten.grid_sampler_2d]).items()}
    table[aten.grid_sampler_3d.default] = in_float32(lambda *args: _grid_sample(*args))
    return table


# ----------------------------------------------------------------------------- nearest upsampling


def _nearest_scale(isize, osize, scale, device) -> torch.Tensor:
    """eager's compute_scales_value<float>: (float)(1 / scale) where a scale is given (> 0),
    else (float)isize / osize, divided in float32 (sizes below 2^24 are exact in it)."""
    if scale is not None and scale > 0:
        return torch.scalar_tensor(float(np.float32(1.0 / scale)), dtype=torch.float32, device=device)
    f32 = lambda n: torch.scalar_tensor(n, dtype=torch.float32, device=device)  # noqa: E731
    return f32(isize) / f32(osize)


def _nearest_source(isize, osize, scale, exact: bool, device) -> torch.Tensor:
    """The input index of each output index, as eager's nearest_idx / nearest_exact_idx (ATen's
    UpSample.h): nearest keeps an index where the size is kept and halves it where the size
    doubles, else floor(dst * s) in float32; nearest-exact is floor((dst + 0.5) * s), the product
    in double rounded to float32; both at most isize - 1."""
    dst = torch.arange(osize, device=device)
    if not exact and osize == isize:
        return dst
    if not exact and osize == 2 * isize:
        return dst // 2
    s = _nearest_scale(isize, osize, scale, device)
    if exact:
        position = ((dst.to(torch.float64) + 0.5) * s.to(torch.float64)).to(torch.float32)
    else:
        position = dst.to(torch.float32) * s
    return position.to(torch.int64).clamp_max(isize - 1)  # position >= 0: truncation is floor


def _nearest_indices(input, output_size, scales, exact=False):
    """Stands in for torch._decomp's `_compute_upsample_nearest_indices` (same signature) while
    AOTAutograd traces a graph for us (`eager_nearest_indices`). torch's takes
    s = isize / (isize * scale) in double and does not clamp: a scale given beside an output size
    (torch-mlir's UpSampleNearest2dDynamicFactor: 2x2 to 6x10 at 2.3, 4.7) read index 2 of a
    size-2 dim, and a size kept at a scale other than 1 moved indices eager keeps."""
    spatial = len(output_size)
    indices = []
    for d, (osize, scale) in enumerate(zip(output_size, scales)):
        src = _nearest_source(input.shape[input.dim() - spatial + d], osize, scale, exact, input.device)
        indices.append(src.reshape([-1] + [1] * (spatial - 1 - d)))
    return indices


@contextlib.contextmanager
def eager_nearest_indices():
    """While AOTAutograd traces: nearest upsampling's source indices computed as eager's kernel
    does. torch registers the upsample_nearest ops' decompositions as Python kernels of their
    Autograd keys, which run before any decomposition table is consulted (and F.interpolate
    reaches them as one call Dynamo does not look into), so the index function they call is
    swapped instead, for the trace only (under Dynamo's compile lock; inductor keeps torch's)."""
    from torch._decomp import decompositions

    original = getattr(decompositions, "_compute_upsample_nearest_indices", None)
    if original is None:  # another torch: its decomposition stays (the sweep compares it with eager)
        yield
        return
    decompositions._compute_upsample_nearest_indices = _nearest_indices
    try:
        yield
    finally:
        decompositions._compute_upsample_nearest_indices = original


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
    a = bind(node)
    val = ctx.out_meta(node)
    if val.dtype != torch.float32:
        raise Unsupported("antialiased resize of a non-float32 tensor")
    x = ctx.tensor(a.self)
    shape, out_shape = ctx.shape_of(x), list(static_shape(val))
    if 0 in shape or 0 in out_shape:
        raise Unsupported("antialiased resize of an empty tensor")
    (h, w), (oh, ow) = shape[-2:], out_shape[-2:]
    planes = int(np.prod(shape[:-2]))
    ww = const(ctx, _aa_weights(w, ow, bool(a.align_corners), a.scales_w).T.copy(), torch.float32)  # [w, ow]
    wh = const(ctx, _aa_weights(h, oh, bool(a.align_corners), a.scales_h), torch.float32)  # [oh, h]
    rows = ctx.reshape(x, [planes * h, w])
    y = dy.MatmulOp(rows, ww, out=ctx.type_like(rows, shape=[planes * h, ow])).out  # width first
    y = ctx.reshape(y, [planes, h, ow])
    wh = ctx.broadcast(ctx.reshape(wh, [1, oh, h]), [planes, oh, h])
    y = dy.MatmulOp(wh, y, out=ctx.type_like(y, shape=[planes, oh, ow])).out
    return ctx.reshape(y, out_shape)
