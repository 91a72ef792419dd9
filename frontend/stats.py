"""What the last compiles did: graphs, partitions, where each ATen op ran and why, stage times.

Public through `dynamo_mlir.explain()`, `dynamo_mlir.stats()` and `dynamo_mlir.reset()`. Every
ATen op of a graph is counted in exactly one of three places:
- compiled: it runs in code we generated (a compiled region's kernels);
- library:  it runs as a library call (torch/cuBLAS/cuDNN/MKL) inside a compiled region;
- eager:    it runs as an ordinary eager ATen call (unsupported, its region failed to compile,
            or its whole graph was handed back), with the reason.
On top of that, run-time fallbacks count the *calls* in which a compiled region ran its eager
submodule instead (an input's dtype or shape differed from what the graph promised).
"""

import logging
import threading
import types
from collections import Counter
from dataclasses import dataclass, field

import torch.fx

from .freezing import FreezeReport

log = logging.getLogger("dynamo_mlir")


def op_name(target) -> str:
    """How reports name a node's op: str() for ATen overloads ('aten.mm.default') and wrappers
    that name their op; the qualified name ('_operator.lt', 'torch.sym_ite') for plain
    functions, whose str() carries a memory address."""
    if not isinstance(target, (types.FunctionType, types.BuiltinFunctionType)):
        return str(target)
    try:
        return torch.fx.node._get_qualified_name(target)
    except Exception:  # not every callable has one (a lambda)
        return str(target)


@dataclass
class PartitionReport:
    name: str
    target: str
    ops: list[str]                 # every ATen op of the region, one entry per node
    stage_seconds: dict[str, float]
    compiled: bool = True
    pass_seconds: dict[str, float] = field(default_factory=dict)  # named passes of the stages, by name
    error: str | None = None
    library_ops: list[str] = field(default_factory=list)  # the ops of `ops` that run as library calls
    # Where its compiled code came from (codegen/cache.py): "miss" (compiled, then stored),
    # "memory" / "disk" (a cache hit: no stage ran), "bad" (an unusable entry, removed and
    # compiled again), "off" (not cached: the option, the target, or a dump).
    cache: str = "off"
    # How to load its code again with no stage run (compile.RegionRecipe), where it is cached
    recipe: object = None

    @property
    def generated_ops(self) -> list[str]:
        """The ops that run in our generated code: the region's ops less its library calls."""
        return list((Counter(self.ops) - Counter(self.library_ops)).elements())


@dataclass
class GraphReport:
    name: str
    kind: str  # "forward", "backward" or "inference"
    target: str
    partitions: list[PartitionReport] = field(default_factory=list)
    fallbacks: list[tuple[str, str]] = field(default_factory=list)  # (aten op, reason): ran eagerly
    compile_seconds: float = 0.0
    # An inference graph Dynamo calls without AOTAutograd's runtime wrapper (inference_path.py)
    direct_call: bool = False
    # Inputs the graph mutates, copied back by one multi-tensor call after its regions (input_mutations.py)
    inputs_written_back: int = 0
    # Inputs the graph mutates whose new values a region computes into them (codegen/written_inputs.py;
    # where the runtime handed the code a copy of one, a strided input or a CUDA graph's own input
    # buffer, that copy is copied back)
    inputs_written_in_place: int = 0
    # A training forward's saved tensors (activations, weights) returned channels-last (saved_layouts.py)
    saved_channels_last: int = 0
    # Results eager returns permuted (channels-last, transposed) computed in that order and handed
    # back with eager's strides through a view (output_layouts.py)
    outputs_in_eager_layout: int = 0
    # The graph level of the compile cache (graph_cache.py): "memory" / "disk" (found there:
    # AOTAutograd, partitioning and import skipped), "miss" (traced, then stored if it takes
    # one region called directly), "bad" (an unusable entry, removed), "off" (not looked up)
    graph_cache: str = "off"
    # options.freeze: the parameters and buffers made constants, and what was folded (freezing.py)
    frozen: FreezeReport | None = None

    @property
    def compiled_ops(self) -> list[str]:
        return [op for p in self.partitions if p.compiled for op in p.generated_ops]

    @property
    def library_ops(self) -> list[str]:
        return [op for p in self.partitions if p.compiled for op in p.library_ops]


