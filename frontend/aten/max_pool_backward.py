"""max_pool{2,3}d_with_indices_backward: grad_output scattered into the indices it is given.

Eager adds grad_output[o] to grad_input[indices[o]] in each plane (skipping -1), whatever the
indices are: a caller may pass any (torch-mlir's MaxPool2dWithIndicesBackward tests pass random
ones). That scatter-add (`_scatter_backward`, dynamo.scatter) is the rule for any indices.

The window forms are faster but read only the windows an input position lies in, so they are
right only for indices that name a position inside their own window, as the forward's do.
They are used where that is provable: the indices are output 1 of a max_poolNd_with_indices of
the same input with the same windows, in the graph itself or, for a training step, in
AOTAutograd's joint graph before it is split (`mark_window_indices` marks such a backward node;
the mark stays on its copy in the backward graph, whose indices and input are that forward's,
saved). The window forms:
- disjoint, unpadded 2-d windows: each window's gradient to the slot its index names, the
  windows scattered back by reshapes (`Windows`);
- otherwise each input position sums grad_output over the (at most K) windows that can contain
  it and whose index names it; the candidate windows are a constant table, so the scatter-add
  becomes a gather and a sum, in eager's order (ascending output position). Where that gathered
  [in, K, planes] tensor would be too large (a ResNet-50's first pooling), the scatter-add
  itself, which is right for these indices too.
"""

import operator

import numpy as np
import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..registry import Unsupported, import_rule
from .args import bind, per_dim
from .builders import (compare, compute_dtype, const, emit_like, i64, iota, ordered_sum, outer, permute,
                       row_major_strides, select)
from .pool import MAX_WINDOW_ELEMENTS, Geometry, Windows, _max_geometry

aten = torch.ops.aten

FORWARD = {  # backward overload -> the forward overloads whose indices it reads
    aten.max_pool2d_with_indices_backward.default: (aten.max_pool2d_with_indices.default,),
    aten.max_pool3d_with_indices_backward.default: (aten.max_pool3d_with_indices.default,),
}
WINDOW_INDICES = "dynamo_mlir.window_indices"  # node.meta flag: the indices are the forward's


# ----------------------------------------------------------------------------- where the indices come from


def _windows(a, spatial: int) -> tuple:
    """A pooling op's window parameters, normalized (stride [] means the kernel)."""
    kernel = per_dim(a.kernel_size, spatial)
    return (kernel, per_dim(a.stride, spatial) if a.stride else kernel, per_dim(a.padding or 0, spatial),
            per_dim(a.dilation or 1, spatial), bool(a.ceil_mode))


def indices_from_forward(node) -> bool:
    """Whether backward `node`'s indices are output 1 of a forward max pool of the same input
    with the same windows, in `node`'s graph."""
    a = bind(node)
    source = a.indices
    if not (isinstance(source, torch.fx.Node) and source.target is operator.getitem and source.args[1] == 1):
        return False
    forward = source.args[0]
    if not isinstance(forward, torch.fx.Node) or forward.target not in FORWARD.get(node.target, ()):
        return False
    f = bind(forward)
    spatial = 2 if node.target is aten.max_pool2d_with_indices_backward.default else 3
    return f.self is a.self and _windows(f, spatial) == _windows(a, spatial)


def mark_window_indices(graph: torch.fx.Graph) -> None:
    """On AOTAutograd's joint graph (forward and backward in one): mark each max-pool backward
    whose indices provably come from its forward, before the partitioner separates them."""
    for node in graph.nodes:
        if node.target in FORWARD and indices_from_forward(node):
            node.meta[WINDOW_INDICES] = True


def _window_indices(node) -> bool:
    return bool(node.meta.get(WINDOW_INDICES)) or indices_from_forward(node)


# ----------------------------------------------------------------------------- any indices: scatter-add


def _scatter_backward(ctx, node, spatial: int):
    """grad_input[plane, indices[plane, o]] += grad_output[plane, o] in output order, from zeros,
    in grad's dtype (eager's kernel adds in it: a half type rounds each step); a -1 index (no
    maximum) adds nothing. An index outside the plane wraps (dynamo.scatter stores in bounds)."""
    a = bind(node)
    grad, indices = ctx.tensor(a.grad_output), ctx.tensor(a.indices)
    dtype = ctx.out_meta(node).dtype
    shape, gshape = ctx.shape_of(ctx.tensor(a.self)), ctx.shape_of(grad)
    planes = int(np.prod(shape[:-spatial]))
    per_plane = [planes, int(np.prod(gshape[-spatial:]))]  # [plane, output position]
    g = ctx.reshape(ctx.cast(grad, dtype), per_plane)
    index = ctx.reshape(indices, per_plane)
    none = compare(ctx, index, ctx.broadcast(ctx.scalar(-1, torch.int64), per_plane), "eq")
    g = select(ctx, none, ctx.broadcast(ctx.scalar(0, dtype), per_plane), g)  # -1 wraps to the end: add 0 there
    dest = ctx.full(0, [planes, int(np.prod(shape[-spatial:]))], dtype)
    out = dy.ScatterOp(dest, index, g, i64(1), ir.StringAttr.get("sum"), i64(1), out=ctx.type_like(dest)).out
    return ctx.reshape(out, shape)


