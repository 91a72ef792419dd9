"""Inference freezing, opt-in (`options={"freeze": True}`, inductor's `freezing`).

An inference graph's module parameters and buffers become constants of the compiled graph,
read once when it compiles:
- a convolution followed by an inference batch norm is folded into one convolution (its weight
  scaled per output channel, its bias shifted): the batch norm's pass over the activation is gone;
- every op computed from constants alone (a weight's cast under autocast, the `mul(bias, 1)` of
  addmm's decomposition, a `var_mean` of a weight) runs once, at compile time. A batch norm with
  no convolution before it stays one op over its activation (its own import rule).

The constants are passed to the compiled code as inputs bound when it compiles, ahead of the
graph's own inputs, so a parameter nothing folded is the module's tensor itself (no copy), and
a folded one is a new tensor held by the compiled graph.

What freezing changes for the user: the weights are the ones the module had when the graph
compiled. A change to a parameter or buffer in place afterwards (`p.data.mul_(2)`,
`load_state_dict`) is not seen by the frozen graph: Dynamo does not recompile for it (it guards
neither a parameter's values nor, for modules it inlines, its identity). Call
`torch._dynamo.reset()` and compile again after changing weights. A call that brings other
tensors (a parameter replaced by a new one, a function compiled once and called with another
model) is caught by an identity test per frozen input and runs the unfrozen graph eagerly, as a
run-time fallback in stats(). Training graphs (grad mode on, parameters requiring grad) are never
frozen.

Which inputs are parameters or buffers is read off Dynamo's graph: a placeholder whose source is
a module's `_parameters` or `_buffers` entry (an inlined built-in or user module). AOTAutograd's
inference graph takes Dynamo's inputs in the same order (inference_path.py checks the inputs are
plain), and its metadata says which inputs the graph mutates or returns an alias of: those stay
inputs.
"""

from __future__ import annotations

import copy
import logging
import operator
from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch._functorch._aot_autograd.schemas import MutationType
from torch._subclasses.fake_tensor import unset_fake_temporarily

log = logging.getLogger("dynamo_mlir")

aten = torch.ops.aten

_CONSTANT_PREFIX = "_frozen_"


def module_state_inputs(gm: fx.GraphModule) -> list[int]:
    """Positions of Dynamo graph gm's inputs that are a module's parameters or buffers: the
    placeholders whose source is a `_parameters[...]` or `_buffers[...]` entry of a module Dynamo
    inlined (built-in or the user's)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, node in enumerate(placeholders) if _is_module_state(getattr(node.meta.get("grapharg"), "source", None))]


def _is_module_state(source) -> bool:
    if source is None or not source.guard_source.is_unspecialized_nn_module():
        return False
    return "._parameters[" in source.name or "._buffers[" in source.name


@dataclass
class FreezeReport:
    """What freezing did to one graph (GraphReport.frozen)."""

    inputs: int = 0                                  # parameters and buffers made constants
    kept: dict[str, int] = field(default_factory=dict)  # why some stayed inputs -> how many
    folds: Counter = field(default_factory=Counter)  # "convolution + batch norm", "constant ops" -> count


# Why a call of a frozen graph ran its unfrozen graph eagerly (stats' runtime_fallbacks).
OTHER_WEIGHTS = ("called with other parameter or buffer tensors than the ones it froze (a module's "
                 "parameter replaced, or a function compiled once taking several models): run eagerly "
                 "with the call's tensors; torch._dynamo.reset() and compile again to freeze those")


@dataclass
class Frozen:
    """A graph with its frozen inputs replaced: `graph` takes `constants` then the kept inputs."""

    graph: fx.GraphModule
    example_inputs: list
    constants: list[torch.Tensor]
    kept: list[int]  # positions of the original inputs the graph still takes
    report: FreezeReport
    unfrozen: fx.GraphModule  # the graph as it was, for calls with other weights
    frozen_from: tuple  # (position, the tensor it froze) of each frozen input

    def bind(self, fn, other_weights):
        """fn (compiled `graph`) as a function of the original graph's inputs. Dynamo guards
        neither a parameter's identity nor its values (for modules it inlines), so a call may
        bring other tensors where the graph froze some: checked per call (an identity test per
        frozen input), such a call runs the unfrozen graph eagerly, and `other_weights()` says so."""
        constants, unfrozen = tuple(self.constants), self.unfrozen
        frozen_args, kept_args = _picker([i for i, _ in self.frozen_from]), _picker(self.kept)
        originals = tuple(t for _, t in self.frozen_from)

        def call(*args):
            if all(map(operator.is_, frozen_args(args), originals)):  # 267 inputs (ResNet-50): 7 us, a one-off timeit here
                return fn(*constants, *kept_args(args))
            other_weights()
            return unfrozen(*args)

        return call


def _picker(positions: list[int]):
    """args -> the tuple of args at `positions` (operator.itemgetter, which returns a bare item
    for one position)."""
    if len(positions) == 1:
        only = positions[0]
        return lambda args: (args[only],)
    return operator.itemgetter(*positions) if positions else (lambda args: ())


def freeze_inference(gm: fx.GraphModule, example_inputs: list, dynamo_inputs: list,
                     dynamo_positions: list[int]) -> Frozen | None:
    """freeze() for the inference graph AOTAutograd made of a Dynamo graph with inputs
    `dynamo_inputs` (real tensors), of which `dynamo_positions` are module state. AOTAutograd
    puts the parameters of a module it was handed (none, for the modules Dynamo inlines) ahead
    of Dynamo's inputs."""
    context = torch._guards.TracingContext.try_get()
    params = list(getattr(context, "params_flat", None) or [])
    real = params + list(dynamo_inputs)
    if len(real) != sum(1 for n in gm.graph.nodes if n.op == "placeholder"):
        return None  # inputs flattened or unwrapped (a tensor subclass): not Dynamo's one for one
    positions = list(range(len(params))) + [len(params) + i for i in dynamo_positions]
    return freeze(gm, example_inputs, real, positions)


