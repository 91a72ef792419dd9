"""Targets are plugins: a name, a device type, an ordered stage table and a runtime loader.

`cpu` and `cuda` register through the `dynamo_mlir.targets` entry-point group exactly as a
third-party package would, so new hardware is a new package, not an edit of the core.
"""

import functools
import importlib.metadata
import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from ..lowering.registry import declare_target
from .options import TargetOptions

log = logging.getLogger("dynamo_mlir")

ENTRY_POINT_GROUP = "dynamo_mlir.targets"


@dataclass(frozen=True)
class Stage:
    """One step of a pipeline, dumped as `<graph>.<name>.<ext>`: either `run(ir, options) -> next
    ir`, or `passes`, named passes (codegen/passes.py) the driver runs in order, timing, checking
    and dumping each."""

    name: str
    ext: str
    run: Callable[[Any, Any], Any] | None = None
    doc: str = ""
    passes: tuple = ()

    def __post_init__(self):
        if (self.run is None) == (not self.passes):
            raise ValueError(f"dynamo-mlir: stage '{self.name}' needs run or passes (one of them)")


@dataclass(frozen=True)
class Target:
    """A compilation target.

    device_type: the device whose tensors `load`'s callable reads and writes (its home device).
    serves: the device types the target is chosen for when no `target` option names one; None
    means (device_type,), () an explicit-only target (`options={"target": name}`), e.g. a
    cross-compiling target that runs host tensors elsewhere. A PrivateUse1 device renamed by its
    plugin (torch.utils.rename_privateuse1_backend) is served under either name.
    stages: ordered, from the dynamo-dialect module to the artifact `load` takes.
    load(artifact, signature, options) -> callable(*tensors) -> list[tensors].
    available(): whether this machine can run it (e.g. a GPU is present); PTX can be generated
    without one, so `stages` must not need it.
    unsupported_ops: dynamo op names this target cannot lower (the partitioner keeps them eager).
    dynamic_shape_ops: with the `dynamic_shapes` capability, the ATen op packets it compiles with
    symbolic sizes (None: every one the core's import rules take with them,
    frontend/partition.DYNAMIC_SHAPE_OPS); a node of another op with symbolic sizes stays eager.
    capabilities: what lowering rules may require of it (lowering.registry.CAPABILITIES); building
    a Target declares its name and capabilities to the lowering registry, so build it before
    importing its own rules (register_lowering(..., target=name) checks the name).
    extra_dumps: name -> (ext, fn(artifact) -> text), dump-only views (e.g. LLVM IR, assembly).

    Library calls: a target whose last artifact runs some ops through a vendor library (torch,
    cuBLAS, cuDNN, MKL) instead of its generated code says which graph nodes those serve with a
    `library_nodes` attribute on that artifact (FX node names, read from the ops' locations with
    codegen.provenance.nodes_of); stats() counts them as library ops, not as compiled ones. An
    artifact that cannot carry an attribute (an MLIR module) is read by the target's
    `find_library_nodes(artifact)` instead.

    options_class: the target's own options (a frozen `TargetOptions` subclass in the target's
    package); the driver parses them from `options={...}` and `DYNAMO_MLIR_*` once the target is
    chosen, and every stage and the loader read them as `options.target_options`.

    The compile cache (codegen/cache.py): with `cacheable`, the last stage's artifact is kept
    and handed to `load` in later compiles of the same region, in this process or another. It
    must then pickle, hold nothing of this process (no MLIR module, no handle, no address), and
    `load` must need nothing else; an artifact that keeps its module for dumps offers
    `detached()`, the copy the cache keeps. `machine(options)` names what the code is generated for (the
    host CPU and its features, a GPU architecture): part of the cache key.
    """

    name: str
    device_type: str
    stages: tuple[Stage, ...]
    load: Callable[..., Callable]
    available: Callable[[], bool] = lambda: True
    unsupported_ops: frozenset[str] = frozenset()
    dynamic_shape_ops: frozenset | None = None
    extra_dumps: dict[str, tuple[str, Callable[[Any], str]]] = field(default_factory=dict)
    doc: str = ""
    capabilities: frozenset[str] = frozenset()
    options_class: type[TargetOptions] = TargetOptions
    find_library_nodes: Callable[[Any], frozenset[str]] | None = None
    serves: tuple[str, ...] | None = None
    cacheable: bool = False
    machine: Callable[[Any], str] = lambda options: ""

    def __post_init__(self):
        declare_target(self.name, self.capabilities)

    def served_device_types(self) -> tuple[str, ...]:
        return (self.device_type,) if self.serves is None else tuple(self.serves)

    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]


