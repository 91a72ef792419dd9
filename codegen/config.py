"""The core's options, and how one compile's options are resolved and bound to its target.

`torch.compile(..., backend="mlir", options={...})` keys and `DYNAMO_MLIR_*` environment
variables map onto the fields of `Options` (target-independent) and of the chosen target's own
options class (`Target.options_class`, e.g. `codegen/cuda/options.py`), all through the one
mechanism of `codegen/options.py`. Precedence: explicit options > environment > defaults.

`resolve` runs when torch.compile calls the backend; a key that no option set declares is an
error at once. The target is known only per graph (it may follow the inputs' device), so the
target's options are parsed by `bind` once it is chosen: a key the chosen target does not
declare is an error naming that target's options.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from .options import ENV_PREFIX, OptionError, OptionSet, TargetOptions, env_var, option, parse_text

log = logging.getLogger("dynamo_mlir")

PARTITIONERS = ("default", "min_cut", "save_all")
# torch.compile's modes this backend implements (torch passes no mode for "default").
MODES = (None, "default", "reduce-overhead")
# Modes that would otherwise be accepted and silently do nothing: refused, with what to use.
REJECTED_MODES = {
    "max-autotune": "dynamo-mlir does no autotuning (no kernel or library variant is timed and chosen)",
    "max-autotune-no-cudagraphs": "dynamo-mlir does no autotuning (no kernel or library variant is timed and chosen)",
}


@dataclass(frozen=True)
class Options(OptionSet):
    """Target-independent options, plus (once bound) the chosen target's own options."""

    target: str | None = option(None, "Target name (cpu, cuda, or a plugin); default: the inputs' device.")
    dump_dir: str | None = option(None, "Write every stage's IR of every compiled graph under this folder (the "
                                        "compile cache is not read then: every stage runs).", affects_code=False)
    strict: bool = option(False, "Raise on a compile failure instead of running the graph region eagerly.",
                          affects_code=False)
    freeze: bool = option(False, "Inference graphs: module parameters and buffers become constants read once, at "
                                 "compile time; a convolution's batch norm is folded into it and ops of constants "
                                 "alone run at compile time (frontend/freezing.py). A weight changed in place after "
                                 "compiling is not seen (call torch._dynamo.reset() and compile again); a call "
                                 "with other weight tensors (a replaced parameter) runs eagerly. Training graphs "
                                 "are not frozen.")
    fuse_elementwise: bool = option(True, "Fuse producer/consumer elementwise linalg ops before bufferizing.")
    partitioner: str = option("default", "Training graphs: how AOTAutograd splits forward from backward. default: "
                                         "its default partitioner, after the backward is made to recompute what is "
                                         "cheap to (a log_softmax from its row statistics, pointwise values from "
                                         "values saved anyway: frontend/saved_log_softmax.py, "
                                         "recomputed_pointwise.py). save_all: the forward saves every value the "
                                         "backward reads, as traced. min_cut: its min-cut "
                                         "rematerialization (inductor's), log_softmax decomposed so that it can "
                                         "take part: the forward saves fewer bytes and the backward recomputes "
                                         "cheap elementwise ops (a cross-entropy saves its bf16 logits, not float32 "
                                         "log-probabilities). Less memory, not faster here: AMP GPT-2's step took "
                                         "23.6 ms of kernels against 21.3 (an H200, 2026-11-28; 108 copy kernels, "
                                         "2.7 ms, that the default split does not make).",
                              check=lambda v: None if v in PARTITIONERS else f"must be one of {PARTITIONERS}")
    repro_dir: str | None = option(None, "Where failing pipelines leave their input IR; default: a temp folder.",
                                   affects_code=False)
    print_after_all: bool = option(False, "Log the IR after every pass, upstream MLIR and Python (very verbose; the "
                                          "compile cache is not read then).", affects_code=False)
    dump_passes: bool = option(False, "With dump_dir: also write the IR after every pass of a stage made of named "
                                      "passes (<graph>.<stage>.<NN>-<pass>.mlir).", affects_code=False)
    mode: str | None = option(None, "torch.compile's mode: default, or reduce-overhead (cuda target: the host "
                                    "schedule replayed as a CUDA graph). max-autotune is rejected: nothing is autotuned.",
                               affects_code=False)  # how the loaded code is called, not what is generated
    cache: bool = option(True, "Keep compiled regions in the compile cache (in memory, and on disk under cache_dir) "
                               "and load them from it instead of compiling again (codegen/cache.py; "
                               "`dynamo-mlir cache`), and find an inference graph compiled to one region "
                               "before it is traced (frontend/graph_cache.py); off: every graph is traced "
                               "and every region compiles.", affects_code=False)
    cache_dir: str | None = option(None, "The compile cache's folder; default: $XDG_CACHE_HOME/dynamo-mlir "
                                         "(~/.cache/dynamo-mlir).", affects_code=False)
    cache_max_bytes: int = option(4 << 30, "The compile cache's bound on disk, in bytes, checked on a process's "
                                           "first write and after each 2% of it written: past it, the entries used "
                                           "longest ago are removed, down to 80% of it (`dynamo-mlir cache prune` "
                                           "does the same at once); 0: no bound.",
                                  check=lambda v: "must be >= 0" if v < 0 else None, affects_code=False)
    # Not options: explicit target-option keys waiting for the target, then that target's
    # parsed options, and the graph the driver is compiling (stages may key debugging aids on it).
    requested: tuple[tuple[str, Any], ...] = ()
    target_options: TargetOptions | None = None
    graph_name: str = ""


