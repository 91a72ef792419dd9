"""Ops that training graphs add: max-pool indices and its backward, convolution backward.

They are expressed with the dialect's existing ops (reshape, permute, arg_reduce, select,
conv2d, pad, slice) rather than new kernels:
- max pooling with stride == kernel sees disjoint windows, so the windows are a reshape of the
  input; the argmax inside each window gives both torch's indices and the backward's routing;
- the input gradient of a convolution is a convolution of the (stride-dilated) output gradient
  with the flipped, transposed weight; the weight gradient is a convolution of the input by the
  output gradient with batch and channels swapped (the forward stride becomes a dilation).
"""

import operator

import torch
import torch._inductor.inductor_prims  # noqa: F401  (defines torch.ops.prims.fma, registered below)
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .elementwise import compute_dtype
from .nn import _i64s, _pair, _pool

aten = torch.ops.aten
I64 = torch.int64


def _attr_i64(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _permute(ctx, x, perm):
    shape = ctx.shape_of(x)
    return dy.PermuteOp(x, perm=_i64s(perm), out=ctx.type_like(x, shape=[shape[p] for p in perm])).out


def _slice(ctx, x, starts, sizes, steps=None):
    steps = steps or [1] * len(starts)
    return dy.SliceOp(x, _i64s(starts), _i64s(steps), out=ctx.type_like(x, shape=sizes)).out


def _pad(ctx, x, low, high, value=0.0):
    if not any(low) and not any(high):
        return x
    shape = [s + lo + hi for s, lo, hi in zip(ctx.shape_of(x), low, high)]
    fill = ctx.scalar(value, ctx.dtype_of(x))
    return dy.PadOp(x, fill, _i64s(low), _i64s(high), out=ctx.type_like(x, shape=shape)).out


def _iota(ctx, shape, dim, start=0, step=1, dtype=I64):
    return dy.IotaOp(ctx.scalar(start, dtype), ctx.scalar(step, dtype), _attr_i64(dim),
                     out=ctx.type_like(ctx.scalar(0, dtype), dtype, shape)).out


# ----------------------------------------------------------------------------- max pooling


class Windows:
    """Disjoint pooling windows of an NCHW tensor (stride == kernel, dilation 1)."""

    def __init__(self, node, x_shape):
        kernel, stride, padding, dilation, ceil_mode = self._params(node)
        self.kernel, self.padding = kernel, padding
        if stride != kernel or dilation != [1, 1] or ceil_mode or len(x_shape) != 4:
            raise Unsupported("max-pool indices/backward need stride == kernel, dilation 1, NCHW, no ceil_mode")
        n, c, h, w = x_shape
        self.n, self.c, self.h, self.w = n, c, h, w
        self.oh = (h + 2 * padding[0] - kernel[0]) // kernel[0] + 1
        self.ow = (w + 2 * padding[1] - kernel[1]) // kernel[1] + 1

    @staticmethod
    def _params(node):
        # max_pool2d_with_indices(x, k, s, p, d, ceil) and its backward(g, x, k, s, p, d, ceil, idx)
        first = 1 if node.target.overloadpacket is aten.max_pool2d_with_indices else 2
        args = list(node.args) + [None] * 8
        kernel = _pair(args[first])
        stride = _pair(args[first + 1]) if args[first + 1] else kernel
        padding = _pair(args[first + 2] or 0)
        dilation = _pair(args[first + 3] or 1)
        return kernel, stride, padding, dilation, bool(args[first + 4])

    @property
    def window_shape(self):
        return [self.n, self.c, self.oh, self.ow, self.kernel[0] * self.kernel[1]]

    def gather(self, ctx, x):
        """x (N,C,H,W) -> (N,C,OH,OW,kh*kw): padding with -inf, trailing rows cut."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        x = _pad(ctx, x, [0, 0, ph, pw], [0, 0, ph, pw], float("-inf") if ctx.dtype_of(x).is_floating_point else 0)
        x = _slice(ctx, x, [0, 0, 0, 0], [self.n, self.c, self.oh * kh, self.ow * kw])
        x = ctx.reshape(x, [self.n, self.c, self.oh, kh, self.ow, kw])
        x = _permute(ctx, x, [0, 1, 2, 4, 3, 5])
        return ctx.reshape(x, self.window_shape)

    def scatter(self, ctx, windows):
        """The inverse of gather for gradients: (N,C,OH,OW,kh*kw) -> (N,C,H,W), zeros elsewhere."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        x = ctx.reshape(windows, [self.n, self.c, self.oh, self.ow, kh, kw])
        x = ctx.reshape(_permute(ctx, x, [0, 1, 2, 4, 3, 5]), [self.n, self.c, self.oh * kh, self.ow * kw])
        x = _pad(ctx, x, [0] * 4, [0, 0, self.h + 2 * ph - self.oh * kh, self.w + 2 * pw - self.ow * kw])
        return _slice(ctx, x, [0, 0, ph, pw], [self.n, self.c, self.h, self.w])

    def argmax(self, ctx, x):
        """Position (0..kh*kw-1) of the first maximum of each window, as torch picks it."""
        windows = self.gather(ctx, x)
        return dy.ArgReduceOp(windows, ir.StringAttr.get("max"), _attr_i64(4),
                              out=ctx.type_like(windows, I64, self.window_shape[:4])).out

    def flat_indices(self, ctx, arg):
        """torch's indices: row * W + col in the unpadded input."""
        (kh, kw), (ph, pw) = self.kernel, self.padding
        shape = self.window_shape[:4]
        t = ctx.type_like(arg)

        def scalar(v):
            return ctx.broadcast(ctx.scalar(v, I64), shape)

        i = ctx.emit("floordiv", arg, scalar(kw), out=t)
        j = ctx.emit("rem", arg, scalar(kw), out=t)
        row = ctx.emit("add", _iota(ctx, shape, 2, -ph, kh), i, out=t)
        col = ctx.emit("add", _iota(ctx, shape, 3, -pw, kw), j, out=t)
        return ctx.emit("add", ctx.emit("mul", row, scalar(self.w), out=t), col, out=t)


def _indices_read(node) -> bool:
    return any(u.target is operator.getitem and u.args[1] == 1 for u in node.users)


@import_rule(aten.max_pool2d_with_indices)
def _max_pool_with_indices(ctx, node):
    args = list(node.args) + [None] * 6
    kernel, stride = args[1], args[2]
    padding, dilation, ceil_mode = args[3] or 0, args[4] or 1, bool(args[5])
    values = _pool(ctx, node, "max", kernel, stride, padding, dilation, ceil_mode)
    if not _indices_read(node):
        return values, None
    x = ctx.tensor(node.args[0])
    windows = Windows(node, ctx.shape_of(x))
    return values, windows.flat_indices(ctx, windows.argmax(ctx, x))


@import_rule(aten.max_pool2d_with_indices_backward)
def _max_pool_backward(ctx, node):
    """Recomputes each window's argmax from the input (the saved indices say the same) and
    routes the gradient there: no scatter needed because windows are disjoint."""
    grad, x = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
    windows = Windows(node, ctx.shape_of(x))
    if any(windows.padding):
        # an all -inf window's argmax can land on a padding slot, whose gradient has nowhere to go
        raise Unsupported("max-pool backward with padding (eager routes -inf windows' gradients)")
    shape = windows.window_shape
    best = ctx.broadcast(ctx.reshape(windows.argmax(ctx, x), shape[:4] + [1]), shape)
    hit = dy.CompareOp(_iota(ctx, shape, 4), best, ir.StringAttr.get("eq"), out=ctx.type_like(best, torch.bool)).out
    g = ctx.broadcast(ctx.reshape(grad, shape[:4] + [1]), shape)
    zero = ctx.broadcast(ctx.scalar(0, ctx.dtype_of(grad)), shape)
    routed = dy.SelectOp(hit, g, zero, out=ctx.type_like(g)).out
    return windows.scatter(ctx, routed)


# ----------------------------------------------------------------------------- convolution


def _conv(ctx, x, w, stride, padding, dilation):
    xs, ws = ctx.shape_of(x), ctx.shape_of(w)
    spatial = [(xs[2 + i] + 2 * padding[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1 for i in (0, 1)]
    return dy.Conv2dOp(x, w, stride=_i64s(stride), padding=_i64s(padding), dilation=_i64s(dilation),
                       groups=_attr_i64(1), out=ctx.type_like(x, shape=[xs[0], ws[0], *spatial])).out


def _flip_spatial(ctx, w):
    shape = ctx.shape_of(w)
    for dim in (2, 3):
        reverse = _iota(ctx, shape, dim, shape[dim] - 1, -1)
        w = dy.GatherAlongOp(w, reverse, _attr_i64(dim), out=ctx.type_like(w)).out
    return w


def _dilate(ctx, g, stride):
    """Insert stride-1 zeros between output-gradient elements (a transposed conv's input)."""
    if stride == [1, 1]:
        return g
    n, f, oh, ow = ctx.shape_of(g)
    sh, sw = stride
    g = ctx.reshape(g, [n, f, oh, 1, ow, 1])
    g = _pad(ctx, g, [0] * 6, [0, 0, 0, sh - 1, 0, sw - 1])
    g = ctx.reshape(g, [n, f, oh * sh, ow * sw])
    return _slice(ctx, g, [0, 0, 0, 0], [n, f, (oh - 1) * sh + 1, (ow - 1) * sw + 1])


def _grad_input(ctx, g, w, x_shape, stride, padding, dilation):
    k = ctx.shape_of(w)[2:]
    pad = [dilation[i] * (k[i] - 1) - padding[i] for i in (0, 1)]
    if min(pad) < 0:
        raise Unsupported("convolution backward with padding larger than the kernel reach")
    w_t = _flip_spatial(ctx, _permute(ctx, w, [1, 0, 2, 3]))
    g = _dilate(ctx, g, stride)
    # Conv2dOp pads symmetrically; where the forward's last window stopped short of the input's
    # end (or used less than its high padding), the transposed conv needs more padding on the
    # high side to give the input's size: those input positions get zero gradient or partial sums.
    got = [ctx.shape_of(g)[2 + i] + 2 * pad[i] - dilation[i] * (k[i] - 1) for i in (0, 1)]
    g = _pad(ctx, g, [0] * 4, [0, 0, x_shape[2] - got[0], x_shape[3] - got[1]])
    return _conv(ctx, g, w_t, [1, 1], pad, dilation)


def _grad_weight(ctx, g, x, w_shape, stride, padding, dilation):
    # Batch and channels swap roles; the forward stride becomes the dilation over g.
    xt, gt = _permute(ctx, x, [1, 0, 2, 3]), _permute(ctx, g, [1, 0, 2, 3])
    r = _conv(ctx, xt, gt, dilation, padding, stride)  # (C, F, >=kh, >=kw)
    c, f = ctx.shape_of(r)[:2]
    r = _slice(ctx, r, [0, 0, 0, 0], [c, f, w_shape[2], w_shape[3]])
    return _permute(ctx, r, [1, 0, 2, 3])


@import_rule(aten.convolution_backward)
def _convolution_backward(ctx, node):
    grad, x, w, bias_sizes, stride, padding, dilation, transposed, _out_pad, groups, mask = node.args[:11]
    if transposed or groups != 1 or len(ctx.shape_of(ctx.tensor(x))) != 4:
        raise Unsupported("convolution backward: only 2-d, groups=1, not transposed")
    val = [v for v in ctx.out_meta(node) if v is not None][0]
    compute = compute_dtype(val.dtype)
    g, xv, wv = (ctx.cast(ctx.tensor(a), compute) for a in (grad, x, w))
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    out = [None, None, None]
    if mask[0]:
        out[0] = ctx.cast(_grad_input(ctx, g, wv, ctx.shape_of(xv), stride, padding, dilation), val.dtype)
    if mask[1]:
        out[1] = ctx.cast(_grad_weight(ctx, g, xv, ctx.shape_of(wv), stride, padding, dilation), val.dtype)
    if mask[2]:
        total = dy.ReduceOp(g, ir.StringAttr.get("sum"), _i64s([0, 2, 3]),
                            out=ctx.type_like(g, shape=[ctx.shape_of(g)[1]])).out
        out[2] = ctx.cast(total, val.dtype)
    return tuple(out)


# ----------------------------------------------------------------------------- optimizer steps


@import_rule(aten.copy.default)
def _copy(ctx, node):
    """Functional copy (what `param.copy_(new)` becomes): src cast and broadcast to self's."""
    val = ctx.out_meta(node)
    return ctx.operand(node.args[1], val.dtype, ctx.shape_of(ctx.tensor(node.args[0])))


@import_rule(torch.ops.prims.fma.default)
def _fma(ctx, node):
    """a * b + c (from lerp's decomposition); rounded twice, within the optimizers' tolerance."""
    val = ctx.out_meta(node)
    compute, shape = compute_dtype(val.dtype), list(static_shape(val))
    a, b, c = (ctx.operand(x, compute, shape) for x in node.args[:3])
    t = ctx.type_like(a)
    return ctx.cast(ctx.emit("add", ctx.emit("mul", a, b, out=t), c, out=t), val.dtype)
