"""Views of graph inputs stay views: an FX pass before partitioning, so no region copies them.

A compiled region returns contiguous tensors it computed, and takes its inputs contiguous (a
non-contiguous one is copied first: CompiledRegion.forward). Two cases made that a copy of a
whole weight per training step. AOTAutograd's forward saves `permute(weight)` for the
backward's matmul: for GPT-2's tied 50257x768 embedding the region materialised that 154 MB
transpose as an output (150 ms of a 550 ms CPU step), and in the backward the saved view, a
transposed input, would be made contiguous again. Eager and inductor hand the view on. So:

- `split_output_views`: a graph output reached from an input through view ops only (permute,
  transpose, view, expand, slice, ...) gets its own copy of that chain of view ops, marked to
  run eagerly: the output is a view of the input, no byte copied. The original chain still feeds
  the region's consumers, where it folds into how they index the input (a matmul reads the
  weight transposed). Not for an input the graph writes (take_input_writes' destinations, or
  any graph with an in-place op left): a view of it would show the written values.
- `unpermute_inputs`: an input whose layout is a permutation of a contiguous one (that saved
  transpose, in the backward) goes through an eager permute to that contiguous layout (a view
  of the same bytes, which the region takes as it is) and a permute back inside the region,
  which folds into its consumers.

compile_graph runs the first on forward graphs (whose extra outputs are what the backward
saves) and the second on backward graphs (whose inputs those are). Not on inference graphs:
there a view output is AOTAutograd's to regenerate, and an input permuted by the user keeps
the graph one region fed by its inputs, called directly and held by the compile cache's graph
level (graph_cache.py), at the price of a contiguous copy per call.

Both mark their eager nodes (`is_input_view`): the partitioner leaves them out of regions and
the graph's report does not count them as fallbacks (a view runs no kernel).
"""

from __future__ import annotations

import torch
import torch.fx as fx

aten = torch.ops.aten

MARK = "dynamo_mlir_input_view"

# Ops whose result is a view of their first argument (same storage), given static arguments.
VIEW_OPS = frozenset({
    aten.permute.default, aten.t.default, aten.transpose.int, aten.view.default, aten._unsafe_view.default,
    aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.expand.default,
    aten.alias.default, aten.detach.default, aten.slice.Tensor, aten.select.int,
})


def is_input_view(node: fx.Node) -> bool:
    """A view op these passes placed to run eagerly."""
    return bool(node.meta.get(MARK))


def _has_node(arg) -> bool:
    if isinstance(arg, fx.Node):
        return True
    if isinstance(arg, (tuple, list)):
        return any(_has_node(a) for a in arg)
    if isinstance(arg, dict):
        return any(_has_node(a) for a in arg.values())
    return False


def _view_chain(node, symbolic: bool = False) -> tuple[fx.Node | None, list[fx.Node]]:
    """(the input, the view ops from it to `node` in order) when `node` is reached from a
    graph input through view ops only, of static arguments unless `symbolic`; (None, [])
    otherwise."""
    chain = []
    while isinstance(node, fx.Node) and node.op == "call_function" and node.target in VIEW_OPS:
        if not symbolic and (_has_node(node.args[1:]) or _has_node(node.kwargs)):  # a symbolic size: left alone
            return None, []
        chain.append(node)
        node = node.args[0]
    if not chain or not isinstance(node, fx.Node) or node.op != "placeholder" \
            or not isinstance(node.meta.get("val"), torch.Tensor):
        return None, []
    return node, chain[::-1]


def _mutates(graph: fx.Graph) -> bool:
    for node in graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is not None and schema.is_mutable:
            return True
    return False


def mark_input_view(node: fx.Node) -> fx.Node:
    """`node` marked as a view these passes (or saved_layouts.py) place to run eagerly."""
    node.meta[MARK] = True
    return node


