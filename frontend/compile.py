"""Compile one ATen graph: partition, import each region, run the target's stages, load.

The result is the partitioned GraphModule itself: compiled regions are modules that call the
JIT-compiled code; unsupported nodes stay as ordinary eager ATen calls between them.
"""

import itertools
import operator
import logging
import time
from dataclasses import dataclass

import torch
import torch.fx as fx
from torch_mlir import ir

from ..codegen import cache, config, driver
from ..codegen.config import Options
from ..codegen.passes import CompileError
from ..codegen.signature import Signature
from ..codegen.target import Target, get_target, library_nodes, target_for_device
from .importer import import_graph, plan_is_identity
from .input_mutations import add_write_back, in_place_writes, take_input_writes
from .input_views import is_input_view, split_output_views, unpermute_inputs
from .output_layouts import keep_output_layouts, user_outputs
from .partition import partition
from .saved_layouts import (free_outputs, report_output_strides, restride_inputs, save_weights_channels_last,
                            saved_outputs)
from .region_sizes import is_host_size_node, route_sizes
from .registry import Unsupported
from .seeding import is_seed_node, seed_random_ops
from .sizes import specialize_settled_sizes
from .stats import REGISTRY, GraphReport, PartitionReport, op_name
from .storage_views import rebase_as_strided

log = logging.getLogger("dynamo_mlir")

_graph_ids = itertools.count()


@dataclass(frozen=True)
class RegionRecipe:
    """What loads a cached region's code again with no stage run: its compile cache entry, the
    signature its code was compiled for, and how its results become the region's outputs."""

    key: str
    signature: Signature
    output_plan: tuple[tuple[str, int], ...]

    def load(self, artifact, target: Target, options: Options):
        """The region's callable from its cached artifact (build_region's last step)."""
        fn = target.load(artifact, self.signature, options)
        nhwc = getattr(fn, "nhwc_results", ())  # results the code writes channels-last (a cpu function's)
        if not plan_is_identity(self.output_plan):
            fn = _planned(fn, self.output_plan)
        if nhwc:
            fn.channels_last_outputs = frozenset(i for i, (kind, k) in enumerate(self.output_plan)
                                                 if kind in ("result", "copy_result") and k in nhwc)
        return fn


# The host size arithmetic (region_sizes.HOST_SIZE_TARGETS) a direct call evaluates before its
# region, by name: a DirectRecipe is kept in the graph cache. Dynamo passes sizes as Python ints.
_SIZE_STEPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
    "mod": operator.mod, "neg": operator.neg, "sym_max": max, "sym_min": min,
    "sym_size": lambda x, d: x.size(d), "sym_numel": lambda x: x.numel(), "sym_stride": lambda x, d: x.stride(d),
}
_SIZE_STEP_NAMES = {
    operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.floordiv: "floordiv",
    operator.mod: "mod", operator.neg: "neg", torch.sym_max: "sym_max", torch.sym_min: "sym_min",
    torch.ops.aten.sym_size.int: "sym_size", torch.ops.aten.sym_numel.default: "sym_numel",
    torch.ops.aten.sym_stride.int: "sym_stride",
}