def freeze(gm: fx.GraphModule, example_inputs: list, real_inputs: list, positions: list[int]) -> Frozen | None:
    """Freeze AOTAutograd inference graph gm (inputs `example_inputs`, fake) at its input
    `positions`, whose values are `real_inputs[i]`. None when nothing is frozen."""
    report = FreezeReport()
    positions = _freezable(positions, report)
    if not positions:
        return None
    unfrozen = fx.GraphModule(gm, copy.deepcopy(gm.graph))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values: dict[fx.Node, object] = {}
    for i in positions:
        const = _constant_node(gm.graph, placeholders[i], real_inputs[i], values)
        placeholders[i].replace_all_uses_with(const)
        gm.graph.erase_node(placeholders[i])
    report.inputs = len(positions)
    with unset_fake_temporarily(), torch.no_grad():
        _propagate(gm.graph, values)
        report.folds["convolution + batch norm"] = fold_conv_batch_norm(gm.graph, values)
        _propagate(gm.graph, values)
        _materialize(gm.graph, values)
    computed = [n for n in values if n.op == "call_function"]
    gm.graph.eliminate_dead_code()  # what the constants replaced, and the folded batch norms
    alive = set(gm.graph.nodes)
    report.folds["constant ops"] = sum(1 for n in computed if n not in alive)
    constants = _lift(gm.graph, values)
    fake_mode = torch._guards.detect_fake_mode(example_inputs)
    fakes = [fake_mode.from_tensor(c, static_shapes=True) if fake_mode else c for c in constants]
    for node, fake in zip(gm.graph.nodes, fakes):  # the lifted placeholders come first
        node.meta["val"] = fake
    gm.recompile()
    frozen = set(positions)
    kept = [i for i in range(len(placeholders)) if i not in frozen]
    return Frozen(gm, fakes + [example_inputs[i] for i in kept], constants, kept, report, unfrozen,
                  tuple((i, real_inputs[i]) for i in positions))


def _freezable(positions: list[int], report: FreezeReport) -> list[int]:
    """positions less the inputs the graph mutates or returns an alias of (AOTAutograd's metadata)."""
    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None:
        report.kept["no AOTAutograd metadata"] = len(positions)
        return []
    mutated = {i for i, info in enumerate(meta.input_info) if info.mutation_type != MutationType.NOT_MUTATED}
    aliased = {o.base_idx for o in meta.output_info if o.base_idx is not None}
    for why, taken in (("mutated by the graph", mutated), ("returned or aliased by an output", aliased)):
        n = sum(1 for i in positions if i in taken)
        if n:
            report.kept[why] = n
    return [i for i in positions if i not in mutated and i not in aliased]


def _foldable(node: fx.Node) -> bool:
    """Whether node may run at compile time when its inputs are constants: an ATen op with no
    side effect and no randomness, or an item of one's results."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    return not node.target._schema.is_mutable and torch.Tag.nondeterministic_seeded not in node.target.tags


def _is_view(node: fx.Node) -> bool:
    """An op whose result aliases its input (a reshape, transpose, expand): never made a
    constant of its own, since the compiled code reads views of its inputs in place."""
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    returns = node.target._schema.returns
    return bool(returns) and returns[0].alias_info is not None


def _stored(value) -> int:
    """Elements of the memory under a constant (a view: its base's; a tuple: its tensors')."""
    if isinstance(value, (tuple, list)):
        return sum(_stored(v) for v in value)
    if not isinstance(value, torch.Tensor):
        return 0
    return value.untyped_storage().nbytes() // max(value.element_size(), 1)


def _propagate(graph: fx.Graph, values: dict) -> None:
    """Compute every node whose inputs are all constants (in `values`), into `values`. An op with
    no constant input (a constructor: full, arange) is left to the compiled code, and so is one
    whose result outgrows the memory of its inputs (repeat, or an add over an expanded bias):
    as a constant it would only cost memory and reads."""
    for node in graph.nodes:
        if node in values or not _foldable(node):
            continue
        inputs = node.all_input_nodes
        if not inputs or not all(n in values for n in inputs):
            continue
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: values[n])
        try:
            result = node.target(*args, **kwargs)
        except Exception as e:  # noqa: BLE001  an op that cannot run here runs in the compiled code
            log.debug("dynamo-mlir: freezing: %s not run at compile time: %s", node.format_node(), e)
            continue
        grows = isinstance(result, torch.Tensor) and not _is_view(node) \
            and result.numel() > sum(_stored(values[n]) for n in inputs)
        if not grows:
            values[node] = result


def _materialize(graph: fx.Graph, values: dict) -> None:
    """Replace each computed node that a node computed at run time uses by a constant; a view
    stays in the graph over its input's constant."""
    needed = [n for n in values if n.op != "get_attr" and any(u not in values for u in n.users)]
    done = set()
    while needed:
        node = needed.pop()
        if node.op == "get_attr" or node in done:
            continue
        done.add(node)
        value = values[node]
        if _is_view(node) or not isinstance(value, torch.Tensor):
            needed.extend(n for n in node.all_input_nodes if n.op != "get_attr")
            continue
        node.replace_all_uses_with(_constant_node(graph, node, value.contiguous(), values))