class _Registry:
    def __init__(self):
        self._lock = threading.Lock()
        self.graphs: list[GraphReport] = []
        # region name -> Counter(reason -> calls) that ran the region's eager submodule
        self.runtime: dict[str, Counter] = {}
        self._warned: set[tuple[str, str]] = set()

    def add(self, report: GraphReport) -> None:
        with self._lock:
            self.graphs.append(report)
        for op, reason in report.fallbacks:
            if (op, reason) not in self._warned:  # once per op and reason
                self._warned.add((op, reason))
                log.warning("dynamo-mlir: %s runs eagerly: %s", op, reason)

    def runtime_fallback(self, region: str, reason: str) -> None:
        """One call of compiled region `region` ran eagerly instead, for `reason`."""
        with self._lock:
            first = region not in self.runtime
            self.runtime.setdefault(region, Counter())[reason] += 1
        if first:
            log.warning("dynamo-mlir: %s: %s; running this region eagerly", region, reason)

    def reset(self) -> None:
        with self._lock:
            self.graphs.clear()
            self.runtime.clear()
            self._warned.clear()


REGISTRY = _Registry()


def stats() -> dict:
    """Counts over every graph compiled (and every run-time fallback) since the last reset()."""
    graphs = REGISTRY.graphs
    compiled = Counter(op for g in graphs for op in g.compiled_ops)
    library = Counter(op for g in graphs for op in g.library_ops)
    fallback = Counter(op for g in graphs for op, _ in g.fallbacks)
    stage_seconds: Counter = Counter()
    pass_seconds: Counter = Counter()
    for g in graphs:
        for p in g.partitions:
            stage_seconds.update(p.stage_seconds)
            pass_seconds.update(p.pass_seconds)
    runtime = {region: {"calls": sum(reasons.values()), "reasons": dict(reasons)}
               for region, reasons in REGISTRY.runtime.items()}
    return {
        "graphs": len(graphs),
        "graphs_by_kind": dict(Counter(g.kind for g in graphs)),
        "graphs_called_directly": sum(1 for g in graphs if g.direct_call),  # no AOTAutograd wrapper
        "inputs_written_back": sum(g.inputs_written_back for g in graphs),  # copied in after the regions
        "inputs_written_in_place": sum(g.inputs_written_in_place for g in graphs),  # computed into the input
        "saved_channels_last": sum(g.saved_channels_last for g in graphs),  # saved tensors channels-last
        "outputs_in_eager_layout": sum(g.outputs_in_eager_layout for g in graphs),  # results laid out as eager's
        "inputs_frozen": sum(g.frozen.inputs for g in graphs if g.frozen),  # parameters/buffers made constants
        "frozen_folds": dict(sum((g.frozen.folds for g in graphs if g.frozen), Counter())),
        "partitions": sum(len(g.partitions) for g in graphs),
        "partitions_failed": sum(1 for g in graphs for p in g.partitions if not p.compiled),
        "ops_compiled": sum(compiled.values()),   # in our generated code only
        "ops_library": sum(library.values()),     # library calls inside compiled regions
        "ops_fallback": sum(fallback.values()),   # eager ATen calls
        "compiled_ops": dict(compiled),
        "library_ops": dict(library),
        "fallback_ops": dict(fallback),
        "fallback_reasons": sorted({(op, r) for g in graphs for op, r in g.fallbacks}),
        "runtime_fallbacks": runtime,
        "runtime_fallback_calls": sum(r["calls"] for r in runtime.values()),
        "stage_seconds": dict(stage_seconds),
        "pass_seconds": dict(pass_seconds),  # the stages' named passes (codegen/passes.py), by name
        "cache": _cache_counts(graphs),
        "compile_seconds": sum(g.compile_seconds for g in graphs),
        "targets": sorted({g.target for g in graphs}),
    }


