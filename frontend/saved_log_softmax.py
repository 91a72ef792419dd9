"""A training graph's log_softmax saved as two row statistics, recomputed where the backward reads it.

Why. A cross-entropy's backward reads the forward's log-probabilities (`exp(logp)` in
`_log_softmax_backward_data`). AOTAutograd's default partitioner saves each forward value a
backward node reads, so the forward writes the whole [tokens, vocabulary] float32 matrix and
the backward reads it back: 823 MB each way for AMP GPT-2's 4096 x 50257 logits, twice the
size of the bf16 logits they come from. The row maximum and the log of the row sum (4096
floats each) give the matrix again from those logits, in the elementwise kernel the backward
runs anyway. Inductor's min-cut partitioner recomputes it so; the min-cut partitioner costs
this project more elsewhere (the `partitioner` option says where), so the default one is given
a joint graph in which the backward already reads the statistics.

How. On the joint graph, before it is split (backend._partition), each `_log_softmax(x, dim)`
that a forward value and a backward node both read becomes the importer's own decomposition
(frontend/aten/reduction.softmax: m = amax(x), shifted = x - m, logs = log(sum(exp(shifted))),
shifted - logs) for its forward readers, and `(x' - m) - logs` for its backward readers, where
x' is x cast again from the narrower float it was cast from (`_to_copy`, `convert_element_type`)
or x itself. Both evaluate the same expression on the same values, so the backward reads what
the forward would have saved. The partitioner then saves m, logs and x's source; the forward's
log-probabilities, read only by a gather (nll_loss), are computed at the gathered elements
alone (codegen/gathered_producers.py).
"""

from __future__ import annotations

import torch
import torch.fx

from .joint_graph import backward_copy, backward_reads, call_with_val as _call, forward_nodes

aten, prims = torch.ops.aten, torch.ops.prims

UPCASTS = (aten._to_copy.default, prims.convert_element_type.default)


def save_log_softmax_statistics(graph: torch.fx.Graph, num_fwd_outputs: int) -> int:
    """Rewrite, on a joint graph whose first `num_fwd_outputs` outputs are the forward's, each
    log_softmax the backward reads; returns how many were rewritten."""
    forward = forward_nodes(graph, num_fwd_outputs)
    rewritten = 0
    for node in list(graph.nodes):
        if node.target is aten._log_softmax.default and node in forward and _rewrite(graph, node, forward):
            rewritten += 1
    if rewritten:
        graph.lint()
    return rewritten


def _rewrite(graph: torch.fx.Graph, node: torch.fx.Node, forward: set) -> bool:
    x, dim, half_to_float = node.args
    reads = backward_reads(node, forward)
    if half_to_float or not reads or not _float_tensor(x):
        return False
    with graph.inserting_before(node.next):  # in this order, after the log_softmax
        m = _call(graph, aten.amax.default, x, [dim], True)
        shifted = _call(graph, aten.sub.Tensor, x, m)
        total = _call(graph, aten.sum.dim_IntList, _call(graph, aten.exp.default, shifted), [dim], True)
        logs = _call(graph, aten.log.default, total)
        logp = _call(graph, aten.sub.Tensor, shifted, logs)
    for new in (m, shifted, total, total.args[0], logs, logp):  # its source (stack trace, module), its tag
        new.meta.update({k: v for k, v in node.meta.items() if k not in ("val", "tensor_meta")})
    order = {n: i for i, n in enumerate(graph.nodes)}
    with graph.inserting_before(min((user for user, _ in reads), key=order.__getitem__)):
        again = _recast(graph, x)
        shifted_again = _call(graph, aten.sub.Tensor, again, m)
        logp_again = _call(graph, aten.sub.Tensor, shifted_again, logs)
    for user, read in reads:
        user.replace_input_with(read, logp_again)
    _erase_unused_aliases(graph, node)
    node.replace_all_uses_with(logp)
    graph.erase_node(node)
    return True


def _erase_unused_aliases(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    for user in list(node.users):
        if user.target is aten.alias.default:
            _erase_unused_aliases(graph, user)
            if not user.users:
                graph.erase_node(user)


def _float_tensor(x) -> bool:
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.dtype.is_floating_point


def _recast(graph: torch.fx.Graph, x: torch.fx.Node) -> torch.fx.Node:
    """x computed again from the narrower float it was cast up from, or x (a cast of a cast is
    one more elementwise op in the kernel that reads it; saving x would save the wide copy)."""
    if x.target not in UPCASTS:
        return x
    source = x.args[0]
    if not (_float_tensor(source) and source.meta["val"].dtype.itemsize < x.meta["val"].dtype.itemsize):
        return x
    return backward_copy(graph, x, lambda a: a)