@dataclass(frozen=True)
class DirectRecipe:
    """How a graph that is one compiled region fed by its inputs calls it (direct_call)."""

    order: tuple[int, ...] | None  # the region's inputs among the graph's values; None: the inputs as they come
    picks: tuple[int, ...]         # the graph's outputs among the region's
    every_output: bool             # picks is every output in order
    copied: tuple[int, ...]        # the region's inputs that go in as .contiguous() copies
    # Sizes computed from the graph's inputs before the call (`s0 + 1`, a tensor's size): each
    # (_SIZE_STEPS name, its arguments as (True, a value's index) or (False, a constant)), its
    # result the next value after the graph's inputs and the steps before it.
    steps: tuple[tuple[str, tuple[tuple[bool, object], ...]], ...] = ()

    def region_inputs(self):
        """args -> the region's inputs: the graph's inputs picked (by order), after the steps."""
        order, steps = self.order, [(_SIZE_STEPS[name], refs) for name, refs in self.steps]
        if order is None:
            return list
        if not steps:
            return lambda args: _picked(args, order)

        def computed(args):
            values = list(args)
            for fn, refs in steps:
                values.append(fn(*[values[x] if is_value else x for is_value, x in refs]))
            return _picked(values, order)
        return computed

    def bind(self, fn):
        """fn (the region's callable) as the graph's function."""
        if self.order is None and not self.copied:
            picks, every_output = list(self.picks), self.every_output

            def call(*args):
                out = fn(*args)
                return out if every_output else _picked(out, picks)
        else:
            region_inputs, on_inputs = self.region_inputs(), self.on_region_inputs(fn)

            def call(*args):
                return on_inputs(region_inputs(args))
        call.recipe = self
        return call

    def on_region_inputs(self, fn):
        """fn called on the region's inputs (a list it may change), returning the graph's outputs."""
        picks, every_output, copied = list(self.picks), self.every_output, self.copied

        def call(args: list):
            for k in copied:
                if isinstance(args[k], torch.Tensor):
                    args[k] = args[k].contiguous()
            out = fn(*args)
            return out if every_output else _picked(out, picks)
        return call


class CompiledRegion(torch.nn.Module):
    """Stands in for a fused submodule: contiguous inputs in, target outputs out.

    The compiled code assumes the dtypes (and static shapes) the graph's metadata promised. An
    eager op whose fake-tensor metadata disagrees with what it really returns (torch's
    prims.signbit says f32, returns bool) would make it read the wrong bytes: such a call runs
    the region's original eager submodule instead, and is counted as a run-time fallback
    (stats()["runtime_fallbacks"]). So does a call whose `?` sizes exceed a limit the region
    was compiled with (a scan over a `?` dim: ImportContext.limit_size)."""

    def __init__(self, fn, returns_tuple: bool, name: str, eager: fx.GraphModule):
        super().__init__()
        self.fn, self.returns_tuple, self.region, self.eager = fn, returns_tuple, name, eager
        self.size_check = getattr(fn, "size_check", None)  # sizes beyond what the code was made for
        # (output, input): outputs the code computes into inputs (import_graph's written_inputs)
        self.written_inputs = tuple(getattr(fn, "written_inputs", ()))
        # outputs returned as NCHW tensors with channels-last strides (saved_layouts.py)
        self.channels_last_outputs = frozenset(getattr(fn, "channels_last_outputs", ()))
        self.expected = [_expected_input(n) for n in eager.graph.nodes if n.op == "placeholder"]
        output = next(n for n in eager.graph.nodes if n.op == "output").args[0]
        self.expected_outputs = list(output) if isinstance(output, (tuple, list)) else [output]

    def forward(self, *inputs):
        mismatch = self._mismatch(inputs)
        if mismatch is not None:
            REGISTRY.runtime_fallback(self.region, mismatch)
            out = self.eager(*inputs)
            if not self.written_inputs:
                return out
            outputs = list(out) if self.returns_tuple else [out]
            self._write(inputs, None, outputs)
            return tuple(outputs) if self.returns_tuple else outputs[0]
        return self.run_compiled(inputs)

    def run_compiled(self, inputs):
        """The compiled code on `inputs` (made contiguous), without forward's check of their
        metadata: for callers whose inputs the guards hold to it (direct_call)."""
        args = [t.contiguous() if isinstance(t, torch.Tensor) else t for t in inputs]
        outputs = self.fn(*args)
        if self.written_inputs:
            outputs = list(outputs)
            self._write(inputs, args, outputs)
        return tuple(outputs) if self.returns_tuple else outputs[0]

    def _write(self, inputs, args, outputs: list) -> None:
        """The outputs meant to be computed into inputs, in the caller's tensors: copied there
        where the eager submodule returned them (args None) or the code wrote a contiguous copy
        of the input."""
        for k, i in self.written_inputs:
            source = outputs[k] if args is None else args[i]
            if source is not inputs[i]:
                inputs[i].copy_(source)
                outputs[k] = inputs[i]

    def _mismatch(self, inputs) -> str | None:
        """Why these inputs cannot go to the compiled code, or None if they can."""
        for i, (t, (dtype, shape)) in enumerate(zip(inputs, self.expected)):
            if dtype is not None and (t.dtype is not dtype or (shape is not None and t.shape != shape)):
                promised = f"{dtype} {tuple(shape)}" if shape is not None else str(dtype)
                return f"input {i} is {t.dtype} {tuple(t.shape)} where the graph promised {promised}"
        return None if self.size_check is None else self.size_check(inputs)


