"""Pooling -> linalg named ops (2-d NCHW max/sum) or one generic (3-d NCDHW, whose named ops are
channels-last; 2-d channels-last NHWC, channel loop innermost); avg is the sum divided by the
window size."""

import numpy as np
from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, identity_of, is_float
from .common import (PARALLEL, REDUCTION, affine_map, empty, filled, generic, identity, pad_spatial, ranked,
                     window_attrs, window_expr)


POOL_COMBINE = {  # kind -> (float combine, integer combine)
    "max": (arith.maximumf, arith.maxsi),
    "sum": (arith.addf, arith.addi),
}


SPATIAL_START = {"nchw": 2, "nhwc": 1}  # the first spatial dim of each layout


def _pool_generic(x, kind, out, acc, kernel, stride, dilation):
    """Any-rank NC... pooling as one generic (linalg's 3-d pooling named ops are channels-last);
    the unused window operand gives the reduction loops their sizes, as in the named ops."""
    spatial = out.rank - 2
    n_loops = 2 + 2 * spatial
    o_dims, k_dims = list(range(2, 2 + spatial)), list(range(2 + spatial, n_loops))
    x_map = affine_map(n_loops, [0, 1] + [window_expr(*w) for w in zip(o_dims, k_dims, stride, dilation)])
    window = tensor.empty(kernel, out.element_type)
    combine = POOL_COMBINE[kind][0 if is_float(out.element_type) else 1]
    iters = [PARALLEL] * (2 + spatial) + [REDUCTION] * spatial
    maps = [x_map, affine_map(n_loops, k_dims), affine_map(n_loops, [0, 1, *o_dims])]
    return generic([x, window], [acc], maps, iters, lambda v, _w, a: [combine(a, v)])[0]


def _pool_channels_last(x, kind, out, acc, kernel, stride, dilation):
    """2-d NHWC pooling as one generic over (n, oh, ow, kh, kw, c): the channel loop innermost,
    where both tensors are contiguous, so it vectorizes. linalg.pooling_nhwc_max puts the window
    loops inside it instead: 168 vs 70 us for relu + max pool 2x2 of 8x64x64x16, one thread."""
    x_map = affine_map(6, [0, window_expr(1, 3, stride[0], dilation[0]), window_expr(2, 4, stride[1], dilation[1]), 5])
    window = tensor.empty(kernel, out.element_type)
    combine = POOL_COMBINE[kind][0 if is_float(out.element_type) else 1]
    iters = [PARALLEL] * 3 + [REDUCTION] * 2 + [PARALLEL]
    maps = [x_map, affine_map(6, [3, 4]), affine_map(6, [0, 1, 2, 5])]
    return generic([x, window], [acc], maps, iters, lambda v, _w, a: [combine(a, v)])[0]


@register_lowering(dy.Pool2dOp)
def _lower_pool(ctx, op):
    out = ranked(op.out)
    elem = out.element_type
    kind = ir.StringAttr(op.kind).value
    kernel, stride, padding, dilation = (dy.int_list(a) for a in (op.kernel, op.stride, op.padding, op.dilation))
    reduce_kind = "max" if kind == "max" else "sum"
    init_value = identity_of(POOL_COMBINE[reduce_kind][0], elem)
    layout = dy.layout_of(op)
    x = pad_spatial(op.x, padding, init_value, first=SPATIAL_START[layout])
    acc = filled(out, init_value)
    if out.rank == 5:
        pooled = _pool_generic(x, reduce_kind, out, acc, kernel, stride, dilation)
    elif layout == "nhwc":
        pooled = _pool_channels_last(x, reduce_kind, out, acc, kernel, stride, dilation)
    else:
        named = linalg.pooling_nchw_max if kind == "max" else linalg.pooling_nchw_sum
        pooled = named(x, tensor.empty(kernel, elem), outs=[acc], **window_attrs(stride, dilation))
    if kind != "avg":
        return pooled
    area = const(elem, int(np.prod(kernel)))
    return generic([pooled], [empty(out)], [identity(out.rank)] * 2, [PARALLEL] * out.rank,
                   lambda s, _: [arith.divf(s, area) if is_float(elem) else arith.divsi(s, area)])[0]
