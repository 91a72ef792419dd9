"""Convolutions -> linalg named ops (2-d, grouped or not) or one generic (3-d, which linalg names
only channels-last or ungrouped); a channels-last (NHWC) one is the NCHW one between transposes.

The gradients (dynamo.conv_grad_input / conv_grad_weight, 2-d, groups = 1) expand into a
dynamo.conv2d between layout ops, which the next lowering round gives to the target's own
convolution rule (a target that runs the backward whole, cuda's cuDNN call, registers its own):
- input gradient: the output gradient, stride-dilated (its values every `stride` positions of a
  zero tensor) and padded by the window's reach, convolved with the weight flipped in space and
  with in/out channels swapped;
- weight gradient: the input by the output gradient with batch and channels swapped (the forward
  stride becomes the dilation, the forward dilation the stride), cut to the kernel's size.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, is_float
from .common import (PARALLEL, REDUCTION, accumulator_element, affine_map, empty, filled, generic, pad_spatial,
                     ranked, stored_as, transposed, window_attrs, window_expr)


def _zero_filled(t, like=None, dim_map=None):
    return filled(t, const(t.element_type, 0), like, dim_map)


def lower_conv(op, acc_elem: ir.Type) -> ir.Value:
    """The convolution summing into an accumulator of acc_elem, rounded to the result type after
    where they differ."""
    out = ranked(op.out)
    if dy.layout_of(op) == "nhwc":
        # A correct fallback, not a fast one: the cpu target hands channels-last convolutions to
        # torch's kernel (codegen/cpu/library_conv.py) and sets the layout only then.
        x = transposed(op.x, dy.TO_NCHW)
        nchw = ir.RankedTensorType.get(dy.as_nchw(out.shape, "nhwc"), acc_elem)
        return stored_as(transposed(_conv_nchw(op, x, nchw), dy.TO_NHWC), out)
    return stored_as(_conv_nchw(op, op.x, ir.RankedTensorType.get(out.shape, acc_elem)), out)


@register_lowering(dy.Conv2dOp)
def _lower_conv(ctx, op):
    return lower_conv(op, accumulator_element(ranked(op.out)))  # float32 for half operands (dialects/conv.py)


def _fchw_weight(op) -> ir.Value:
    """The convolution's weight, FCHW (an FHWC one transposed: a fallback, as lower_conv's)."""
    return transposed(op.weight, dy.TO_NCHW) if dy.weight_layout_of(op) == "fhwc" else op.weight


def _conv_nchw(op, x, out):
    """`out`: the accumulator's type (float32 for half operands)."""
    stride, padding, dilation = (dy.int_list(a) for a in (op.stride, op.padding, op.dilation))
    groups = ir.IntegerAttr(op.groups).value
    x, weight = pad_spatial(x, padding, const(ranked(x).element_type, 0)), _fchw_weight(op)
    if out.rank == 5:
        return _conv_generic(x, weight, out, groups, stride, dilation)
    attrs = window_attrs(stride, dilation)
    if groups == 1:
        return linalg.conv_2d_nchw_fchw(x, weight, outs=[_zero_filled(out)], **attrs)
    return _grouped_conv(x, weight, out, groups, attrs)


