"""Every option and environment variable of dynamo-mlir, declared once and typed.

`torch.compile(..., backend="mlir", options={...})` keys and `DYNAMO_MLIR_*` environment
variables both map onto the fields of `Options`. Precedence: explicit options > environment >
defaults. Unknown option keys are an error (a typo must not be silently ignored).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from typing import Any

ENV_PREFIX = "DYNAMO_MLIR_"


@dataclass(frozen=True)
class Options:
    target: str | None = field(default=None, metadata={"doc": "Target name (cpu, cuda, or a plugin); default: the inputs' device."})
    dump_dir: str | None = field(default=None, metadata={"doc": "Write every stage's IR of every compiled graph under this folder."})
    strict: bool = field(default=False, metadata={"doc": "Raise on a compile failure instead of running the graph region eagerly."})
    fuse_elementwise: bool = field(default=True, metadata={"doc": "Fuse producer/consumer elementwise linalg ops before bufferizing."})
    opt_level: int = field(default=2, metadata={"doc": "LLVM optimisation level of the JIT (0-3); 2 runs as fast as 3 here and JITs ~40% sooner."})
    repro_dir: str | None = field(default=None, metadata={"doc": "Where failing pipelines leave their input IR; default: a temp folder."})
    print_after_all: bool = field(default=False, metadata={"doc": "Log the IR after every MLIR pass (very verbose)."})
    library_matmul: bool = field(default=True, metadata={"doc": "cuda target: run matmul/conv/pooling as library calls through torch (cuBLAS/cuDNN; stats: ops_library); off: in our own generated kernels. The cpu target makes no library calls."})
    cuda_arch: str | None = field(default=None, metadata={"doc": "cuda target: PTX architecture (sm_90, ...); default: the GPU's, else sm_90."})
    cuda_fuse_rows: bool = field(default=True, metadata={"doc": "cuda target: fuse a row's reductions and the elementwise ops around them into one kernel (one block per row)."})
    cuda_graphs: bool = field(default=True, metadata={"doc": "cuda target: in mode=reduce-overhead, replay the host schedule as a CUDA graph."})
    mode: str | None = field(default=None, metadata={"doc": "torch.compile's mode: default, or reduce-overhead (cuda target: the host schedule replayed as a CUDA graph). max-autotune is rejected: nothing is autotuned."})

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def describe(cls) -> list[tuple[str, str, str]]:
        """(option, environment variable, doc) rows, for --help and docs."""
        return [(f.name, ENV_PREFIX + f.name.upper(), f.metadata.get("doc", "")) for f in fields(cls)]


def _parse(kind: Any, text: str) -> Any:
    if kind in (bool, "bool"):
        return text.strip().lower() in ("1", "true", "yes", "on")
    if kind in (int, "int"):
        return int(text)
    return text


def from_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    found = {}
    for f in fields(Options):
        key = ENV_PREFIX + f.name.upper()
        if key in environ:
            kind = str(f.type).split("|")[0].strip()
            found[f.name] = _parse(kind, environ[key])
    return found


# torch.compile's modes this backend implements (torch passes no mode for "default").
MODES = (None, "default", "reduce-overhead")
# Modes that would otherwise be accepted and silently do nothing: refused, with what to use.
REJECTED_MODES = {
    "max-autotune": "dynamo-mlir does no autotuning (no kernel or library variant is timed and chosen)",
    "max-autotune-no-cudagraphs": "dynamo-mlir does no autotuning (no kernel or library variant is timed and chosen)",
}


def check_mode(mode: str | None) -> None:
    if mode in MODES:
        return
    why = REJECTED_MODES.get(mode, "it is not a torch.compile mode this backend knows")
    raise ValueError(
        f"dynamo-mlir: mode={mode!r} is not supported: {why}. Supported modes: 'default' and "
        "'reduce-overhead' (cuda target: the host schedule replayed as a CUDA graph). Use "
        "mode='default' (or leave mode out), or backend='inductor' for autotuned kernels.")


def resolve(options: dict[str, Any] | None = None, mode: str | None = None) -> Options:
    """Merge defaults, environment and explicit options into one Options; an unknown option or
    an unsupported mode is an error."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(Options.names()))
    if unknown:
        raise ValueError(
            f"dynamo-mlir: unknown option(s) {unknown}; known options: {Options.names()}"
        )
    merged = {**from_env(), **options}
    if mode is not None:
        merged["mode"] = mode
    check_mode(merged.get("mode"))
    return Options(**merged)


def replace(opts: Options, **changes: Any) -> Options:
    return dataclasses.replace(opts, **changes)
