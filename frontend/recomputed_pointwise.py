"""Pointwise values the backward reads, computed again there from what the forward saves anyway.

Why. AOTAutograd's default partitioner saves every forward value a backward node reads. A
GELU written as torch ops (GPT-2's `0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3)))`) has its
backward read `0.5 * x`, `tanh(...)` and `1 + tanh(...)` besides x: the forward writes three
more [tokens, 4 * width] tensors a layer that no forward op needs in memory (our kernels fuse
the chain), and the backward reads them back. Computed again from x inside the backward's own
fused kernel, they cost neither. Inductor's min-cut partitioner makes such choices for every
value; its choices cost this project more elsewhere (the `partitioner` option), so the default
partitioner is given a joint graph in which the backward already recomputes these.

What. On the joint graph before it is split (backend._partition), a saved value is recomputed
when
- it and the ops between it and its sources are pointwise (torch.Tag.pointwise, not random),
  at most MAX_OPS of them, and it is no forward output;
- its sources are values saved anyway, scalars the graph computes, or forward values a
  non-pointwise op computes (a view, a matmul; saved from then on, a source for the values after
  it), no larger in bytes than it: the backward reads no more than before, and no graph input it
  did not read before (the step may mutate one after the forward: a step count);
- every backward node that reads it is pointwise too, so the recomputation fuses into the
  kernel that reads it instead of being written there.
The copies go just before the first backward reader, one copy of each forward node however many
recomputed values share it.
"""

from __future__ import annotations

import torch
import torch.fx

from .joint_graph import backward_copy, backward_reads, forward_nodes, forward_outputs

MAX_OPS = 12  # ops recomputed for one saved value


def recompute_pointwise(graph: torch.fx.Graph, num_fwd_outputs: int) -> int:
    """Rewrite the joint graph so the backward recomputes the pointwise values it may; returns
    how many saved values it no longer reads."""
    forward = forward_nodes(graph, num_fwd_outputs)
    outputs = set(forward_outputs(graph, num_fwd_outputs))
    saved = [n for n in graph.nodes if n in forward and backward_reads(n, forward)
             and n not in outputs and _pointwise(n)
             and all(_reads_pointwise(user) for user, _ in backward_reads(n, forward))]
    kept = {n for n in graph.nodes if n in forward and backward_reads(n, forward)}
    plans: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    while True:  # a source one value adds may be what an earlier one needs: until nothing changes
        planned = len(plans)
        for value in saved:
            if value not in plans and (chain := _plan(value, kept, forward)) is not None:
                plans[value] = chain
        if len(plans) == planned:
            break
    if plans:
        _rewrite(graph, plans, forward)
    return len(plans)


def _plan(value: torch.fx.Node, kept: set, forward: set) -> list[torch.fx.Node] | None:
    """The chain that recomputes `value`, `kept` updated (it no longer saved, new sources saved),
    or None. A chain with new sources must read fewer bytes than the value (an equal swap, a
    layer norm's rsqrt for its variance, would only move a kernel into the backward)."""
    found = _chain(value, kept - {value}, forward)
    if found is None:
        return None
    chain, fresh = found
    sources, size = _bytes(_sources(chain)), _bytes([value])
    if sources > size or (fresh and sources >= size):
        return None
    kept.discard(value)
    kept |= fresh
    return chain


def _pointwise(node: torch.fx.Node) -> bool:
    target = node.target
    if node.op != "call_function" or not isinstance(node.meta.get("val"), torch.Tensor):
        return False
    if target is torch.ops.aten._to_copy.default:  # a cast (AMP's), untagged
        return _same_device_cast(node)
    return (isinstance(target, torch._ops.OpOverload) and torch.Tag.pointwise in target.tags
            and torch.Tag.nondeterministic_seeded not in target.tags)


def _same_device_cast(node: torch.fx.Node) -> bool:
    source = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    return (isinstance(source, torch.Tensor) and source.device == node.meta["val"].device
            and set(node.kwargs) <= {"dtype", "layout", "device"} and node.kwargs.get("layout", torch.strided) == torch.strided)


def _reads_pointwise(node: torch.fx.Node) -> bool:
    """A pointwise node, or an alias (the backward's view of a saved value) only such nodes read."""
    if node.target is torch.ops.aten.alias.default:
        return all(_reads_pointwise(user) for user in node.users)
    return _pointwise(node)


def _scalar(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 0


def _chain(value: torch.fx.Node, available: set, forward: set) -> tuple[list[torch.fx.Node], set] | None:
    """(the pointwise nodes that compute `value` from `available` nodes, scalars and new sources,
    in graph order; the new sources), or None when there is none of at most MAX_OPS. A new source
    is a forward node computed by something other than a pointwise op (a view, a matmul) that the
    backward would read instead: AMP's `x.float()` saved for a float32 GELU chain (CUDA's autocast
    runs pow in float32) is computed again from the bf16 `x`, half its bytes."""
    chain: set[torch.fx.Node] = set()
    fresh: set[torch.fx.Node] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if node in chain:
            continue
        chain.add(node)
        if len(chain) > MAX_OPS:
            return None
        for arg in node.all_input_nodes:
            if arg in available or arg in chain or (_scalar(arg) and arg.op != "placeholder"):
                continue  # a graph input not saved already may be one the step mutates (a step count)
            if arg not in forward or arg.op == "placeholder":
                return None
            if _pointwise(arg):
                stack.append(arg)
            elif isinstance(arg.meta.get("val"), torch.Tensor):
                fresh.add(arg)
            else:
                return None
    order = {n: i for i, n in enumerate(value.graph.nodes)}
    return sorted(chain, key=order.__getitem__), fresh


def _sources(chain: list[torch.fx.Node]) -> list[torch.fx.Node]:
    inside = set(chain)
    return list({a: None for n in chain for a in n.all_input_nodes if a not in inside})


def _bytes(nodes) -> int:
    """Their bytes, a symbolic size at the value it was traced with."""
    total = 0
    for n in nodes:
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            total += _hint(val.numel()) * val.element_size()
    return total


def _hint(size) -> int:
    return size if isinstance(size, int) else size.node.hint if size.node.has_hint() else 0


def _rewrite(graph: torch.fx.Graph, plans: dict, forward: set) -> None:
    order = {n: i for i, n in enumerate(graph.nodes)}
    readers = {value: backward_reads(value, forward) for value in plans}
    first = min((user for reads in readers.values() for user, _ in reads), key=order.__getitem__)
    if any(order[s] > order[first] for chain in plans.values() for s in _sources(chain)):
        return  # a graph whose forward and backward interleave: left as it is
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    nodes = sorted({n for chain in plans.values() for n in chain}, key=order.__getitem__)
    with graph.inserting_before(first):
        for node in nodes:
            copies[node] = backward_copy(graph, node, lambda a: copies.get(a, a))
    for value, reads in readers.items():
        for user, read in reads:
            user.replace_input_with(read, copies[value])
    graph.lint()
