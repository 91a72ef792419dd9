"""Max pooling with indices for any kernel/stride/padding/dilation/ceil_mode (the OpInfo samples),
where training.py's rule handles only disjoint windows.

Every window's elements are gathered with a constant index (the window's positions in the
-inf-padded plane): [planes, oh, ow, K]. The max over K gives the values, the argmax over K the
window slot, and a constant table maps (window, slot) to torch's index in the unpadded plane.
"""

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .coverage_nn import _const
from .elementwise import compute_dtype
from .nn import _pair
from .reduction import reduce
from .training import _attr_i64, _max_pool_with_indices, _pad, _permute

aten = torch.ops.aten

MAX_WINDOW_ELEMENTS = 1 << 22


def _windows(size, out, kernel, stride, padding, dilation):
    """Per output position and window slot: the position in the padded dim, and whether it
    lies inside the input. Also the high padding the last window needs."""
    pos = (np.arange(out) * stride)[:, None] + (np.arange(kernel) * dilation)[None, :]
    high = max(0, int(pos.max()) + 1 - size - padding)
    inside = (pos >= padding) & (pos < padding + size)
    return pos, inside, high


def _tables(h, w, oh, ow, params):
    """(gather index into the padded plane, torch index per slot, padded sizes)."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = params
    rows, rin, rhigh = _windows(h, oh, kh, sh, ph, dh)
    cols, cin, chigh = _windows(w, ow, kw, sw, pw, dw)
    wp = w + pw + pw + chigh
    gather = (rows[:, None, :, None] * wp + cols[None, :, None, :]).reshape(oh, ow, kh * kw)
    torch_index = ((rows - ph)[:, None, :, None] * w + (cols - pw)[None, :, None, :]).reshape(oh, ow, kh * kw)
    inside = (rin[:, None, :, None] & cin[None, :, None, :]).reshape(oh, ow, kh * kw)
    # A window of -inf only keeps slot 0 (argmax sees nothing larger): there eager reports the
    # window's first position inside the input, so slot 0 maps to that.
    first_inside = np.take_along_axis(torch_index, inside.argmax(axis=2)[..., None], axis=2)[..., 0]
    torch_index[..., 0] = np.where(inside[..., 0], torch_index[..., 0], first_inside)
    return gather, torch_index, (h + 2 * ph + rhigh, wp), (rhigh, chigh)


def _general_max_pool(ctx, node):
    args = list(node.args) + [None] * 6
    kernel = _pair(args[1])
    params = (kernel, _pair(args[2]) if args[2] else kernel, _pair(args[3] or 0), _pair(args[4] or 1))
    val = ctx.out_meta(node, 0)
    x = ctx.tensor(node.args[0])
    shape, out_shape = ctx.shape_of(x), list(static_shape(val))
    if len(shape) not in (3, 4) or 0 in shape or 0 in out_shape:
        raise Unsupported("max pooling of an empty or non-(N)CHW tensor")
    (h, w), (oh, ow) = shape[-2:], out_shape[-2:]
    planes = int(np.prod(shape[:-2]))
    k = params[0][0] * params[0][1]
    if planes * oh * ow * k > MAX_WINDOW_ELEMENTS:
        raise Unsupported("max pooling windows too large to gather")
    gather, torch_index, padded, (rhigh, chigh) = _tables(h, w, oh, ow, params)
    compute = compute_dtype(val.dtype)
    xp = ctx.reshape(ctx.cast(x, compute), [planes, h, w])
    (ph, pw) = params[2]
    xp = _pad(ctx, xp, [0, ph, pw], [0, ph + rhigh, pw + chigh], float("-inf"))
    rows = _permute(ctx, ctx.reshape(xp, [planes, padded[0] * padded[1]]), [1, 0])
    g = dy.GatherOp(rows, _const(ctx, gather, torch.int64), out=ctx.type_like(rows, shape=[oh, ow, k, planes])).out
    g = _permute(ctx, g, [3, 0, 1, 2])  # planes, oh, ow, K
    values = reduce(ctx, g, "max", [3], False)
    slot = dy.ArgReduceOp(g, ir.StringAttr.get("max"), _attr_i64(3), out=ctx.type_like(g, torch.int64, [planes, oh, ow])).out
    table = ctx.broadcast(_const(ctx, torch_index, torch.int64), [planes, oh, ow, k])
    index = dy.GatherAlongOp(table, ctx.reshape(slot, [planes, oh, ow, 1]), _attr_i64(3),
                             out=ctx.type_like(slot, shape=[planes, oh, ow, 1])).out
    return (ctx.cast(ctx.reshape(values, out_shape), val.dtype), ctx.reshape(index, out_shape))


@import_rule(aten.max_pool2d_with_indices)
def _max_pool2d_with_indices(ctx, node):
    # Disjoint, unpadded windows: training.py's rule (its backward rule matches it). With padding,
    # its argmax may pick a padded slot of an all -inf window, where eager names an input position.
    padding = node.args[3] if len(node.args) > 3 else 0
    if not any(_pair(padding or 0)):
        try:
            return _max_pool_with_indices(ctx, node)
        except Unsupported:
            pass
    return _general_max_pool(ctx, node)