def _cache_counts(graphs) -> dict:
    """Partitions by where their code came from: the compile cache's hits (memory, disk), misses
    (compiled and stored), bad entries (compiled again), and partitions not cached; graphs found
    at the graph level (graph_hits: no trace) or looked up there and missed."""
    where = Counter(p.cache for g in graphs for p in g.partitions)
    graph = Counter(g.graph_cache for g in graphs)
    return {"hits": where["memory"] + where["disk"], "memory_hits": where["memory"], "disk_hits": where["disk"],
            "misses": where["miss"] + where["bad"], "bad_entries": where["bad"] + graph["bad"], "off": where["off"],
            "graph_hits": graph["memory"] + graph["disk"], "graph_misses": graph["miss"] + graph["bad"]}


_CACHE_WORDS = {"memory": "from the compile cache (memory)", "disk": "from the compile cache (disk)",
                "miss": "stored in the compile cache", "bad": "compile cache entry unusable, compiled again",
                "off": "not cached"}


def _partition_lines(p: PartitionReport) -> list[str]:
    status = f"compiled ({_CACHE_WORDS[p.cache]})" if p.compiled else f"FAILED, ran eagerly: {p.error}"
    times = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in p.stage_seconds.items())
    library = Counter(p.library_ops)
    # A partition that failed after its stages ran (no device to load on) still says which ops
    # its target would run as library calls.
    how = "as library call" if p.compiled else "would run as library call"
    lines = [f"  partition {p.name}: {len(p.ops)} ops, {status}; {times}"]
    if p.pass_seconds:  # where a stage's time went (codegen/passes.py)
        slowest = sorted(p.pass_seconds.items(), key=lambda kv: -kv[1])[:3]
        lines.append("    slowest passes: " + ", ".join(f"{name} {s * 1e3:.1f} ms" for name, s in slowest))
    for op, n in sorted(Counter(p.ops).items()):
        lines.append(f"    {op} x{n}" + (f" ({library[op]} {how})" if library[op] else ""))
    return lines


def _frozen_words(frozen: FreezeReport) -> str:
    folds = ", ".join(f"{n} {what}" for what, n in frozen.folds.items() if n)
    kept = ", ".join(f"{n} {why}" for why, n in frozen.kept.items())
    return (f"; {frozen.inputs} parameter(s) and buffer(s) frozen as constants"
            + (f" ({folds} folded)" if folds else "") + (f", kept as inputs: {kept}" if kept else ""))


def explain() -> str:
    """A human-readable account of every compile since the last reset()."""
    lines = []
    for g in REGISTRY.graphs:
        lines.append(f"graph {g.name} ({g.kind}, target {g.target}): {len(g.partitions)} partition(s), "
                     f"{len(g.compiled_ops)} op(s) compiled, {len(g.library_ops)} library call(s), "
                     f"{len(g.fallbacks)} eager, {g.compile_seconds * 1e3:.0f} ms"
                     + ("; called directly, without AOTAutograd's runtime wrapper" if g.direct_call else "")
                     + (f"; from the graph cache ({g.graph_cache}): AOTAutograd, partitioning and import skipped"
                        if g.graph_cache in ("memory", "disk") else "")
                     + (f"; {g.inputs_written_back} mutated input(s) written back in one call"
                        if g.inputs_written_back else "")
                     + (f"; {g.inputs_written_in_place} mutated input(s) computed in place"
                        if g.inputs_written_in_place else "")
                     + (f"; {g.saved_channels_last} saved tensor(s) returned channels-last"
                        if g.saved_channels_last else "")
                     + (f"; {g.outputs_in_eager_layout} result(s) computed in eager's layout (permuted: "
                        "channels-last, transposed)" if g.outputs_in_eager_layout else "")
                     + (_frozen_words(g.frozen) if g.frozen else ""))
        for p in g.partitions:
            lines += _partition_lines(p)
        for op, reason in g.fallbacks:
            lines.append(f"  eager: {op}: {reason}")
    for region, reasons in REGISTRY.runtime.items():
        for reason, calls in reasons.items():
            lines.append(f"run-time fallback: {region} ran eagerly in {calls} call(s): {reason}")
    if not lines:
        return "dynamo-mlir: nothing compiled since the last reset()"
    return "\n".join(lines)


def reset() -> None:
    REGISTRY.reset()