def eager_view_of_input(graph: fx.Graph, value: fx.Node, before: fx.Node, symbolic: bool = True,
                        written: frozenset = frozenset()) -> fx.Node | None:
    """An eager copy (marked) of the view ops that take `value` from a graph input not in
    `written`, placed before `before` (with `symbolic`, views whose sizes are the graph's own
    SymInts too); None where `value` is no such view."""
    root, chain = _view_chain(value, symbolic)
    if root is None or root in written:
        return None
    last = root
    with graph.inserting_before(before):
        for node in chain:
            copy = graph.node_copy(node, lambda a, n=node, last=last: last if a is n.args[0] else a)
            copy.meta = dict(node.meta)
            last = mark_input_view(copy)
    return last


def split_output_views(gm: fx.GraphModule, written: frozenset, trailing: int = 0) -> int:
    """Give each output that is a view chain of an input not in `written` an eager copy of the
    chain (see the module's docstring). `trailing`: how many last outputs to leave alone
    (take_input_writes' values). Returns how many outputs became views."""
    graph = gm.graph
    if _mutates(graph):
        return 0
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)):
        return 0
    results, made, done = list(results), {}, 0
    for i, value in enumerate(results[:len(results) - trailing]):
        if value not in made:
            made[value] = eager_view_of_input(graph, value, output, symbolic=False, written=written)
        if made[value] is None:
            continue
        results[i] = made[value]
        done += 1
    if done:
        output.args = (type(output.args[0])(results),)
        gm.recompile()
    return done


def _contiguous_order(val: torch.Tensor) -> list[int] | None:
    """The dims of `val` ordered so that permuting by them gives a contiguous tensor, when `val`
    is a permutation of a contiguous layout other than the identity; None otherwise."""
    if val.dim() < 2 or val.is_contiguous() or not all(isinstance(s, int) for s in (*val.shape, *val.stride())):
        return None
    order = sorted(range(val.dim()), key=lambda d: (-val.stride(d), d))
    if order == list(range(val.dim())):
        return None
    return order if val.permute(order).is_contiguous() else None


def _permutation(node: fx.Node, rank: int) -> list[int] | None:
    """The dims `node` permutes its first argument by, when it is a permute, t or transpose of
    static dims; None otherwise."""
    if node.target is aten.permute.default and not _has_node(node.args[1:]):
        return [d % rank for d in node.args[1]]
    if node.target is aten.t.default and rank == 2:
        return [1, 0]
    if node.target is aten.transpose.int and not _has_node(node.args[1:]):
        dims = list(range(rank))
        a, b = node.args[1] % rank, node.args[2] % rank
        dims[a], dims[b] = dims[b], dims[a]
        return dims
    return None


def unpermute_inputs(gm: fx.GraphModule, written: frozenset) -> int:
    """Read each input laid out as a permutation of a contiguous layout through an eager permute
    to that layout and a permute back (see the module's docstring). Returns how many."""
    graph = gm.graph
    if _mutates(graph):
        return 0
    done = 0
    for p in [n for n in graph.nodes if n.op == "placeholder"]:
        val = p.meta.get("val")
        users = [u for u in p.users if u.op == "call_function"]
        if not isinstance(val, torch.Tensor) or p in written or not users:
            continue
        order = _contiguous_order(val)
        if order is None:
            continue
        back = sorted(range(len(order)), key=order.__getitem__)
        with graph.inserting_after(p):
            base = mark_input_view(graph.call_function(aten.permute.default, (p, order)))
        base.meta["val"] = val.permute(order)
        view = None
        for u in users:
            dims = _permutation(u, val.dim())
            if dims is not None:  # a permute of the input: one permute of base (none if the identity)
                composed = [back[d] for d in dims]
                if composed == list(range(len(composed))):
                    u.replace_all_uses_with(base)
                else:
                    with graph.inserting_before(u):
                        direct = graph.call_function(aten.permute.default, (base, composed))
                    direct.meta = dict(u.meta)
                    u.replace_all_uses_with(direct)
                graph.erase_node(u)
                continue
            if view is None:
                with graph.inserting_after(base):
                    view = graph.call_function(aten.permute.default, (base, back))
                view.meta["val"] = val
            u.replace_input_with(p, view)
        done += 1
    if done:
        gm.recompile()
    return done