def _constant_node(graph: fx.Graph, before: fx.Node, value: torch.Tensor, values: dict) -> fx.Node:
    """A get_attr of `value`, held by the graph's module until _lift makes it an input."""
    name = f"{_CONSTANT_PREFIX}{len(values)}"
    graph.owning_module.register_buffer(name, value, persistent=False)
    with graph.inserting_before(before):
        const = graph.get_attr(name)
    const.meta = {"val": value}
    values[const] = value
    return const


def fold_conv_batch_norm(graph: fx.Graph, values: dict) -> int:
    """convolution(x, W, b) then _native_batch_norm_legit_no_training(·, gamma, beta, mean, var,
    momentum, eps), every parameter a constant and the batch norm the convolution's only user:
    one convolution with weight W * s and bias (b - mean) * s + beta, s = gamma / sqrt(var + eps)
    per output channel. Computed in float64, stored in W's dtype. Returns how many were folded."""
    folded = 0
    for bn in list(graph.nodes):
        if bn.target is not aten._native_batch_norm_legit_no_training.default or not _foldable_conv(bn, values):
            continue
        conv = bn.args[0]
        weight = values[conv.args[1]]
        bias, gamma, beta, mean, var = (values[a].double() if a is not None else None
                                        for a in (conv.args[2], *bn.args[1:5]))
        scale = torch.rsqrt(var + bn.args[6]) * (gamma if gamma is not None else 1.0)
        shift = ((bias if bias is not None else 0.0) - mean) * scale + (beta if beta is not None else 0.0)
        out_channels = (-1,) + (1,) * (weight.dim() - 1)
        new_weight = (weight.double() * scale.reshape(out_channels)).to(weight.dtype).contiguous()
        bias_dtype = values[conv.args[2]].dtype if conv.args[2] is not None else weight.dtype
        args = list(conv.args)
        args[1] = _constant_node(graph, conv, new_weight, values)
        args[2] = _constant_node(graph, conv, shift.to(bias_dtype), values)
        conv.args = tuple(args)
        normalized = next((u for u in bn.users if u.args[1] == 0), None)
        if normalized is not None:
            normalized.replace_all_uses_with(conv)
        folded += 1
    return folded


def _foldable_conv(bn: fx.Node, values: dict) -> bool:
    """Whether bn normalizes a non-transposed convolution used by it alone, with constant
    parameters, and nothing reads its saved statistics (outputs 1 and 2)."""
    conv = bn.args[0]
    if not isinstance(conv, fx.Node) or conv.target is not aten.convolution.default:
        return False
    if len(conv.args) != 9 or len(bn.args) != 7 or conv.kwargs or bn.kwargs:  # every argument positional
        return False
    if len(conv.users) != 1 or conv.args[6]:  # transposed: its output channels are dim 1, per group
        return False
    params = (conv.args[1], conv.args[2], *bn.args[1:5])
    if any(p is not None and p not in values for p in params) or bn.args[3] is None or bn.args[4] is None:
        return False
    return all(u.target is operator.getitem and (u.args[1] == 0 or not u.users) for u in bn.users)


def _lift(graph: fx.Graph, values: dict) -> list[torch.Tensor]:
    """Every constant left in the graph becomes a placeholder ahead of the graph's own; returns
    their values in that order."""
    constants = [n for n in graph.nodes if n.op == "get_attr" and n.target.startswith(_CONSTANT_PREFIX)]
    anchor = next(iter(graph.nodes))
    lifted = []
    for k, node in enumerate(constants):
        with graph.inserting_before(anchor):
            lifted.append(graph.placeholder(f"frozen_{k}"))
    for node, placeholder in zip(constants, lifted):
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
    for name in [k for k in graph.owning_module._buffers if k.startswith(_CONSTANT_PREFIX)]:
        delattr(graph.owning_module, name)
    return [values[n] for n in constants]
