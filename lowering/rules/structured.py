"""Contractions and windows -> linalg named ops (matmul, 2-d conv and pooling) or generics (3-d
conv and pooling, which linalg names only channels-last or ungrouped); gathers -> generics."""

import numpy as np
from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, convert, is_float, lowest
from .common import PARALLEL, REDUCTION, affine_map, empty, filled, generic, identity, loop_index, matmul_init, ranked


def _zero_filled(t, like=None, dim_map=None):
    return filled(t, const(t.element_type, 0), like, dim_map)


@register_lowering(dy.MatmulOp)
def _lower_matmul(op):
    out = ranked(op.out)
    rank = out.rank
    acc = matmul_init(op, const(out.element_type, 0))
    named = linalg.matmul if rank == 2 else linalg.batch_matmul
    return named(op.lhs, op.rhs, outs=[acc])


def _pad_spatial(x, padding, value):
    """Pad the spatial dims (all but N, C) of an NC[D]HW tensor with a scalar on both sides."""
    if not any(padding):
        return x
    src = ranked(x)
    low = [0, 0, *padding]
    shape = [s + 2 * p for s, p in zip(src.shape, low)]
    out = ir.RankedTensorType.get(shape, src.element_type)
    pad = tensor.PadOp(out, x, [], [], low, low)
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * src.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(value)
    return pad.result


def _window_attrs(stride, dilation) -> dict:
    return dict(strides=list(stride), dilations=list(dilation))


def _window_expr(out_dim: int, win_dim: int, stride: int, dilation: int) -> ir.AffineExpr:
    """The input position `o * stride + k * dilation` of window slot k at output o."""
    o, k = ir.AffineDimExpr.get(out_dim), ir.AffineDimExpr.get(win_dim)
    return o * ir.AffineConstantExpr.get(stride) + k * ir.AffineConstantExpr.get(dilation)


def _map(n_dims: int, exprs) -> ir.AffineMapAttr:
    exprs = [ir.AffineDimExpr.get(e) if isinstance(e, int) else e for e in exprs]
    return ir.AffineMapAttr.get(ir.AffineMap.get(n_dims, 0, exprs))


@register_lowering(dy.Conv2dOp)
def _lower_conv(op):
    out = ranked(op.out)
    stride, padding, dilation = (dy.int_list(a) for a in (op.stride, op.padding, op.dilation))
    groups = ir.IntegerAttr(op.groups).value
    x = _pad_spatial(op.x, padding, const(out.element_type, 0))
    if out.rank == 5:
        return _conv_generic(x, op.weight, out, groups, stride, dilation)
    attrs = _window_attrs(stride, dilation)
    if groups == 1:
        return linalg.conv_2d_nchw_fchw(x, op.weight, outs=[_zero_filled(out)], **attrs)
    return _grouped_conv(x, op.weight, out, groups, attrs)