def _expected_input(node: fx.Node):
    """(dtype, static shape or None) a region input must have; (None, None) for non-tensors."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None, None
    static = all(isinstance(s, int) for s in val.shape)
    return val.dtype, (torch.Size(val.shape) if static else None)


def graph_devices(gm: fx.GraphModule, example_inputs) -> set[str]:
    """Device types of the inputs and of every tensor the graph makes: a graph without inputs
    (torch.ones(..., device="cuda")) says where it runs only through its nodes' values."""
    values = list(example_inputs)
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        values.extend(val if isinstance(val, (tuple, list)) else [val])
    return {v.device.type for v in values if isinstance(v, torch.Tensor)}


def choose_target(gm: fx.GraphModule, example_inputs, options: Options) -> Target:
    """The `target` option, else the target serving the graph's device: an accelerator's when
    the graph has one (host scalars and size tensors ride along on the cpu), else the cpu's.
    Raises NoTargetForDevice when nothing serves it (the backend then runs the graph eagerly)."""
    if options.target:
        return get_target(options.target)
    devices = graph_devices(gm, example_inputs)
    return target_for_device(min(devices - {"cpu"}, default="cpu"))


def new_graph_name(kind: str) -> str:
    return f"g{next(_graph_ids)}_{kind}"


def compile_graph(gm: fx.GraphModule, example_inputs, kind: str, options: Options,
                  graph_name: str | None = None) -> fx.GraphModule:
    t0 = time.perf_counter()
    specialize_settled_sizes(gm)
    target = choose_target(gm, example_inputs, options)
    options = config.bind(options, target)  # the target's own options: an error here is the user's
    name = graph_name or new_graph_name(kind)
    report = GraphReport(name, kind, target.name)
    if options.dump_dir:
        driver.write_dump(options.dump_dir, name, "aten", "txt", gm.print_readable(print_output=False))
    # A graph on one device compiles for the chosen target (an explicit target="cuda" on CPU
    # tensors still dumps PTX); in a graph mixing devices, nodes off the target's device stay eager.
    mixed = len(graph_devices(gm, example_inputs)) > 1
    graph = rebase_as_strided(seed_random_ops(gm))
    writes = take_input_writes(graph)
    written = frozenset(dest for dest, _ in writes)
    saved = saved_outputs(kind, graph) if "channels_last_results" in target.capabilities else frozenset()
    if kind == "forward":  # views of inputs it saves for the backward (input_views.py)
        split_output_views(graph, written, trailing=len(writes))
        if saved:  # (a target that returns results channels-last: the cpu's options)
            save_weights_channels_last(graph, saved, written, options.target_options)
    elif kind == "backward":  # the saved views, permuted inputs (channels-last ones: saved_layouts.py)
        restride_inputs(graph, example_inputs)
        unpermute_inputs(graph, written)
    positions = user_outputs() if kind in ("forward", "inference") else None
    if positions:  # results eager returns permuted (channels-last, transposed): output_layouts.py
        report.outputs_in_eager_layout = keep_output_layouts(graph, positions)
    fused, oracle = partition(graph, target, target.device_type if mixed else None)
    in_place = "written_inputs" in target.capabilities
    done = set()  # writes a region does itself (in_place_writes)
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and node.target.startswith("fused_"):
            route_sizes(fused, node)
            mine = in_place_writes(fused, node, writes) if in_place else {}
            part = _compile_region(fused, node, target, options, f"{name}_{node.target}",
                                   {k: j for k, j in mine.values()}, free_outputs(fused, node, saved))
            report.partitions.append(part)
            taken = set(getattr(getattr(fused, node.target), "written_inputs", ()))
            done |= {w for w, kj in mine.items() if kj in taken}
    for node in fused.graph.nodes:
        if node.op == "call_function" and not is_plumbing(node) and not is_host_size_node(node) \
                and not is_seed_node(node) and not is_input_view(node):
            verdict = oracle.verdicts.get(node.name)
            report.fallbacks.append((op_name(node.target), verdict.reason if verdict else "not considered"))
    for p in report.partitions:
        if not p.compiled:
            report.fallbacks.extend((op, f"partition failed to compile: {p.error}") for op in p.ops)
    add_write_back(fused, writes, frozenset(done))
    if saved:
        report.saved_channels_last = report_output_strides(fused)
    report.inputs_written_back, report.inputs_written_in_place = len(writes) - len(done), len(done)
    fused.recompile()
    report.compile_seconds = time.perf_counter() - t0
    REGISTRY.add(report)
    fused.meta["dynamo_mlir_report"] = report
    return fused


