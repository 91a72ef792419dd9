"""The compile cache's graph level: a Dynamo graph compiled before is found again before
AOTAutograd traces it.

The region level (codegen/cache.py) is keyed on each region's imported IR, so a warm process
still runs AOTAutograd, partitions and imports before it can look anything up: on GPT-2 small
(CPU) that is about 1.7 s of a 3.8 s warm first call (benchmarks/compile_cache.py). This level
is keyed on what Dynamo hands the backend, as inductor's AOTAutogradCache is: the graph's code
and its inputs' metadata (dtype, shape, stride, device, requires_grad), the grad mode, the
bytes of its tensor constants, plus every fact of a region's key (target, machine, options,
versions). Its entry holds no code: it names the region's entry and says how the graph calls it.

Only graphs that compile to one region called directly (compile.direct_call through
inference_path.py: an inference graph with no runtime wrapper, inputs of static shape) are
stored; their recipe is all the call needs. A graph whose text could name different behaviour
under the same code (a call_module, a parameter held as an attribute, a function from outside
torch) is not looked up at all. An entry whose region entry is gone, or whose code fails to
load, is a miss: the graph is traced and compiled as if it had none, and both are written again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import operator
import time
from dataclasses import dataclass, replace

import torch
import torch.fx as fx
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from ..codegen import cache, config
from ..codegen.passes import CompileError
from ..codegen.target import NoTargetForDevice, Target
from .compile import DirectRecipe, choose_target, new_graph_name
from .stats import REGISTRY, GraphReport

log = logging.getLogger("dynamo_mlir")

# Functions a graph's code may call by name: their behaviour is fixed by the versions in the key.
_TRUSTED_MODULES = ("torch", "_operator", "operator", "math", "builtins")
_UNTRUSTED_TORCH = ("torch._ops.",)  # custom ops: torch.ops.NAMESPACE.op, defined by anyone
_TRUSTED_OPS = ("torch._ops.aten", "torch._ops.prims")


@dataclass(frozen=True)
class GraphEntry:
    """A graph's entry: its report as compiled (each partition's RegionRecipe among it) and how
    the graph calls its one region."""

    report: GraphReport
    direct: DirectRecipe


def _trusted(fn) -> bool:
    module = getattr(fn, "__module__", None) or ""
    if module.startswith(_TRUSTED_OPS):
        return True
    if module.startswith(_UNTRUSTED_TORCH):
        return False
    return module.split(".")[0] in _TRUSTED_MODULES


def _input_spec(x) -> tuple | None:
    if not isinstance(x, torch.Tensor) or is_traceable_wrapper_subclass(x):
        return None
    if not all(isinstance(d, int) for d in (*x.shape, *x.stride(), x.storage_offset())):
        return None
    return str(x.dtype), tuple(x.shape), tuple(x.stride()), x.storage_offset(), x.device.type, x.requires_grad


def _tensor_digest(t: torch.Tensor) -> str:
    data = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return f"{t.dtype} {tuple(t.shape)} " + hashlib.sha256(data).hexdigest()


def graph_text(gm: fx.GraphModule, example_inputs) -> str | None:
    """What decides the graph's compile, as text; None for a graph this level does not take."""
    # Parameters held by the graph (no Dynamo graph of an inlined module has any) would be
    # hashed on every compile; tensor constants (get_attr, held as buffers) are.
    if torch._C._is_any_autocast_enabled() or next(gm.parameters(), None) is not None:
        return None
    specs = [_input_spec(x) for x in example_inputs]
    if any(s is None for s in specs):
        return None
    constants = []
    for node in gm.graph.nodes:
        if node.op == "call_module" or (node.op == "call_function" and not _trusted(node.target)):
            return None
        if node.op == "get_attr":
            value = operator.attrgetter(node.target)(gm)
            if not isinstance(value, torch.Tensor) or isinstance(value, torch._subclasses.FakeTensor):
                return None
            constants.append((node.target, _tensor_digest(value)))
    return json.dumps({"code": gm.code, "inputs": specs, "constants": constants,
                       "grad": torch.is_grad_enabled()})


