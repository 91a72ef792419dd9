"""AOTAutograd's joint graph (forward and backward in one, before the partitioner splits it):
which nodes go to the forward, and where the backward reads them. Shared by the rewrites that
change what the forward saves (saved_log_softmax.py, recomputed_pointwise.py, padded_matmuls.py)."""

from __future__ import annotations

import operator

import torch
import torch.fx

aten = torch.ops.aten


def forward_nodes(graph: torch.fx.Graph, num_fwd_outputs: int) -> set[torch.fx.Node]:
    """The nodes the partitioner puts in the forward. The default partitioner keeps the traced
    order: every node up to the last one AOTAutograd tagged as traced in the forward (a saved
    alias the backward alone reads is one of them); without tags, those the forward outputs
    depend on."""
    nodes = list(graph.nodes)
    tagged = [i for i, n in enumerate(nodes) if n.meta.get("partitioner_tag") == "is_forward"]
    if tagged:
        return {n for n in nodes[:tagged[-1] + 1] if not is_tangent(n)}
    seen: set[torch.fx.Node] = set()
    stack = [n for n in forward_outputs(graph, num_fwd_outputs)]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.all_input_nodes)
    return seen


def forward_outputs(graph: torch.fx.Graph, num_fwd_outputs: int) -> list[torch.fx.Node]:
    return [n for n in graph.output_node().args[0][:num_fwd_outputs] if isinstance(n, torch.fx.Node)]


def is_tangent(node: torch.fx.Node) -> bool:
    return node.op == "placeholder" and "tangents" in str(node.target)


def backward_reads(node: torch.fx.Node, forward: set) -> list[tuple[torch.fx.Node, torch.fx.Node]]:
    """(backward node, the node it reads): the backward's reads of `node`, directly or through
    forward aliases of it (the value autograd saved)."""
    reads = []
    for user in node.users:
        if user not in forward:
            reads.append((user, node))
        elif user.target is aten.alias.default:
            reads.extend(backward_reads(user, forward))
    return reads


def backward_copy(graph: torch.fx.Graph, node: torch.fx.Node, args_map) -> torch.fx.Node:
    """A copy of forward `node` for the backward (its arguments through `args_map`), without the
    forward's partitioner tag: the default partitioner takes every node up to the last tagged
    one into the forward."""
    new = graph.node_copy(node, args_map)
    new.meta.pop("partitioner_tag", None)
    return new


def call_with_val(graph: torch.fx.Graph, target, *args) -> torch.fx.Node:
    """A new node of `target` at the graph's insertion point, its `val` evaluated on its
    arguments' fake tensors (what the partitioner and the importer read)."""
    node = graph.call_function(target, args)
    fake = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
    node.meta["val"] = target(*fake)
    return node


def merge_forward_duplicates(graph: torch.fx.Graph, num_fwd_outputs: int) -> int:
    """Forward nodes that compute what an earlier forward node computes (the same pure op on the
    same arguments: each attention layer's copy of the additive mask) replaced by it, so that it
    is saved once. What the user gets back (or a view of it) is left alone: eager returns two
    tensors there, not one twice. Backward nodes are left alone too: a backward that recomputes a forward value
    (frontend/half_attention.py's attention probabilities) does so not to save it. Returns how
    many were merged."""
    forward = forward_nodes(graph, num_fwd_outputs)
    returned = _returned(forward_outputs(graph, num_fwd_outputs))
    seen: dict = {}
    merged = 0
    for node in list(graph.nodes):
        if node not in forward or node.op != "call_function" or node.is_impure() or not _pure(node.target):
            continue
        if node in returned:  # two results eager returns apart (x.sin(), x.sin()) must not alias
            continue
        try:
            key = (node.target, _frozen(node.args), _frozen(node.kwargs))
            hash(key)
        except TypeError:  # an unhashable argument: left as it is
            continue
        if key in seen:
            node.replace_all_uses_with(seen[key])
            graph.erase_node(node)
            merged += 1
        else:
            seen[key] = node
    return merged


def _returned(outputs: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """The forward's results to the user and the nodes they are views of."""
    returned, stack = set(), list(outputs)
    while stack:
        node = stack.pop()
        if node in returned:
            continue
        returned.add(node)
        if node.op == "call_function" and _returns_view(node.target) and isinstance(node.args[0], torch.fx.Node):
            stack.append(node.args[0])
    return returned


def _returns_view(target) -> bool:
    if target is operator.getitem:
        return True  # a piece of a split (the split's schema says whether it views)
    return isinstance(target, torch._ops.OpOverload) and any(r.alias_info is not None for r in target._schema.returns)


def _pure(target) -> bool:
    if not isinstance(target, torch._ops.OpOverload):
        return target is operator.getitem
    return torch.Tag.nondeterministic_seeded not in target.tags


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value
