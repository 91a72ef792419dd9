"""AOTAutograd's joint graph (forward and backward in one, before the partitioner splits it):
which nodes go to the forward, and where the backward reads them. Shared by the rewrites that
change what the forward saves (saved_log_softmax.py, recomputed_pointwise.py, padded_matmuls.py)."""

from __future__ import annotations

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
