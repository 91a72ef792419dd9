"""The sum along a dim of a one-hot scatter, folded to the value it scatters.

Why. A cross-entropy's backward (`nll_loss_backward` then `_log_softmax_backward_data`, as
AOTAutograd decomposes them) scatters the loss gradient into a zero [tokens, vocabulary] matrix
at each row's label, scales it by the row's weight, and sums each row again: `grad - exp(logp) *
sum(grad, dim)`. Each row holds one scattered element, so its sum is that element; computed, the
sum is a pass over 4096 x 50257 elements in AMP GPT-2's step for 4096 numbers (two kernels, 0.2
ms on an H100).

What. `sum(scatter(zeros, d, index, c) * w, [d])`, where `index` has one element along `d` and
the zeros' size elsewhere (every row gets exactly one element) and `w` is broadcast along `d`
with the sum's shape, becomes `w * c`, squeezed along `d` without keepdim. Exact: the other
terms are zeros. An index out of range is an error in eager and stays one (the scatter itself
is left for its other readers).
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .joint_graph import call_with_val as _call

aten = torch.ops.aten

ZEROS = {aten.full_like.default: 1, aten.full.default: 1, aten.zeros_like.default: None, aten.zeros.default: None}


def fold_one_hot_sums(graph: torch.fx.Graph) -> int:
    """Rewrite each such sum in `graph`; returns how many were rewritten."""
    rewritten = 0
    for node in list(graph.nodes):
        if node.target is aten.sum.dim_IntList and _fold(graph, node):
            rewritten += 1
    if rewritten:
        graph.lint()
    return rewritten


def _fold(graph: torch.fx.Graph, node: torch.fx.Node) -> bool:
    source, dims = node.args[0], node.args[1]
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    out, full = _val(node), _val(source)
    if node.kwargs.get("dtype") is not None or out is None or full is None or not dims or len(dims) != 1 \
            or full.dim() == 0:  # a 0-d sum (dim 0 or -1 of a scalar) has no one-hot rows
        return False
    dim = dims[0] % full.dim()
    found = _one_hot_and_weight(source, dim)
    if found is None:
        return False
    one_hot, weight = found
    with graph.inserting_before(node):
        made = [_call(graph, aten.mul.Tensor, weight, one_hot.args[3])]
        if not keepdim:
            made.append(_call(graph, aten.squeeze.dim, made[-1], dim))
    folded = made[-1]
    if not _same_shape(_val(folded).shape, out.shape) or _val(folded).dtype != out.dtype:
        for n in reversed(made):  # a weight broadcast along other dims too, or of another dtype
            graph.erase_node(n)
        return False
    node.replace_all_uses_with(folded)
    graph.erase_node(node)
    return True


def _one_hot_and_weight(source: torch.fx.Node, dim: int) -> tuple | None:
    """(the one-hot scatter, the weight multiplying it) that `source` is: a weight of the
    source's rank, broadcast along `dim`."""
    if source.target is not aten.mul.Tensor:
        return None
    for one_hot, weight in (source.args, tuple(reversed(source.args))):
        w = _val(weight)
        if isinstance(one_hot, torch.fx.Node) and _is_one_hot(one_hot, dim) and w is not None \
                and w.dim() == _val(source).dim() and _same(w.shape[dim], 1):
            return one_hot, weight
    return None


def _is_one_hot(node: torch.fx.Node, dim: int) -> bool:
    """scatter.value(zeros, dim, index, number) with one index element per row along `dim`."""
    if node.target is not aten.scatter.value or not isinstance(node.args[3], (int, float)):
        return False
    zeros, scatter_dim, index = node.args[:3]
    out, idx = _val(node), _val(index)
    if out is None or idx is None or scatter_dim % out.dim() != dim or idx.dim() != out.dim():
        return False
    rows = all(_same(i, 1 if d == dim else o) for d, (i, o) in enumerate(zip(idx.shape, out.shape)))
    return rows and _is_zeros(zeros)


def _is_zeros(node) -> bool:
    if not isinstance(node, torch.fx.Node) or node.target not in ZEROS:
        return False
    fill = ZEROS[node.target]
    value = node.args[fill] if fill is not None else 0
    return isinstance(value, (int, float)) and value == 0


def _val(node):
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _same(a, b) -> bool:
    """Sizes equal for every value of their symbols, decided without adding a guard (the graph's
    guards are Dynamo's, settled before AOTAutograd calls us)."""
    return statically_known_true(a == b)


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
