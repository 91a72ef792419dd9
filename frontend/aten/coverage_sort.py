"""Sorting and order statistics (sort, topk, kthvalue, median, ...) on dynamo.sort, and the
searches and scans next to them (searchsorted, bucketize, histc, cummax/cummin, logcumsumexp),
built from existing ops.

Where eager's tie order is not a stable sort's, indices are only produced where they cannot
differ: eager's unstable sort is libstdc++ std::sort, which is a (stable) insertion sort for at
most 16 elements and reorders ties beyond that; topk and kthvalue use selection algorithms whose
tie order is their own. Those rules raise Unsupported when the indices are used and could differ.
Values never depend on the tie order.
"""

import operator

import torch
from torch_mlir import ir

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from .coverage_math import _iota, scan
from .elementwise import compute_dtype
from .reduction import reduce

aten = torch.ops.aten
I64 = ir.IntegerType.get_signless
STD_SORT_STABLE_UP_TO = 16  # std::sort is a plain insertion sort up to this many elements


def _attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def _arg(node, position: int, name: str, default):
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def _uses_output(node, index: int) -> bool:
    """Whether the graph reads output `index` of a multi-output node."""
    return any(u.target is operator.getitem and u.args[1] == index and u.users
               for u in node.users)


def sort(ctx, x, dim: int, descending: bool):
    """(values, i64 indices) of a stable sort of x along dim (NaN largest)."""
    if not ctx.shape_of(x):
        return x, ctx.full(0, [], torch.int64)
    op = dy.SortOp(x, _attr(dim), _attr(descending), values=ctx.type_like(x),
                   indices=ctx.type_like(x, torch.int64))
    return op.values, op.indices


def _static(ctx, x):
    if any(s == dy.DYN for s in ctx.shape_of(x)):
        raise Unsupported("sort with a dynamic dim")


def _dim(ctx, x, dim) -> int:
    rank = len(ctx.shape_of(x))
    return dim % rank if rank else 0


def _line(ctx, x, dim) -> int:
    shape = ctx.shape_of(x)
    return shape[dim] if shape else 1


# ----------------------------------------------------------------------------- sort, argsort, msort


@import_rule(aten.sort.default, aten.sort.stable)
def _sort(ctx, node):
    x = ctx.tensor(node.args[0])
    _static(ctx, x)
    if node.target is aten.sort.stable:
        stable = bool(node.kwargs.get("stable", False))
        dim, descending = node.kwargs.get("dim", -1), bool(node.kwargs.get("descending", False))
    else:
        stable, dim, descending = False, _arg(node, 1, "dim", -1), bool(_arg(node, 2, "descending", False))
    dim = _dim(ctx, x, dim)
    if not stable and _line(ctx, x, dim) > STD_SORT_STABLE_UP_TO and _uses_output(node, 1):
        raise Unsupported("indices of an unstable sort over more than 16 elements (std::sort's tie order)")
    return sort(ctx, x, dim, descending)
