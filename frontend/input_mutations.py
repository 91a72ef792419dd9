"""Inputs an inference graph mutates, written back by the graph itself, all in one call.

An optimizer step (torch.optim under Dynamo) is an inference graph that updates every parameter
and every state tensor in place. AOTAutograd functionalizes it: the graph computes the new
values, and its runtime wrapper then copies each into its input, one `copy_` per tensor from
Python (AdamW: parameter, exp_avg, exp_avg_sq and step for each of GPT-2's 28 parameters, 112
copy_ a step, ~10 us of host time each on CUDA; benchmarks/profile_training_step.py on an H100
counted 447 aten::copy_ in 3 steps before, 111 after; on CPU torch's multi-tensor copy still
copies one by one, inside one call). With `keep_inference_input_mutations` (backend.py) the
copies stay in the graph instead, as trailing `aten.copy_(input, new value)` nodes.

Here those nodes are taken out before partitioning (the new values become extra graph outputs, so
the regions that compute them return them), and after the regions torch's multi-tensor copy
replaces them, one call per (device, dtype) group chosen at compile time: a few kernel launches
instead of a launch per tensor. The copies are AOTAutograd's bookkeeping, not the program's ops:
like getitem they count neither as compiled nor as eager.

Only copies that come after every other read of their input are taken (AOTAutograd emits them
last); a graph with any other kind stays as it is (an in-place copy_ then runs eagerly, still correct).

On a target with the `written_inputs` capability, `in_place_writes` picks the writes a region can
do itself (the new value is its output, the input only it reads): it computes the value into the
input (codegen/written_inputs.py), and those writes are left out of the copy.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

_COPY = torch.ops.aten.copy_.default


def take_input_writes(graph: fx.GraphModule) -> list[tuple[fx.Node, fx.Node]]:
    """Remove the trailing copy_(placeholder, value) nodes; append each value to the graph's
    outputs (after the existing ones). Returns (placeholder, value) in the graph's order."""
    nodes = list(graph.graph.nodes)
    position = {n: i for i, n in enumerate(nodes)}
    copies = [n for n in nodes if n.op == "call_function" and n.target is _COPY]
    if not copies or not all(_is_last_write(c, position) for c in copies):
        return []
    writes = [(c.args[0], c.args[1]) for c in copies]
    destinations = {dest for dest, _ in writes}
    if any(_reads_storage_of(value, destinations) for _, value in writes):
        return []  # one copy's source is another's destination: only copies in order are right
    for c in copies:
        c.replace_all_uses_with(c.args[0])
        graph.graph.erase_node(c)
    output = next(n for n in reversed(nodes) if n.op == "output")
    output.args = (tuple(output.args[0]) + tuple(value for _, value in writes),)
    graph.recompile()
    return writes


def _is_last_write(copy: fx.Node, position: dict) -> bool:
    """copy_(input, value) after which nothing reads that input (or the copy's result, which is
    the input) but the graph's output: an in-place op's result, returned after the write-back."""
    dest = copy.args[0]
    if any(user.op != "output" for user in copy.users) or copy.kwargs or len(copy.args) != 2 \
            or dest.op != "placeholder":
        return False
    return all(position[user] <= position[copy] or user.op == "output" for user in dest.users)


def _reads_storage_of(value: fx.Node, placeholders: set[fx.Node]) -> bool:
    """Whether `value` is one of `placeholders` or a view of one (through ops whose result
    aliases their first argument): the multi-tensor copy reads all sources while it writes all
    destinations, so a source sharing a destination's memory would race (AOTAutograd's copies
    run one after the other)."""
    while True:
        if value in placeholders:
            return True
        schema = getattr(value.target, "_schema", None) if value.op == "call_function" else None
        if schema is None or not schema.returns or schema.returns[0].alias_info is None \
                or not value.args or not isinstance(value.args[0], fx.Node):
            return False
        value = value.args[0]


def in_place_writes(fused: fx.GraphModule, region: fx.Node, writes: list[tuple[fx.Node, fx.Node]]) -> dict:
    """{write index: (region output, region input)} for the writes `region` (a call_module node
    of the partitioned graph) can do itself, computing the new value into the input (a target
    with the `written_inputs` capability): the value is that region's output and only the
    write-back reads it; the input is that region's argument and nothing but the region reads
    it (no other region or eager op would see the new value too early; the graph's output may
    return the input, which then holds the new value as after the copy)."""
    if not writes:
        return {}
    output = next(n for n in reversed(fused.graph.nodes) if n.op == "output")
    results = list(output.args[0])
    placeholders = {n.name: n for n in fused.graph.nodes if n.op == "placeholder"}
    found = {}
    for w, ((dest, _), value) in enumerate(zip(writes, results[-len(writes):])):
        k = _output_index(value, region)
        dest = placeholders.get(dest.name)
        if k is None or dest is None or dest not in region.args or set(dest.users) - {region, output} \
                or set(value.users) != {output} or results.count(value) != 1:
            continue
        found[w] = (k, region.args.index(dest))
    return found


def _output_index(value: fx.Node, region: fx.Node) -> int | None:
    if value is region:
        return 0
    if value.op == "call_function" and value.target is operator.getitem and value.args[0] is region:
        return value.args[1]
    return None


def add_write_back(fused: fx.GraphModule, writes: list[tuple[fx.Node, fx.Node]], done: frozenset = frozenset()) -> None:
    """In the partitioned graph: drop the extra outputs take_input_writes added, and write them
    into their inputs just before the output: one multi-tensor copy per (device, dtype) group,
    grouped here from the nodes' metadata, so a call does no sorting of its own. `done`: the
    indices of the writes a region did itself (in_place_writes), not copied again."""
    if not writes:
        return
    placeholders = {n.name: n for n in fused.graph.nodes if n.op == "placeholder"}
    output = next(n for n in reversed(fused.graph.nodes) if n.op == "output")
    results = list(output.args[0])
    kept, values = results[:-len(writes)], results[-len(writes):]
    groups: dict[object, tuple[list, list]] = {}
    for k, ((dest, value), new) in enumerate(zip(writes, values)):
        if k in done:
            continue
        mine, theirs = groups.setdefault(_group_of(dest, value, k), ([], []))
        mine.append(placeholders[dest.name])
        theirs.append(new)
    with fused.graph.inserting_before(output):
        for mine, theirs in groups.values():
            # torch's multi-tensor copy: a few kernel launches for a group (its slow path copies
            # one by one where shapes or strides differ)
            fused.graph.call_function(torch._foreach_copy_, (mine, theirs))
    output.args = (tuple(kept),)
    fused.recompile()


def _group_of(dest: fx.Node, value: fx.Node, position: int):
    """(device, dtype) of both sides, from the traced metadata; a write without it alone."""
    vals = [n.meta.get("val") for n in (dest, value)]
    if not all(isinstance(v, torch.Tensor) for v in vals):
        return position
    return tuple((v.device, v.dtype) for v in vals)