def _grouped_conv(x, weight, out, groups, attrs):
    """NCHW -> N,G,C/G,H,W and FCHW -> G,F/G,C,H,W, then conv_2d_ngchw_gfchw, then back."""
    xs, ws = list(ranked(x).shape), list(ranked(weight).shape)
    elem, operand_elem = out.element_type, ranked(x).element_type
    x5 = tensor.expand_shape(ir.RankedTensorType.get([xs[0], groups, xs[1] // groups, xs[2], xs[3]], operand_elem),
                             x, [[0], [1, 2], [3], [4]], output_shape=[], static_output_shape=[xs[0], groups, xs[1] // groups, xs[2], xs[3]])
    w5 = tensor.expand_shape(ir.RankedTensorType.get([groups, ws[0] // groups] + ws[1:], operand_elem),
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
    x_map = affine_map(n_loops, [0, g * ir.AffineConstantExpr.get(cg) + c]
                 + [window_expr(o, k, s, d) for o, k, s, d in zip(o_dims, k_dims, stride, dilation)])
    w_map = affine_map(n_loops, [g * ir.AffineConstantExpr.get(fg) + f, c_dim, *k_dims])
    y_map = affine_map(n_loops, [0, 1, 2, *o_dims])
    iters = [PARALLEL] * (3 + spatial) + [REDUCTION] * (1 + spatial)
    mul, add = (arith.mulf, arith.addf) if is_float(elem) else (arith.muli, arith.addi)
    wide = lambda v: arith.extf(elem, v) if v.type != elem else v  # noqa: E731  (half operands)
    y = generic([x, weight], [_zero_filled(grouped)], [x_map, w_map, y_map], iters,
                lambda a, b, acc: [add(acc, mul(wide(a), wide(b)))])[0]
    return tensor.collapse_shape(out, y, [[0], [1, 2], *[[3 + i] for i in range(spatial)]])


# ----------------------------------------------------------------------------- gradients


def _conv2d(x, w, out_shape, stride, padding, dilation) -> ir.Value:
    i64s = ir.DenseI64ArrayAttr.get
    out = ir.RankedTensorType.get(out_shape, ranked(x).element_type)
    return dy.Conv2dOp(x, w, stride=i64s(stride), padding=i64s(padding), dilation=i64s(dilation),
                       groups=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1), out=out).out


def _window(op) -> tuple[list[int], list[int], list[int]]:
    if ranked(op.out).rank != 4 or ir.IntegerAttr(op.groups).value != 1:
        raise NotImplementedError(f"the generic {op.OPERATION_NAME} takes 2-d convolutions of groups = 1")
    return tuple(dy.int_list(a) for a in (op.stride, op.padding, op.dilation))


def _flipped_transpose(w) -> ir.Value:
    """FCHW -> CFHW, reversed along H and W: one generic reading w[f, c, kh - 1 - i, kw - 1 - j]."""
    f, c, kh, kw = ranked(w).shape
    t = ir.RankedTensorType.get([c, f, kh, kw], ranked(w).element_type)
    last = lambda d, k: ir.AffineConstantExpr.get(k - 1) - ir.AffineDimExpr.get(d)  # noqa: E731
    read = affine_map(4, [1, 0, last(2, kh), last(3, kw)])
    return generic([w], [empty(t)], [read, affine_map(4, [0, 1, 2, 3])], [PARALLEL] * 4, lambda a, _: [a])[0]


def _spread(g, stride, low, high) -> ir.Value:
    """g's values every `stride` positions of a zero tensor, with low/high zeros around them (a
    negative count cuts that many positions off instead: padding beyond the window's reach)."""
    n, f, *size = ranked(g).shape
    spread = [(s - 1) * st + 1 for s, st in zip(size, stride)]
    shape = [n, f] + [s + max(lo, 0) + max(hi, 0) for s, lo, hi in zip(spread, low, high)]
    elem = ranked(g).element_type
    zeros = _zero_filled(ir.RankedTensorType.get(shape, elem))
    y = tensor.insert_slice(g, zeros, [], [], [], [0, 0, *(max(lo, 0) for lo in low)], [n, f, *size], [1, 1, *stride])
    if min(low + high) >= 0:
        return y
    cut = [n, f] + [s + lo + hi for s, lo, hi in zip(spread, low, high)]
    start = [0, 0, *(max(-lo, 0) for lo in low)]
    return tensor.extract_slice(ir.RankedTensorType.get(cut, elem), y, [], [], [], start, cut, [1] * 4)


@register_lowering(dy.ConvGradInputOp)
def lower_conv_grad_input(ctx, op):
    nhwc = dy.layout_of(op) == "nhwc"  # a correct fallback, as lower_conv's: transposes around the NCHW rule
    grad = transposed(op.grad, dy.TO_NCHW) if nhwc else op.grad
    stride, padding, dilation = _window(op)
    weight = _fchw_weight(op)
    x_shape, k = dy.as_nchw(ranked(op.out).shape, dy.layout_of(op)), list(ranked(weight).shape)[2:]
    reach = [d * (kk - 1) - p for d, kk, p in zip(dilation, k, padding)]  # < 0: padding beyond it
    # Where the forward's last window stopped short of the input's end, the input positions after
    # it get zero gradient: more zeros on the high side give the input's size.
    got = [(s - 1) * st + 1 + 2 * r - d * (kk - 1)
           for s, st, r, d, kk in zip(ranked(grad).shape[2:], stride, reach, dilation, k)]
    g = _spread(grad, stride, reach, [r + x - n for r, x, n in zip(reach, x_shape[2:], got)])
    dx = _conv2d(g, _flipped_transpose(weight), x_shape, [1, 1], [0, 0], dilation)
    return transposed(dx, dy.TO_NHWC) if nhwc else dx


@register_lowering(dy.ConvGradWeightOp)
def lower_conv_grad_weight(ctx, op):
    stride, padding, dilation = _window(op)
    f, c, *k = ranked(op.out).shape
    to_cnhw = [3, 0, 1, 2] if dy.layout_of(op) == "nhwc" else [1, 0, 2, 3]
    x, g = transposed(op.x, to_cnhw), transposed(op.grad, to_cnhw)  # CNHW, FNHW
    # The swapped convolution's size: g's spatial dims the "kernel", dilated by the forward stride,
    # stepping by the forward dilation; at least the kernel's size (the forward may have left
    # input positions unread at the high end), so cut to it.
    span = [(s + 2 * p - st * (o - 1) - 1) // d + 1
            for s, p, st, o, d in zip(ranked(x).shape[2:], padding, stride, ranked(g).shape[2:], dilation)]
    r = _conv2d(x, g, [c, f, *span], dilation, padding, stride)
    elem = ranked(op.out).element_type
    cut = tensor.extract_slice(ir.RankedTensorType.get([c, f, *k], elem), r, [], [], [], [0] * 4, [c, f, *k], [1] * 4)
    return transposed(cut, [1, 0, 2, 3])