class GraphLookup:
    """One Dynamo graph's use of the graph level: its key; `load` on a hit, `store` after a miss."""

    def __init__(self, store: cache.CompileCache, key: str, target: Target, options: config.Options, t0: float):
        self.cache, self.key, self.target, self.options, self.t0 = store, key, target, options, t0
        # What the lookup met: the graph's entry ("miss", or "bad": unusable, removed) and its
        # region's ("bad" when the graph's entry named an unusable one)
        self.where, self.region_where = "miss", None

    @classmethod
    def open(cls, gm: fx.GraphModule, example_inputs, options: config.Options) -> GraphLookup | None:
        """The graph's lookup, or None where this level does not apply (cache off, dumps, a
        target that is not cacheable, graphs picked by name, a graph graph_text refuses)."""
        t0 = time.perf_counter()
        if not options.cache or options.dump_dir or options.print_after_all:
            return None
        if options.freeze:  # the key would have to hold the weights' values (freezing.py)
            return None
        try:
            target = choose_target(gm, example_inputs, options)
        except NoTargetForDevice:
            return None
        bound = config.bind(options, target)
        if not target.cacheable or cache.names_graphs(bound):
            return None
        try:
            text = graph_text(gm, example_inputs)
        except Exception as e:  # noqa: BLE001  a graph this level cannot read is compiled, not refused
            log.debug("dynamo-mlir: graph cache: no key for this graph: %s", e)
            return None
        if text is None:
            return None
        return cls(cache.cache_for(options), cache.graph_key(text, target, bound), target, bound, t0)

    def load(self):
        """The graph's callable (unboxed, as inference_path.InferencePath hands it to Dynamo),
        its report registered; None on a miss. A failure of the lookup itself is a miss, said
        once (strict=True raises it): the graph is then traced and compiled as without a cache."""
        try:
            return self._load()
        except Exception as e:  # noqa: BLE001
            if self.options.strict:
                raise
            log.warning("dynamo-mlir: graph cache lookup failed (%s: %s); tracing the graph", type(e).__name__, e)
            self.where = "miss"
            return None

    def _load(self):
        found = self._entry()
        if found is None:
            return None
        part = found.report.partitions[0]
        region, self.region_where = self.cache.get(part.recipe.key)
        if region is None:  # its code is gone (cleared, damaged): trace and compile again
            self.where = "miss"
            return None
        name, t0 = new_graph_name(found.report.kind), time.perf_counter()
        fn = self._load_region(part, region.package, f"{name}_{part.name}")
        if fn is None:
            return None
        stage_seconds = {"graph_key": t0 - self.t0, "load": time.perf_counter() - t0}
        part = replace(part, stage_seconds=stage_seconds, pass_seconds={}, cache=self.region_where)
        REGISTRY.add(replace(found.report, name=name, partitions=[part], graph_cache=self.where,
                             compile_seconds=time.perf_counter() - self.t0))
        return found.direct.bind(fn)

    def _entry(self) -> GraphEntry | None:
        entry, self.where = self.cache.get(self.key)
        if entry is None:
            return None
        if not isinstance(entry.package, GraphEntry) or len(entry.package.report.partitions) != 1:
            self.cache.discard(self.key, "not a one-region graph entry")
            self.where = "bad"
            return None
        return entry.package

    def _load_region(self, part, artifact, name: str):
        """The region's callable, or None: a CompileError (no device) is left for the full compile
        to meet and report; any other failure makes the region's entry unusable, as build_region
        judges it."""
        try:
            return part.recipe.load(artifact, self.target, config.replace(self.options, graph_name=name))
        except CompileError:
            self.where = "miss"
        except Exception as e:  # noqa: BLE001
            self.cache.discard(part.recipe.key, f"loading it failed: {type(e).__name__}: {e}")
            self.where, self.region_where = "miss", "bad"
        return None

    def store(self, report: GraphReport, direct: DirectRecipe) -> None:
        """After a miss: the graph's entry, if it compiled to one region with a recipe."""
        report.graph_cache = "bad" if self.where == "bad" else "miss"
        if self.region_where == "bad" and len(report.partitions) == 1:
            report.partitions[0].cache = "bad"  # its code was compiled again after an unusable entry
        if len(report.partitions) != 1 or report.partitions[0].recipe is None or report.fallbacks:
            return
        kept = replace(report, partitions=[replace(report.partitions[0], stage_seconds={}, pass_seconds={})])
        self.cache.put(self.key, cache.Entry(self.target.name, GraphEntry(kept, direct), level="graph"))