def check_mode(mode: str | None) -> None:
    if mode in MODES:
        return
    why = REJECTED_MODES.get(mode, "it is not a torch.compile mode this backend knows")
    raise OptionError(
        f"dynamo-mlir: mode={mode!r} is not supported: {why}. Supported modes: 'default' and "
        "'reduce-overhead' (cuda target: the host schedule replayed as a CUDA graph). Use "
        "mode='default' (or leave mode out), or backend='inductor' for autotuned kernels.")


def _targets() -> dict:
    from .target import all_targets  # target.py imports options.py only; no cycle at import

    return all_targets()


def _target(name: str):
    targets = _targets()
    if name not in targets:
        raise OptionError(f"dynamo-mlir: unknown target '{name}'; known targets: {sorted(targets)}")
    return targets[name]


def option_sets() -> dict[str, type[OptionSet]]:
    """'core' and every registered target -> its option class: the one table of all options."""
    return {"core": Options, **{name: t.options_class for name, t in sorted(_targets().items())}}


def _owners(key: str) -> list[str]:
    return [name for name, cls in option_sets().items() if key in cls.names()]


def _check_keys(keys, target) -> None:
    """Raise for keys that neither the core nor `target` declares (without a target: no option
    set at all), saying which target each belongs to, if any, and which options are accepted."""
    if not keys:
        return
    accepted = set(Options.names()) | set(target.options_class.names() if target else
                                          (n for cls in option_sets().values() for n in cls.names()))
    wrong = sorted(k for k in keys if k not in accepted)
    if not wrong:
        return
    said = ", ".join(f"'{k}'" + (f" (an option of {', '.join(_owners(k))})" if _owners(k) else "") for k in wrong)
    if target is None:
        listed = "; ".join(f"{owner}: {cls.names()}" for owner, cls in option_sets().items())
        raise OptionError(f"dynamo-mlir: unknown option(s) {said}; known options: {listed}")
    raise OptionError(f"dynamo-mlir: unknown option(s) {said} for target '{target.name}', which compiles "
                     f"this graph; its options: {target.options_class.names()}; core options: {Options.names()}")


@functools.cache
def _warn_stray_env(names: tuple[str, ...]) -> None:
    log.warning("dynamo-mlir: ignoring environment variable(s) %s: no option has that name "
                "(see `dynamo-mlir options`)", list(names))


# Variables the process reads that are no option: they change no compiled code, so no cache key.
PERF_MAP = ENV_PREFIX + "PERF_MAP"  # 1: the cpu target names its linked functions for Linux perf
PROCESS_VARIABLES = frozenset({PERF_MAP})


def _check_env(environ: Mapping[str, str]) -> None:
    ours = [k for k in environ if k.startswith(ENV_PREFIX) and k not in PROCESS_VARIABLES]
    core = {env_var(n) for n in Options.names()}
    if all(k in core for k in ours):
        return  # none or the core's own (DYNAMO_MLIR_CACHE_DIR): no target is loaded to check them
    known = {env_var(n) for cls in option_sets().values() for n in cls.names()}
    stray = tuple(sorted(k for k in ours if k not in known))
    if stray:
        _warn_stray_env(stray)


def resolve(options: Mapping[str, Any] | None = None, mode: str | None = None,
            environ: Mapping[str, str] | None = None) -> Options:
    """Merge defaults, environment and explicit options; an unknown option or an unsupported
    mode is an error. With a target named (explicitly or by DYNAMO_MLIR_TARGET), the result is
    already bound to it."""
    environ = os.environ if environ is None else environ
    explicit = dict(options or {})
    core = {k: v for k, v in explicit.items() if k in Options.names()}
    merged = {**Options.from_env(environ), **core}
    if mode is not None:
        merged["mode"] = mode
    Options.validate(merged, "core")
    check_mode(merged.get("mode"))
    rest = {k: v for k, v in explicit.items() if k not in core}
    _check_keys(rest, _target(merged["target"]) if merged.get("target") else None)
    _check_env(environ)
    resolved = Options(**merged, requested=tuple(sorted(rest.items())))
    return bind(resolved, _target(resolved.target), environ) if resolved.target else resolved


def bind(options: Options, target, environ: Mapping[str, str] | None = None) -> Options:
    """`options` with `target`'s own options parsed (by the target's class) from the explicit
    keys and the environment. Idempotent for the same target."""
    current = options.target_options
    if current is not None and type(current) is target.options_class:
        return options
    clash = sorted(set(target.options_class.names()) & set(Options.names()))
    if clash:
        raise OptionError(f"dynamo-mlir: target '{target.name}' declares option(s) {clash}, which are core options")
    explicit = dict(options.requested)
    _check_keys(explicit, target)
    parsed = target.options_class.parse(explicit, target.name, os.environ if environ is None else environ)
    return dataclasses.replace(options, target_options=parsed)


def texts_to_options(pairs: Mapping[str, str], target: str | None) -> dict[str, Any]:
    """KEY=VALUE texts (the CLI's -O) as typed option values, by the declaring field's type."""
    chosen = _target(target) if target else None
    _check_keys(pairs, chosen)
    sets = [Options, chosen.options_class] if chosen else list(option_sets().values())
    return {key: parse_text(next(cls.field_of(key) for cls in sets if cls.field_of(key)), text)
            for key, text in pairs.items()}


def replace(opts: Options, **changes: Any) -> Options:
    return dataclasses.replace(opts, **changes)