def library_nodes(artifact: Any, target: Target | None = None) -> frozenset[str]:
    """FX node names the artifact runs as library calls (none unless the target says so)."""
    if target is not None and target.find_library_nodes is not None:
        return frozenset(target.find_library_nodes(artifact))
    return frozenset(getattr(artifact, "library_nodes", ()))


_TARGETS: dict[str, Target] = {}


class DuplicateTarget(ValueError):
    """Two different targets registered under one name."""


class NoTargetForDevice(LookupError):
    """No registered target serves a graph's device type (the message says which exist)."""


def register_target(target: Target, override: bool = False) -> Target:
    """Make `target` choosable by name and device. A different target already registered under
    the name raises DuplicateTarget unless `override=True` (the CLI swaps a loader that way)."""
    old = _TARGETS.get(target.name)
    if old is not None and old is not target and not override:
        raise DuplicateTarget(f"a target named '{target.name}' is already registered ({old.doc or old}); "
                              "pick another name, or pass override=True to replace it")
    _TARGETS[target.name] = target
    # The lowering registry's capabilities are the registered target's: a Target built and
    # dropped (dataclasses.replace for a trial) declared its own when it was built.
    declare_target(target.name, target.capabilities)
    return target


@functools.cache
def _entry_points() -> tuple:
    """The installed targets' entry points, the core's own first: when a plugin serves the same
    device, the core stays the default unless it is unavailable (see target_for_device)."""
    return tuple(sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP),
                        key=lambda ep: not ep.value.startswith("dynamo_mlir.")))


def _load(ep) -> Target | None:
    """Import and register one entry point's target, once (a broken plugin: a warning, None)."""
    if ep.name not in _loaded:
        _loaded[ep.name] = None
        try:
            _loaded[ep.name] = register_target(ep.load())
        except Exception as e:  # a broken plugin must not take the others down
            log.warning("dynamo-mlir: target plugin %r failed to load: %s", ep.name, e)
    return _loaded[ep.name]


_loaded: dict[str, Target | None] = {}  # entry point name -> its target (None: it failed)


def _discover() -> None:
    """Load every installed target. Only what lists or checks all of them needs this: compiling
    loads just the target it uses (importing a target imports its pipeline, a tenth of a second
    of a warm start's first call each)."""
    for ep in _entry_points():
        _load(ep)


def get_target(name: str) -> Target:
    for ep in _entry_points():
        if name not in _TARGETS and ep.name == name:
            _load(ep)
    if name not in _TARGETS:
        _discover()
    if name not in _TARGETS:
        raise KeyError(f"unknown target '{name}'; known targets: {sorted(_TARGETS)}")
    return _TARGETS[name]


def all_targets() -> dict[str, Target]:
    _discover()
    return dict(_TARGETS)


def _device_names(device_type: str) -> set[str]:
    """A device type and, for a renamed PrivateUse1 backend, its generic name too."""
    import torch

    renamed = torch._C._get_privateuse1_backend_name()
    return {device_type, "privateuseone"} if device_type == renamed else {device_type}


def target_for_device(device_type: str) -> Target:
    """The target chosen for tensors of `device_type`: among the targets serving it, the first
    that can run here, else the first (its stages still run). The order: installed targets (the
    core's before plugins), then ones registered by hand. Installed targets load in that order
    only until one serving the device can run here."""
    names = _device_names(device_type)
    serves = lambda t: bool(names & set(t.served_device_types()))  # noqa: E731
    # A core target is named for its device: tried first, the others are not imported at all.
    for ep in sorted(_entry_points(), key=lambda ep: ep.name not in names):
        target = _load(ep)
        if target is not None and serves(target) and target.available():
            return target
    installed = [t for t in map(_load, _entry_points()) if t is not None]
    ordered = installed + [t for t in _TARGETS.values() if t not in installed]
    serving = [t for t in ordered if serves(t)]
    if not serving:
        known = ", ".join(f"{t.name} ({'/'.join(t.served_device_types()) or 'explicit only'})"
                          for t in _TARGETS.values())
        raise NoTargetForDevice(
            f"no dynamo-mlir target serves device type '{device_type}' (targets: {known}); install a "
            f"target plugin for it, or name one with options={{'target': ...}}")
    return next((t for t in serving if t.available()), serving[0])