def direct_call(fused: fx.GraphModule, guarded_inputs: bool):
    """The graph as a plain function when it is one compiled region fed by the graph's inputs (in
    any order: the usual case): the call then skips the GraphModule's generated forward and two
    nn.Module dispatches (7 of the 107 Python calls one call of a one-op graph made), and, when
    Dynamo's guards hold the graph's inputs to the dtypes and static shapes compiled for
    (`guarded_inputs`: a forward or inference graph), CompiledRegion's check of the promised
    metadata. A backward graph's inputs include tensors saved by eager ops, whose metadata may
    lie (see CompiledRegion): it keeps the check. A region computing into its inputs (an
    optimizer step) qualifies when every input comes contiguous: it then writes the caller's
    tensors themselves. None otherwise."""
    nodes = list(fused.graph.nodes)
    inputs = [n for n in nodes if n.op == "placeholder"]
    calls = [n for n in nodes if n.op not in ("placeholder", "output")]
    if any(is_input_view(n) for n in calls):
        return _with_input_views(fused, guarded_inputs)
    values = {n: i for i, n in enumerate(inputs)}  # the graph's inputs, then the sizes computed from them
    steps = []
    while calls and is_host_size_node(calls[0]) and calls[0].target in _SIZE_STEP_NAMES and not calls[0].kwargs:
        size = calls.pop(0)
        refs = tuple(_size_step_ref(a, values) for a in size.args)
        if None in refs:
            return None
        steps.append((_SIZE_STEP_NAMES[size.target], refs))
        values[size] = len(values)
    head = calls[0] if calls else None
    region = getattr(fused, head.target, None) if head is not None and head.op == "call_module" else None
    if not isinstance(region, CompiledRegion) or head.kwargs or not all(a in values for a in head.args):
        return None
    order = [values[a] for a in head.args]
    if order == list(range(len(inputs))) and not steps:
        order = None  # the graph's inputs as they come
    if any(not (is_plumbing(n) and n.args[0] is head) for n in calls[1:]):
        return None
    result = next(n for n in nodes if n.op == "output").args[0]
    if not isinstance(result, (tuple, list)) or not all(isinstance(r, fx.Node) and r in calls for r in result):
        return None
    picks = [r.args[1] if r is not head else 0 for r in result]
    if head in result and region.returns_tuple:
        return None
    every_output = picks == list(range(len(region.expected_outputs)))
    # Dynamo's guards hold a static input's sizes and strides (a transposed or sliced input
    # recompiles): inputs compiled contiguous come contiguous, and a .contiguous() per input
    # would only add a torch call per input per call (benchmarks/dynamo_floor.py: a torch call
    # inside the compiled frame costs 2-3x what it costs outside). Only the others go through
    # one: with symbolic sizes, the input ids, not GPT-2's 150 parameters (27 us a call).
    value_nodes = list(values)
    copied = tuple(k for k, g in enumerate(order or range(len(inputs)))
                   if isinstance(value_nodes[g].meta.get("val"), torch.Tensor) and not _static_contiguous(value_nodes[g]))
    recipe = DirectRecipe(None if order is None else tuple(order), tuple(picks), every_output, copied, tuple(steps))
    region_inputs = recipe.region_inputs()

    def checked(*args):  # CompiledRegion.forward: its checks, its eager fallback
        out = region.forward(*region_inputs(args))
        return _picked(list(out) if region.returns_tuple else [out], picks)

    if not guarded_inputs:
        return checked
    if copied and region.written_inputs:  # CompiledRegion.forward writes back what went to a contiguous copy
        return None
    # (An input the code computes into comes contiguous, so the code wrote the caller's tensor,
    # and the output plan returns that tensor for its output: nothing is left to write back.)
    call = recipe.bind(region.fn)
    if region.size_check is None:
        return call
    # Dynamo's guards do not hold a region's size limits (a scan over a `?` dim): checked per call,
    # the inputs past one going to CompiledRegion.forward (which runs them eagerly). The rest of
    # its checks are the guards' (GPT-2's 150 parameters' dtypes and shapes: 0.1 ms a call).
    # No recipe: a graph loaded from the cache would be called without the check.
    size_check, on_inputs = region.size_check, recipe.on_region_inputs(region.fn)

    def size_checked(*args):
        inputs = region_inputs(args)
        if size_check(inputs) is not None:
            return checked(*args)
        return on_inputs(inputs)

    return size_checked