def _grouped_conv(x, weight, out, groups, attrs):
    """NCHW -> N,G,C/G,H,W and FCHW -> G,F/G,C,H,W, then conv_2d_ngchw_gfchw, then back."""
    xs, ws = list(ranked(x).shape), list(ranked(weight).shape)
    elem = out.element_type
    x5 = tensor.expand_shape(ir.RankedTensorType.get([xs[0], groups, xs[1] // groups, xs[2], xs[3]], elem),
                             x, [[0], [1, 2], [3], [4]], output_shape=[], static_output_shape=[xs[0], groups, xs[1] // groups, xs[2], xs[3]])
    w5 = tensor.expand_shape(ir.RankedTensorType.get([groups, ws[0] // groups] + ws[1:], elem),
                             weight, [[0, 1], [2], [3], [4]], output_shape=[], static_output_shape=[groups, ws[0] // groups] + ws[1:])
    o = list(out.shape)
    out5 = ir.RankedTensorType.get([o[0], groups, o[1] // groups, o[2], o[3]], elem)
    y5 = linalg.conv_2d_ngchw_gfchw(x5, w5, outs=[_zero_filled(out5)], **attrs)
    return tensor.collapse_shape(out, y5, [[0], [1, 2], [3], [4]])


def _conv_generic(x, weight, out, groups, stride, dilation):
    """Any-rank grouped convolution as one generic (linalg has no grouped 3-d named op).

    Loops (n, g, f, o..., c, k...) over the result viewed as N,G,F/G,O...; the input's channel
    is g*C/G + c and the weight's filter g*F/G + f, so neither operand needs reshaping.
    """
    elem = out.element_type
    spatial = out.rank - 2
    shape = list(out.shape)
    fg, cg = shape[1] // groups, ranked(weight).shape[1]
    grouped = ir.RankedTensorType.get([shape[0], groups, fg, *shape[2:]], elem)
    n_loops = 4 + 2 * spatial  # n, g, f, o..., c, k...
    o_dims = list(range(3, 3 + spatial))
    c_dim = 3 + spatial
    k_dims = list(range(c_dim + 1, n_loops))
    g, c, f = (ir.AffineDimExpr.get(d) for d in (1, c_dim, 2))
    x_map = _map(n_loops, [0, g * ir.AffineConstantExpr.get(cg) + c]
                 + [_window_expr(o, k, s, d) for o, k, s, d in zip(o_dims, k_dims, stride, dilation)])
    w_map = _map(n_loops, [g * ir.AffineConstantExpr.get(fg) + f, c_dim, *k_dims])
    y_map = _map(n_loops, [0, 1, 2, *o_dims])
    iters = [PARALLEL] * (3 + spatial) + [REDUCTION] * (1 + spatial)
    mul, add = (arith.mulf, arith.addf) if is_float(elem) else (arith.muli, arith.addi)
    y = generic([x, weight], [_zero_filled(grouped)], [x_map, w_map, y_map], iters,
                lambda a, b, acc: [add(acc, mul(a, b))])[0]
    return tensor.collapse_shape(out, y, [[0], [1, 2], *[[3 + i] for i in range(spatial)]])


POOL_COMBINE = {  # kind -> (float combine, integer combine)
    "max": (arith.maximumf, arith.maxsi),
    "sum": (arith.addf, arith.addi),
}


def _pool_generic(x, kind, out, acc, kernel, stride, dilation):
    """Any-rank NC... pooling as one generic (linalg's 3-d pooling named ops are channels-last);
    the unused window operand gives the reduction loops their sizes, as in the named ops."""
    spatial = out.rank - 2
    n_loops = 2 + 2 * spatial
    o_dims, k_dims = list(range(2, 2 + spatial)), list(range(2 + spatial, n_loops))
    x_map = _map(n_loops, [0, 1] + [_window_expr(o, k, s, d) for o, k, s, d in zip(o_dims, k_dims, stride, dilation)])
    window = tensor.empty(kernel, out.element_type)
    combine = POOL_COMBINE[kind][0 if is_float(out.element_type) else 1]
    iters = [PARALLEL] * (2 + spatial) + [REDUCTION] * spatial
    return generic([x, window], [acc], [x_map, _map(n_loops, k_dims), _map(n_loops, [0, 1, *o_dims])], iters,
                   lambda v, _w, a: [combine(a, v)])[0]


@register_lowering(dy.Pool2dOp)
def _lower_pool(op):
    out = ranked(op.out)
    elem = out.element_type
    kind = ir.StringAttr(op.kind).value
    kernel, stride, padding, dilation = (dy.int_list(a) for a in (op.kernel, op.stride, op.padding, op.dilation))
    init_value = lowest(elem) if kind == "max" else const(elem, 0)
    x = _pad_spatial(op.x, padding, init_value)
    acc = filled(out, init_value)
    reduce_kind = "max" if kind == "max" else "sum"
    if out.rank == 5:
        pooled = _pool_generic(x, reduce_kind, out, acc, kernel, stride, dilation)
    else:
        named = linalg.pooling_nchw_max if kind == "max" else linalg.pooling_nchw_sum
        pooled = named(x, tensor.empty(kernel, elem), outs=[acc], **_window_attrs(stride, dilation))
    if kind != "avg":
        return pooled
    area = const(elem, int(np.prod(kernel)))
    return generic([pooled], [empty(out)], [identity(out.rank)] * 2, [PARALLEL] * out.rank,
                   lambda s, _: [arith.divf(s, area) if is_float(elem) else arith.divsi(s, area)])[0]


@register_lowering(dy.GatherOp)
def _lower_gather(op):
    out, idx = ranked(op.out), ranked(op.indices)
    n_idx = idx.rank
    index_t = ir.IndexType.get()

    def body(i, _):
        row = arith.index_cast(index_t, i)
        rest = [loop_index(d) for d in range(n_idx, out.rank)]
        return [tensor.extract(op.x, [row, *rest])]

    return generic([op.indices], [empty(out)], [affine_map(out.rank, range(n_idx)), identity(out.rank)],
                   [PARALLEL] * out.rank, body)[0]


@register_lowering(dy.GatherAlongOp)
def _lower_gather_along(op):
    out, dim = ranked(op.out), ir.IntegerAttr(op.dim).value
    index_t = ir.IndexType.get()

    def body(i, _):
        coords = [loop_index(d) for d in range(out.rank)]
        coords[dim] = arith.index_cast(index_t, i)
        return [tensor.extract(op.x, coords)]

    return generic([op.indices], [empty(out)], [identity(out.rank)] * 2, [PARALLEL] * out.rank, body)[0]
