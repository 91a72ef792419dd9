"""A graph's outputs in the layout eager gives them: an FX pass before partitioning.

A compiled region returns the tensors it computes contiguous. Where eager returns a result dense
but in another dim order, the caller saw other strides than eager's: `x.contiguous(memory_format=
torch.channels_last)` came back NCHW-contiguous, as did a convolution's result on channels-last
input, a transposed or permuted result. The values were right, the layout the user asked for was
not: a caller handing `data_ptr()` to a kernel that reads NHWC, or testing
`is_contiguous(memory_format=...)`, saw something eager never gives (inductor keeps eager's
strides too).

So each such output `v` (a user's result, per AOTAutograd's metadata: not a saved tensor, not an
alias AOTAutograd regenerates) becomes `permute(clone(permute(v, order)), inverse)`: the region
computes `v` in eager's dim order, contiguous, and an eager permute (a view, input_views.py's
marking) hands it back with eager's strides. The permute folds into how the region writes `v`:
no extra pass over memory. Results of symbolic sizes, or not dense (a slice of a larger
intermediate), are left contiguous.
"""

from __future__ import annotations

import torch
import torch.fx as fx
from torch._functorch._aot_autograd.schemas import OutputType

from .input_views import is_input_view, mark_input_view

aten = torch.ops.aten


def dense_order(val) -> list[int] | None:
    """The dims of `val` outermost first where it is dense in that order but not contiguous in
    its own (channels-last: [0, 2, 3, 1]); None where it is contiguous, not dense, or symbolic."""
    if not isinstance(val, torch.Tensor) or val.layout != torch.strided:
        return None
    if any(isinstance(n, torch.SymInt) for n in (*val.shape, *val.stride(), val.storage_offset())):
        return None
    if val.is_contiguous() or val.storage_offset() != 0:
        return None
    order = sorted(range(val.dim()), key=lambda d: (-val.stride(d), d))
    return order if val.permute(order).is_contiguous() else None


def user_outputs() -> range | None:
    """The positions of the graph's outputs the caller receives as computed (AOTAutograd's
    non-aliased user outputs, after the mutated inputs it returns), from the tracing context;
    None outside AOTAutograd."""
    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None) if context is not None else None
    if meta is None:
        return None
    first = meta.num_mutated_inp_runtime_indices
    return range(first, first + meta.num_outputs)


def _plain(k: int) -> bool:
    context = torch._guards.TracingContext.try_get()
    return context.fw_metadata.output_info[k].output_type == OutputType.non_alias


def keep_output_layouts(gm: fx.GraphModule, positions: range) -> int:
    """Each output at `positions` that eager returns dense but permuted (dense_order) computed in
    that order and handed back through an eager permute (see the module's docstring). Returns how
    many outputs were laid out so."""
    graph = gm.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)):
        return 0
    results, made = list(results), {}
    for k, i in enumerate(positions):
        value = results[i] if i < len(results) else None
        if not isinstance(value, fx.Node) or value.op != "call_function" or is_input_view(value) or not _plain(k):
            continue
        order = dense_order(value.meta.get("val"))
        if order is None:
            continue
        if value not in made:
            made[value] = _laid_out(graph, output, value, order)
        results[i] = made[value]
    if made:
        output.args = (type(output.args[0])(results),)
        gm.recompile()
    return len(made)


def _laid_out(graph: fx.Graph, output: fx.Node, value: fx.Node, order: list[int]) -> fx.Node:
    inverse = sorted(range(len(order)), key=order.__getitem__)
    val = value.meta["val"]
    with graph.inserting_after(value):
        permuted = graph.call_function(aten.permute.default, (value, order))
    with graph.inserting_after(permuted):
        dense = graph.call_function(aten.clone.default, (permuted,), {"memory_format": torch.contiguous_format})
    with graph.inserting_before(output):
        back = mark_input_view(graph.call_function(aten.permute.default, (dense, inverse)))
    permuted.meta["val"] = val.permute(order)
    dense.meta["val"] = permuted.meta["val"].clone(memory_format=torch.contiguous_format)
    back.meta["val"] = dense.meta["val"].permute(inverse)
    return back
