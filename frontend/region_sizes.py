"""Size symbols into compiled regions, and the host-side size arithmetic around them.

A region imported with `?` dims needs the value of every symbol its sizes are made of. A symbol
is at hand when an input tensor has a dim of exactly that size (`dynamo.dim` reads it) or a SymInt
input is that symbol. Where neither holds, e.g. a region that turns a [B*T, C] input into
[B, T, C], `route_sizes` adds the graph's own SymInt input for that symbol to the region's
inputs (or, when the graph has none, a `sym_size` of a graph input carrying it): the region then
takes it as an `index` argument.

Nodes that compute SymInts from SymInts (`s0 * s1`, `sym_size`) are host arithmetic on Python
ints between the regions, not tensor ops: they are listed apart from eager fallbacks.
"""

import operator

import sympy
import torch
import torch.fx as fx

# Targets of nodes that only compute sizes (Python ints at run time).
HOST_SIZE_TARGETS = frozenset({
    operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.neg,
    torch.ops.aten.sym_size.int, torch.ops.aten.sym_numel.default, torch.ops.aten.sym_stride.int,
    torch.sym_max, torch.sym_min,
})


def is_host_size_node(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target in HOST_SIZE_TARGETS \
        and isinstance(node.meta.get("val"), (torch.SymInt, int))


def _free_symbols(val) -> set:
    if isinstance(val, torch.SymInt):
        return set(val.node.expr.free_symbols)
    if isinstance(val, torch.Tensor):
        return {sym for s in val.shape if isinstance(s, torch.SymInt) for sym in s.node.expr.free_symbols}
    if isinstance(val, (tuple, list)):
        return set().union(*[_free_symbols(v) for v in val]) if val else set()
    return set()


def _carried(placeholders: list[fx.Node]) -> set:
    found = set()
    for p in placeholders:
        val = p.meta.get("val")
        sizes = [val] if isinstance(val, torch.SymInt) else list(getattr(val, "shape", []))
        found |= {s.node.expr for s in sizes if isinstance(s, torch.SymInt) and isinstance(s.node.expr, sympy.Symbol)}
    return found


def _graph_source(graph: fx.Graph, symbol, before: fx.Node) -> fx.Node | None:
    """A node of the outer graph whose run-time value is `symbol`'s."""
    for p in graph.nodes:
        if p.op != "placeholder":
            continue
        val = p.meta.get("val")
        if isinstance(val, torch.SymInt) and val.node.expr == symbol:
            return p
    for p in graph.nodes:
        val = p.meta.get("val") if p.op == "placeholder" else None
        for d, s in enumerate(getattr(val, "shape", [])):
            if isinstance(s, torch.SymInt) and s.node.expr == symbol:
                with graph.inserting_before(before):
                    size = graph.call_function(torch.ops.aten.sym_size.int, (p, d))
                size.meta["val"] = s
                return size
    return None


def route_sizes(fused: fx.GraphModule, call: fx.Node) -> None:
    """Give the region called by `call` every size symbol it uses that its inputs do not carry."""
    sub = getattr(fused, call.target)
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    needed = set().union(*[_free_symbols(n.meta.get("val")) for n in sub.graph.nodes])
    for symbol in sorted(needed - _carried(placeholders), key=str):
        source = _graph_source(fused.graph, symbol, call)
        if source is None:
            continue  # the import says which symbol is missing; the region then runs eagerly
        with sub.graph.inserting_after(placeholders[-1] if placeholders else None):
            arg = sub.graph.placeholder(f"size_{symbol}")
        arg.meta["val"] = source.meta["val"]
        placeholders.append(arg)
        call.args = (*call.args, source)
    sub.recompile()
