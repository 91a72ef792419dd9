"""Contractions and windows -> linalg named ops (matmul, conv, pooling); gathers -> generics."""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, convert, is_float, lowest
from .common import PARALLEL, affine_map, empty, filled, generic, identity, loop_index, matmul_init, ranked


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
    """Pad the H, W dims of an NCHW tensor with a scalar."""
    if not any(padding):
        return x
    src = ranked(x)
    shape = list(src.shape)
    shape[2] += 2 * padding[0]
    shape[3] += 2 * padding[1]
    out = ir.RankedTensorType.get(shape, src.element_type)
    low = [0, 0, padding[0], padding[1]]
    pad = tensor.PadOp(out, x, [], [], low, low)
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * 4))
    with ir.InsertionPoint(block):
        tensor.YieldOp(value)
    return pad.result


def _window_attrs(stride, dilation) -> dict:
    return dict(strides=list(stride), dilations=list(dilation))


@register_lowering(dy.Conv2dOp)
def _lower_conv2d(op):
    out = ranked(op.out)
    stride, padding, dilation = (dy.int_list(a) for a in (op.stride, op.padding, op.dilation))
    groups = ir.IntegerAttr(op.groups).value
    x = _pad_spatial(op.x, padding, const(out.element_type, 0))
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


@register_lowering(dy.Pool2dOp)
def _lower_pool2d(op):
    out = ranked(op.out)
    elem = out.element_type
    kind = ir.StringAttr(op.kind).value
    kernel, stride, padding, dilation = (dy.int_list(a) for a in (op.kernel, op.stride, op.padding, op.dilation))
    init_value = lowest(elem) if kind == "max" else const(elem, 0)
    x = _pad_spatial(op.x, padding, init_value)
    window = tensor.empty(kernel, elem)
    attrs = _window_attrs(stride, dilation)
    acc = filled(out, init_value)
    named = linalg.pooling_nchw_max if kind == "max" else linalg.pooling_nchw_sum
    pooled = named(x, window, outs=[acc], **attrs)
    if kind == "max":
        return pooled
    area = const(elem, kernel[0] * kernel[1])
    return generic([pooled], [empty(out)], [identity(4)] * 2, [PARALLEL] * 4,
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