# ----------------------------------------------------------------------------- indices from the forward's windows


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
    flat = outer([t * st for t, st in zip(outs, row_major_strides(geom.outs))], np.add).reshape(geom.ins + [k])
    ok = outer(valid, np.logical_and).reshape(geom.ins + [k])
    return np.where(ok, flat, 0), ok


def _window_backward(ctx, node, spatial: int):
    a = bind(node)
    grad, x, indices = ctx.tensor(a.grad_output), ctx.tensor(a.self), ctx.tensor(a.indices)
    val = ctx.out_meta(node)
    shape, gshape = ctx.shape_of(x), ctx.shape_of(grad)
    geom = _max_geometry(ctx, a, x, gshape, spatial)
    planes, k = int(np.prod(shape[:-spatial])), int(np.prod(geom.kernel))
    n_in, n_out = int(np.prod(geom.ins)), int(np.prod(geom.outs))
    if n_in * k * planes > MAX_WINDOW_ELEMENTS:  # the gathered [in, K, planes] would be too large
        return _scatter_backward(ctx, node, spatial)
    table, ok = _candidates(geom)
    table = const(ctx, table.reshape(n_in, k), torch.int64)
    wide = [n_in, k, planes]

    def gathered(v):  # [planes, out...] -> [in, K, planes]: each candidate window's value
        rows = permute(ctx, ctx.reshape(v, [planes, n_out]), [1, 0])
        return dy.GatherOp(rows, table, out=ctx.type_like(rows, shape=wide)).out

    compute = compute_dtype(val.dtype)
    g, idx = gathered(ctx.cast(grad, compute)), gathered(indices)
    here = ctx.broadcast(ctx.reshape(iota(ctx, [n_in], 0), [n_in, 1, 1]), wide)
    hit = compare(ctx, idx, here, "eq")
    valid = ctx.broadcast(ctx.cast(const(ctx, ok.reshape(n_in, k, 1).astype(np.int64), torch.int64), torch.bool), wide)
    hit = emit_like(ctx, "and", hit, valid)
    routed = select(ctx, hit, g, ctx.broadcast(ctx.scalar(0, compute), wide))
    total = permute(ctx, ordered_sum(ctx, routed, 1, val.dtype), [1, 0])  # eager's order and half roundings
    return ctx.cast(ctx.reshape(total, shape), val.dtype)


def _disjoint_backward(ctx, a):
    """Routes each window's gradient to the slot its index names (the forward's: a position in
    its own window) and scatters the windows back by reshapes: no gather, no scatter-add, as
    windows are disjoint."""
    grad, indices = ctx.tensor(a.grad_output), ctx.tensor(a.indices)
    windows = Windows(a, ctx.shape_of(ctx.tensor(a.self)))
    if any(windows.padding):
        # a padded slot's row * W + col may name a position of the next row
        raise Unsupported("max-pool backward with padding over disjoint windows")
    shape = windows.window_shape
    here = windows.flat_indices(ctx, iota(ctx, shape, 4))
    hit = compare(ctx, here, ctx.broadcast(ctx.reshape(indices, shape[:4] + [1]), shape), "eq")
    g = ctx.broadcast(ctx.reshape(grad, shape[:4] + [1]), shape)
    zero = ctx.broadcast(ctx.scalar(0, ctx.dtype_of(grad)), shape)
    return windows.scatter(ctx, select(ctx, hit, g, zero))


# ----------------------------------------------------------------------------- the rules


def _max_pool_backward(ctx, node, spatial: int):
    a = bind(node)
    if 0 in ctx.shape_of(ctx.tensor(a.self)) or 0 in ctx.shape_of(ctx.tensor(a.grad_output)):
        raise Unsupported("max-pool backward of an empty tensor")
    if not _window_indices(node):
        return _scatter_backward(ctx, node, spatial)
    if spatial == 2:
        try:  # disjoint, unpadded windows: no gathers
            return _disjoint_backward(ctx, a)
        except Unsupported:
            pass
    return _window_backward(ctx, node, spatial)


@import_rule(aten.max_pool2d_with_indices_backward)
def _max_pool2d_backward(ctx, node):
    return _max_pool_backward(ctx, node, 2)


@import_rule(aten.max_pool3d_with_indices_backward)
def _max_pool3d_backward(ctx, node):
    return _max_pool_backward(ctx, node, 3)
