"""Views the backward reads, taken again there from the tensor they view.

Why. AOTAutograd's default partitioner saves every forward value a backward node reads, views
included, and a forward graph returns what it saves as tensors of their own: a compiled region
writes each saved view out contiguous. An attention layer's query, key and value, the heads of
the fused qkv projection split and permuted ([B, L, 3E] -> three [B, H, L, E/H]), were three
copy kernels a layer in the forward of GPT-2's training step, their buffers saved for the
backward's attention_grad, where the projection they view holds the same elements. The padded
logits of frontend/padded_matmuls.py are a slice of the padded product, read by the
cross-entropy's backward. Inductor's min-cut partitioner recomputes views (they cost nothing);
the default partitioner is given a joint graph in which the backward takes them itself.

Where. Targets whose options say so (TargetOptions.retakes_saved_views): the cuda target. The
cpu target keeps its saved activations in the layouts its regions computed them in
(saved_layouts.py); re-taking views there slowed its ResNet-50 training step by about 5%.

What. On the joint graph before it is split (backend._partition), a saved value that is a chain
of view ops (view, slice, permute, split's pieces, ...) of a forward node B is read in the
backward through a copy of that chain made there from B, so that B is saved instead, when
- B is computed by the forward (a graph input the backward did not read already may be one the
  step mutates), or the backward reads B already;
- the views of B rewritten so add up to at least 7/8 of B's bytes, or B is saved anyway: the
  saved bytes grow by an eighth at most (three heads of one projection: not at all; the padded
  logits: by 7 columns of 50264).
"""

from __future__ import annotations

import operator

import torch
import torch.fx

from .joint_graph import backward_copy, backward_reads, forward_nodes, forward_outputs
from .recomputed_pointwise import _bytes

aten = torch.ops.aten

VIEWS = frozenset({aten.view.default, aten._unsafe_view.default, aten.alias.default, aten.slice.Tensor,
                   aten.permute.default, aten.t.default, aten.transpose.int, aten.unsqueeze.default,
                   aten.squeeze.dim, aten.squeeze.dims, aten.expand.default, aten.select.int})
SPLITS = frozenset({aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int})


def recompute_views(graph: torch.fx.Graph, num_fwd_outputs: int) -> int:
    """Rewrite the joint graph so the backward takes the saved views it may itself; returns how
    many saved values it no longer reads."""
    forward = forward_nodes(graph, num_fwd_outputs)
    outputs = set(forward_outputs(graph, num_fwd_outputs))
    saved = [n for n in graph.nodes if n in forward and backward_reads(n, forward)]
    by_base: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for value in saved:
        chain = _view_chain(value) if value not in outputs else None
        if chain:
            by_base.setdefault(chain[0].args[0], []).append(value)
    saved_set = set(saved)
    rewritten = 0
    for base, views in by_base.items():
        if base not in saved_set and (base.op == "placeholder" or base not in forward
                                      or 8 * _bytes(views) < 7 * _bytes([base])):
            continue
        _rewrite(graph, views, forward)
        rewritten += len(views)
    return rewritten


def _view_step(node: torch.fx.Node) -> bool:
    """Whether `node` is a view of its first argument (a split's piece counts as one step)."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        source = node.args[0]
        return isinstance(source, torch.fx.Node) and source.op == "call_function" and source.target in SPLITS
    return node.target in VIEWS and isinstance(node.args[0], torch.fx.Node)


def _view_chain(value: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The view nodes from the first one above its base down to `value` (a getitem brings its
    split along), or None if `value` is no view."""
    chain = []
    node = value
    while _view_step(node):
        chain.append(node)
        if node.target is operator.getitem:
            chain.append(node.args[0])
            node = node.args[0].args[0]
        else:
            node = node.args[0]
    return chain[::-1] or None


def _rewrite(graph: torch.fx.Graph, views: list[torch.fx.Node], forward: set) -> None:
    order = {n: i for i, n in enumerate(graph.nodes)}
    reads = [r for v in views for r in backward_reads(v, forward)]
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    nodes = sorted({n for v in views for n in _view_chain(v)}, key=order.__getitem__)
    with graph.inserting_before(min((user for user, _ in reads), key=order.__getitem__)):
        for node in nodes:
            copies[node] = backward_copy(graph, node, lambda a: copies.get(a, a))
    for user, read in reads:
        user.replace_input_with(read, copies[read] if read in copies else _aliased(read, copies))


def _aliased(read: torch.fx.Node, copies: dict) -> torch.fx.Node:
    """The backward's copy of the view an alias (the value autograd saved) stands for."""
    source = read
    while source not in copies:
        source = source.args[0]
    return copies[source]