def _size_step_ref(arg, values: dict) -> tuple[bool, object] | None:
    """A size step's argument: (True, the index of a value computed before it), (False, a
    number), None for anything else."""
    if isinstance(arg, fx.Node):
        return (True, values[arg]) if arg in values else None
    return (False, arg) if isinstance(arg, (int, float, bool)) else None


def _with_input_views(fused: fx.GraphModule, guarded_inputs: bool):
    """direct_call for a training graph that is one compiled region plus views of its inputs
    (frontend/input_views.py: a forward hands the backward a transposed weight, a backward takes
    one back to its contiguous layout), and that may return inputs as they are. The views are
    torch calls made by the function itself; the region is called without the GraphModule's
    call and nn.Module dispatches around it, through CompiledRegion.forward (its check of the
    promised metadata, contiguous inputs) or, for a forward graph (`guarded_inputs`: the views'
    metadata follows from guarded inputs) of static sizes, run_compiled (contiguous inputs, no
    check; the checks of both graphs took 8 us of the MLP Adam loop's 46 us steps on this
    project's EPYC, a one-off timing). None where the graph is anything else."""
    nodes = list(fused.graph.nodes)
    env = {n: i for i, n in enumerate(n for n in nodes if n.op == "placeholder")}
    views, region_node = [], None
    for n in nodes:
        if n.op in ("placeholder", "output") or (region_node is not None and is_plumbing(n) and n.args[0] is region_node):
            continue
        if is_input_view(n) and n.op == "call_function" and not n.kwargs:
            nested = [a for a in n.args if not isinstance(a, fx.Node) and _has_node(a)]  # a size list of SymInts
            if nested or not all(a in env for a in n.args if isinstance(a, fx.Node)):
                return None
            views.append((n.target, tuple(("env", env[a]) if isinstance(a, fx.Node) else ("const", a) for a in n.args)))
            env[n] = len(env)
            continue
        if region_node is not None or n.op != "call_module" or n.kwargs \
                or not isinstance(getattr(fused, n.target, None), CompiledRegion):
            return None
        if not all(isinstance(a, fx.Node) and a in env for a in n.args):
            return None
        region_node = n
    if region_node is None:
        return None
    region = getattr(fused, region_node.target)
    outputs = []
    for r in next(n for n in nodes if n.op == "output").args[0]:
        if r is None:
            outputs.append(None)
        elif r in env:
            outputs.append(("env", env[r]))
        elif is_plumbing(r) and r.args[0] is region_node and region.returns_tuple:
            outputs.append(("out", r.args[1]))
        elif r is region_node and not region.returns_tuple:
            outputs.append(("out", 0))
        else:
            return None
    args = tuple(env[a] for a in region_node.args)

    run = region.run_compiled if guarded_inputs and region.size_check is None else lambda xs: region.forward(*xs)

    def call(*graph_inputs):
        values = list(graph_inputs)
        for target, spec in views:
            values.append(target(*[values[x] if kind == "env" else x for kind, x in spec]))
        out = run([values[i] for i in args])
        out = out if region.returns_tuple else (out,)
        return [None if o is None else (out[o[1]] if o[0] == "out" else values[o[1]]) for o in outputs]

    return call


