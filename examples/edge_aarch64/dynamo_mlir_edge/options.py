"""The aarch64 target's own options: each is an `options={...}` key, a DYNAMO_MLIR_<NAME>
variable and a CLI `-O NAME=VALUE`, with nothing else to edit (dynamo_mlir.plugin.option)."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_mlir.plugin import TargetOptions, option


def _cpu_name(value: str) -> str | None:
    return None if value and value.strip() == value else f"an LLVM AArch64 CPU name, e.g. 'cortex-a72', got {value!r}"


def _features(value: str) -> str | None:
    words = [w for w in value.split(",") if w]
    bad = [w for w in words if w[0] not in "+-"]
    return f"LLVM features are '+name' or '-name', comma separated; got {bad}" if bad else None


@dataclass(frozen=True)
class EdgeOptions(TargetOptions):
    aarch64_cpu: str = option("cortex-a72", "The AArch64 CPU LLVM schedules and selects instructions for "
                                            "(e.g. cortex-a53, cortex-a72, neoverse-n1).", _cpu_name)
    aarch64_features: str = option("+neon", "LLVM target features of that CPU, comma separated (+neon, +sve...).",
                                   _features)
    aarch64_artifact_dir: str | None = option(None, "Where each compiled region's shared library (the deploy "
                                                    "artifact, <graph>-<hash>.so) and the cached qemu runner are "
                                                    "kept; default ~/.cache/dynamo-mlir-edge.")
