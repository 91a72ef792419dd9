"""A training forward's saved activations in the layout its code computed them, told to AOTAutograd.

Why. A forward graph returns, after the model's outputs, the activations AOTAutograd saves for
the backward. No user sees them, so their strides are the compiler's choice, as inductor's
(its layout optimization keeps a CNN's activations channels-last). The cpu target computes a
chain of convolutions NHWC (codegen/channels_last.py); with every saved activation wanted NCHW,
a ResNet-50 forward would end in 100-odd transposes, so it stayed NCHW and every convolution
and convolution gradient ran torch's NCHW kernels (oneDNN reorders each operand to its blocked
layout and back).

How.
- `saved_outputs`: the forward graph's outputs in AOTAutograd's saved-for-backward slice
  (TracingContext.fw_metadata).
- `free_outputs`: a region's outputs that reach the graph only there; the importer marks the
  function results only they read (FREE_RESULTS), and channels_last returns those computed NHWC
  as they are (the runtime hands them on as NCHW tensors with channels-last strides: a region's
  `channels_last_outputs`).
- `save_weights_channels_last`: a saved convolution weight (a parameter the backward's input
  gradient reads) is saved as a channels-last copy the forward's region makes once (FHWC,
  then an eager permute back, a view), as inductor does: torch's convolution makes an FCHW weight
  channels-last on each call for a channels-last input (ResNet-50's step at batch 2:
  `benchmarks/profile_training_step.py --workload train_resnet50_b2_sgd --copy-shapes`, one-off
  runs, took aten::copy_ from 35.1 to 24.4 ms a step), and both the forward's and the backward's convolutions read that copy
  (channels_last: `weight_layout = "fhwc"`).
- `report_output_strides`: the graph outputs' strides, told to AOTAutograd
  (TracingContext.output_strides, as inductor does), which gives the backward's example inputs
  those strides (not its placeholders' metadata: `restride_inputs` copies them there). Its
  compile then reads each through a permute to NHWC (input_views.unpermute_inputs), and
  channels_last takes that as the NHWC twin.

A forward region that runs eagerly for a call (CompiledRegion's checks) returns NCHW tensors:
the backward's region then makes its permuted input contiguous (a copy), as for any other
input, so the answer does not depend on the layout.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ..codegen.channels_last import training_pays
from .input_views import is_input_view, mark_input_view

aten = torch.ops.aten


def saved_outputs(kind: str, gm: fx.GraphModule) -> frozenset[int]:
    """Positions of a forward graph's outputs AOTAutograd saves for the backward; empty for
    another graph, or when AOTAutograd does not say."""
    context = torch._guards.TracingContext.try_get() if kind == "forward" else None
    meta = getattr(context, "fw_metadata", None)
    if meta is None:
        return frozenset()
    try:
        saved = meta.tensors_saved_for_backwards_slice
    except (AssertionError, AttributeError):  # metadata AOTAutograd fills in later
        return frozenset()
    output = next(n for n in reversed(gm.graph.nodes) if n.op == "output").args[0]
    count = len(output) if isinstance(output, (tuple, list)) else 1
    return frozenset(range(count)[saved])


def _conv_weights(graph: fx.Graph) -> set[fx.Node]:
    """Placeholders a 2-d convolution reads as its weight (static 4-d floating point), but for
    1x1 kernels: their FCHW bytes are channels-last already (torch makes no copy of them)."""
    weights = set()
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.convolution.default:
            w = node.args[1]
            val = w.meta.get("val") if isinstance(w, fx.Node) else None
            if w.op == "placeholder" and isinstance(val, torch.Tensor) and val.dim() == 4 \
                    and val.is_floating_point() and all(isinstance(d, int) for d in val.shape) and val.is_contiguous() \
                    and tuple(val.shape[2:]) != (1, 1):
                weights.add(w)
    return weights


def _pays(graph: fx.Graph, ratio: float) -> bool:
    """channels_last.training_pays over the graph's convolutions (the pass decides on the same
    sizes: their outputs' and weights' elements)."""
    activations = weights = 0
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.convolution.default:
            out, w = node.meta.get("val"), node.args[1].meta.get("val")
            if not (isinstance(out, torch.Tensor) and isinstance(w, torch.Tensor)):
                return False
            activations, weights = activations + out.numel(), weights + w.numel()
    return training_pays(activations, weights, ratio)


def save_weights_channels_last(gm: fx.GraphModule, saved: frozenset[int], written: frozenset, target_options) -> int:
    """Each saved output that is a convolution's weight placeholder (not one the graph writes)
    replaced by a channels-last copy: clone(permute(w, NHWC)) computed in a region, then an eager
    permute back to FCHW (a view: an NCHW tensor with channels-last strides), where the graph
    runs channels-last (the cpu options library_matmul, channels_last, channels_last_training).
    Returns how many."""
    graph = gm.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    results = output.args[0]
    ratio = getattr(target_options, "channels_last_training", None)  # (a plugin target may lack the options)
    if not (saved and isinstance(results, (tuple, list)) and ratio is not None and target_options.library_matmul
            and target_options.channels_last and _pays(graph, ratio)):
        return 0
    weights = _conv_weights(graph) - set(written)
    last_placeholder = [n for n in graph.nodes if n.op == "placeholder"][-1]
    results, copies = list(results), {}
    for i in sorted(saved):
        w = results[i]
        if w not in weights:
            continue
        if w not in copies:
            val = w.meta["val"]
            with graph.inserting_after(last_placeholder):
                fhwc = graph.call_function(aten.permute.default, (w, [0, 2, 3, 1]))
            with graph.inserting_after(fhwc):
                dense = graph.call_function(aten.clone.default, (fhwc,), {"memory_format": torch.contiguous_format})
            with graph.inserting_before(output):
                back = mark_input_view(graph.call_function(aten.permute.default, (dense, [0, 3, 1, 2])))
            fhwc.meta["val"] = val.permute(0, 2, 3, 1)
            dense.meta["val"] = fhwc.meta["val"].clone(memory_format=torch.contiguous_format)
            back.meta["val"] = dense.meta["val"].permute(0, 3, 1, 2)
            last_placeholder = dense
            copies[w] = back
        results[i] = copies[w]
    if copies:
        output.args = (type(output.args[0])(results),)
        gm.recompile()
    return len(copies)


def _graph_outputs(fused: fx.GraphModule) -> list:
    output = next(n for n in reversed(fused.graph.nodes) if n.op == "output").args[0]
    return list(output) if isinstance(output, (tuple, list)) else [output]


def _region_output(node) -> tuple[fx.Node, int] | None:
    """(region call, its output) that graph value `node` is, or None."""
    if not isinstance(node, fx.Node):
        return None
    if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], fx.Node) \
            and node.args[0].op == "call_module":
        return node.args[0], node.args[1]
    return (node, 0) if node.op == "call_module" else None


def free_outputs(fused: fx.GraphModule, region: fx.Node, saved: frozenset[int]) -> frozenset[int]:
    """The outputs of region call `region` that the graph only returns, at saved positions."""
    if not saved:
        return frozenset()
    returned: dict[int, set[bool]] = {}
    for position, node in enumerate(_graph_outputs(fused)):
        where = _region_output(node)
        if where is not None and where[0] is region:
            returned.setdefault(where[1], set()).add(position in saved)
    values = [u for u in region.users if u.op == "call_function" and u.target is operator.getitem] or [region]
    free = set()
    for value in values:
        k = value.args[1] if value is not region else 0
        only_returned = all(u.op == "output" for u in value.users)
        if only_returned and returned.get(k) == {True}:
            free.add(k)
    return frozenset(free)


def report_output_strides(fused: fx.GraphModule) -> int:
    """Tell AOTAutograd the strides of the graph's outputs that a region returns channels-last
    or that save_weights_channels_last made (None for the others: as traced). Returns how many."""
    context = torch._guards.TracingContext.try_get()
    strides, count = [], 0
    for node in _graph_outputs(fused):
        if is_input_view(node) and node.target is aten.permute.default and _region_output(node.args[0]):
            strides.append(node.meta["val"].stride())  # a saved weight's channels-last view
            count += 1
            continue
        where = _region_output(node)
        region = getattr(fused, where[0].target, None) if where is not None else None
        if where is not None and where[1] in getattr(region, "channels_last_outputs", ()):  # a CompiledRegion's
            shape = region.expected_outputs[where[1]].meta["val"].shape
            strides.append(torch.empty(shape, device="meta", memory_format=torch.channels_last).stride())
            count += 1
        else:
            strides.append(None)
    if count and context is not None and context.output_strides is not None and not context.output_strides:
        context.output_strides.extend(strides)
    return count


def restride_inputs(gm: fx.GraphModule, example_inputs) -> None:
    """A backward graph's placeholders given the strides of its example inputs, where
    AOTAutograd restrided those (report_output_strides) and left the graph's metadata as traced."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, example in zip(placeholders, example_inputs):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and isinstance(example, torch.Tensor) and val.shape == example.shape \
                and val.stride() != example.stride():
            node.meta["val"] = example