def _has_node(arg) -> bool:
    found = []
    fx.node.map_arg(arg, found.append)
    return bool(found)


def _static_contiguous(node: fx.Node) -> bool:
    """A graph input Dynamo's guards keep contiguous: a non-tensor, or a tensor of static shape
    compiled contiguous."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return not isinstance(val, (torch.SymInt, torch.SymFloat))
    return all(isinstance(d, int) for d in val.shape) and val.is_contiguous()


def _picked(values, picks: list[int]) -> list:
    return [values[i] for i in picks]


def is_plumbing(node: fx.Node) -> bool:
    """getitem picks one output of a multi-output op or region: tuple unpacking, not an ATen op
    (counted neither as compiled nor as eager)."""
    return node.target is operator.getitem


def _compile_region(fused: fx.GraphModule, node: fx.Node, target: Target, options: Options,
                    name: str, written_inputs: dict[int, int], free: frozenset[int] = frozenset()) -> PartitionReport:
    sub = getattr(fused, node.target)
    output = next(n for n in sub.graph.nodes if n.op == "output")
    returns_tuple = isinstance(output.args[0], (tuple, list))
    ops = {n.name: op_name(n.target) for n in sub.graph.nodes if n.op == "call_function" and not is_plumbing(n)}
    report = PartitionReport(node.target, target.name, list(ops.values()), {})
    library: set[str] = set()
    try:
        fn = build_region(sub, target, options, name, report.stage_seconds, library=library,
                          pass_seconds=report.pass_seconds, report=report, written_inputs=written_inputs,
                          free_outputs=free)
    except Exception as e:  # never crash the user's model: run the region eagerly, say why
        if options.strict:
            raise
        log.warning("dynamo-mlir: %s: running region eagerly after a compile failure: %s", name, e)
        report.compiled, report.error = False, str(e).splitlines()[0]
        return report
    finally:  # known once the stages ran, even if loading failed (the CLI on a machine without the device)
        report.library_ops = [ops[n] for n in sorted(library) if n in ops]
    setattr(fused, node.target, CompiledRegion(fn, returns_tuple, name, sub))
    return report


def build_region(sub: fx.GraphModule, target: Target, options: Options, name: str,
                 stage_seconds: dict | None = None, keep_text: bool = False, library: set | None = None,
                 pass_seconds: dict | None = None, report: PartitionReport | None = None,
                 written_inputs: dict[int, int] | None = None, free_outputs: frozenset[int] = frozenset()):
    """Import `sub`, run every stage (or take the last stage's artifact from the compile cache),
    load it: returns the target's callable. `library` gets the names of the nodes of `sub` the
    artifact runs as library calls (Target: library_nodes); `report.cache` says where the
    artifact came from. `written_inputs` {output: input}: outputs to compute into those inputs
    (import_graph); the callable's `written_inputs` says which it does. `free_outputs`: outputs
    whose reader takes any strides (saved_layouts.py); the callable's `channels_last_outputs`
    says which it returns channels-last."""
    stage_seconds = {} if stage_seconds is None else stage_seconds
    imported = _import(sub, options, name, stage_seconds, written_inputs, free_outputs)
    cached = _RegionCache.open(imported.module, target, options, name, keep_text, stage_seconds)
    artifact, bound, nodes = cached.lookup(target, options, name) if cached else (None, None, None)
    if artifact is None:
        run = driver.run_stages(imported.module, target, options, name, keep_text=keep_text)
        stage_seconds.update({r.name: r.seconds for r in run.records})
        if pass_seconds is not None:
            pass_seconds.update({p.name: p.seconds for r in run.records for p in r.passes})
        artifact, bound, nodes = run.artifact, run.options, library_nodes(run.artifact, target)
        if cached:
            cached.store(artifact, target, nodes)
    if library is not None:
        library.update(nodes)
    if report is not None:
        report.cache = cached.where if cached else "off"
    t0 = time.perf_counter()
    recipe = RegionRecipe(cached.key if cached else "", imported.signature, imported.output_plan)
    try:
        fn = recipe.load(artifact, target, bound)
    except Exception as e:
        # A CompileError is the machine's answer (no device, a symbol the process lacks): a fresh
        # compile would get it too, so the entry stays and the region runs eagerly, said why.
        if not (cached and cached.hit) or isinstance(e, CompileError):
            raise
        cached.discard(f"loading it failed: {type(e).__name__}: {e}")  # then compiled afresh
        fn = build_region(sub, target, options, name, stage_seconds, keep_text, library, pass_seconds, report,
                          written_inputs, free_outputs)
        if report is not None:
            report.cache = "bad"
        return fn
    stage_seconds["load"] = time.perf_counter() - t0
    if report is not None and cached and not imported.written_inputs and imported.size_check is None:
        report.recipe = recipe  # graph_cache.py loads it again from its entry
    if imported.written_inputs:  # the plan is not the identity: fn is _planned's closure
        fn.written_inputs = imported.written_inputs
    return fn if imported.size_check is None else _size_checked(fn, imported.size_check)


def _size_checked(fn, size_check):
    """fn carrying its inputs' size limits, which CompiledRegion checks before each call."""
    def checked(*inputs):
        return fn(*inputs)

    checked.size_check = size_check
    checked.written_inputs = getattr(fn, "written_inputs", ())
    checked.channels_last_outputs = getattr(fn, "channels_last_outputs", ())
    return checked


def _import(sub: fx.GraphModule, options: Options, name: str, stage_seconds: dict,
            written_inputs: dict[int, int] | None = None, free_outputs: frozenset[int] = frozenset()):
    """The region in the dynamo dialect, verified (the `dynamo` stage)."""
    t0 = time.perf_counter()
    try:
        imported = import_graph(sub, "main", written_inputs, free_outputs)
    except Unsupported as e:
        raise CompileError("dynamo", str(e)) from None
    try:
        imported.module.operation.verify()
    except ir.MLIRError as e:
        raise CompileError("dynamo", f"imported IR does not verify: {e}") from None
    stage_seconds["dynamo"] = time.perf_counter() - t0
    if options.dump_dir:
        driver.write_dump(options.dump_dir, name, "dynamo", "mlir", driver.as_text(imported.module))
    return imported


class _RegionCache:
    """One region's use of the compile cache (codegen/cache.py): its key, and where its
    artifact came from ("memory", "disk", "miss", or "bad": an unusable entry, compiled again)."""

    def __init__(self, store, key: str):
        self.cache, self.key, self.where = store, key, "miss"

    @property
    def hit(self) -> bool:
        return self.where in ("memory", "disk")

    @classmethod
    def open(cls, module, target: Target, options: Options, name: str, keep_text: bool, stage_seconds: dict):
        """The region's cache, or None where it is off: the `cache` option, a target that is not
        cacheable, or a compile asked to show its stages (dumps, IR kept, print_after_all)."""
        if not (options.cache and target.cacheable) or keep_text or options.dump_dir or options.print_after_all:
            return None
        t0 = time.perf_counter()
        text = module.operation.get_asm(enable_debug_info=True)
        key = cache.region_key(text, target, config.bind(options, target), name)
        stage_seconds["cache_key"] = time.perf_counter() - t0
        return cls(cache.cache_for(options), key)

    def lookup(self, target: Target, options: Options, name: str):
        """(artifact, bound options, library nodes) from the cache, or Nones."""
        entry, self.where = self.cache.get(self.key)
        if entry is None:
            return None, None, None
        return entry.package, config.replace(config.bind(options, target), graph_name=name), entry.library_nodes

    def store(self, artifact, target: Target, nodes) -> None:
        package = artifact.detached() if hasattr(artifact, "detached") else artifact  # no MLIR objects kept
        self.cache.put(self.key, cache.Entry(target.name, package, frozenset(nodes)))

    def discard(self, why: str) -> None:
        self.cache.discard(self.key, why)
        self.where = "bad"


def _planned(fn, plan):
    """Re-expand the function's distinct results into the graph's outputs (see output_plan)."""
    picks = [(kind.removeprefix("copy_"), i, kind.startswith("copy_")) for kind, i in plan]

    def call(*inputs):
        values = {"result": fn(*inputs), "input": inputs}
        return [values[kind][i].clone() if copy else values[kind][i] for kind, i, copy in picks]

    return call
