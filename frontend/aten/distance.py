"""Pairwise distances (cdist, pdist) as a broadcast difference and a vector norm over the last dim:
the direct form eager uses unless it takes its matmul shortcut for the Euclidean case."""

import numpy as np
import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import const, emit_like
from .reduction import vector_norm

aten = torch.ops.aten

# ATen's compute_mode for cdist: None/0 = matmul when either side has more than 25 rows,
# 1 = always matmul, 2 = never. The matmul form (|a|^2 + |b|^2 - 2ab, clamped, sqrt) rounds
# differently from a direct difference, near zero by far more than an ulp; it stays eager.
_MM_ROWS = 25


def _uses_matmul(p: float, mode, rows1: int, rows2: int) -> bool:
    if p != 2.0 or mode == 2:
        return False
    return mode == 1 or rows1 > _MM_ROWS or rows2 > _MM_ROWS


def _distances(ctx, x1, x2, p: float, batch):
    """|x1[..., i, :] - x2[..., j, :]|_p for every i, j, batch dims broadcast to `batch`."""
    (r1, m), (r2, _) = ctx.shape_of(x1)[-2:], ctx.shape_of(x2)[-2:]
    wide = list(batch) + [r1, r2, m]
    a = ctx.broadcast(ctx.reshape(x1, ctx.shape_of(x1)[:-2] + [r1, 1, m]), wide)
    b = ctx.broadcast(ctx.reshape(x2, ctx.shape_of(x2)[:-2] + [1, r2, m]), wide)
    diff = emit_like(ctx, "abs", emit_like(ctx, "sub", a, b))
    return vector_norm(ctx, diff, p, [len(wide) - 1], False)


@import_rule(aten._cdist_forward)
def _cdist(ctx, node):
    a = bind(node)
    val = ctx.out_meta(node)
    out_shape = list(static_shape(val))
    if _uses_matmul(float(a.p), a.compute_mode, out_shape[-2], out_shape[-1]):
        raise Unsupported("cdist p=2 in eager's matmul form")
    if 0 in out_shape or ctx.shape_of(ctx.tensor(a.x1))[-1] == 0:
        return ctx.full(0, out_shape, val.dtype)
    return _distances(ctx, ctx.tensor(a.x1), ctx.tensor(a.x2), float(a.p), out_shape[:-2])


@import_rule(aten._pdist_forward)
def _pdist(ctx, node):
    """The upper triangle (i < j, row-major) of cdist(x, x), gathered from the flat n x n matrix."""
    a = bind(node)
    x, p = ctx.tensor(a.self), float(a.p)
    val = ctx.out_meta(node)
    n, m = ctx.shape_of(x)
    pairs = [i * n + j for i in range(n) for j in range(i + 1, n)]
    if not pairs or m == 0:
        return ctx.full(0, list(static_shape(val)), val.dtype)
    flat = ctx.reshape(_distances(ctx, x, x, p, []), [n * n])
    idx = const(ctx, np.array(pairs, dtype=np.int64))
    return dy.GatherOp(flat, idx, out=ctx.type_like(flat, shape=[len(pairs)])).out
