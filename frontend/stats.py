"""What the last compiles did: graphs, partitions, ops compiled, fallbacks and why, stage times.

Public through `dynamo_mlir.explain()`, `dynamo_mlir.stats()` and `dynamo_mlir.reset()`.
"""

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field

log = logging.getLogger("dynamo_mlir")


@dataclass
class PartitionReport:
    name: str
    target: str
    ops: list[str]
    stage_seconds: dict[str, float]
    compiled: bool = True
    error: str | None = None


@dataclass
class GraphReport:
    name: str
    kind: str  # "forward", "backward" or "inference"
    target: str
    partitions: list[PartitionReport] = field(default_factory=list)
    fallbacks: list[tuple[str, str]] = field(default_factory=list)  # (aten op, reason)
    compile_seconds: float = 0.0

    @property
    def compiled_ops(self) -> list[str]:
        return [op for p in self.partitions if p.compiled for op in p.ops]


class _Registry:
    def __init__(self):
        self._lock = threading.Lock()
        self.graphs: list[GraphReport] = []
        self._warned: set[tuple[str, str]] = set()

    def add(self, report: GraphReport) -> None:
        with self._lock:
            self.graphs.append(report)
        for op, reason in report.fallbacks:
            if (op, reason) not in self._warned:  # once per op and reason
                self._warned.add((op, reason))
                log.warning("dynamo-mlir: %s runs eagerly: %s", op, reason)

    def reset(self) -> None:
        with self._lock:
            self.graphs.clear()
            self._warned.clear()


REGISTRY = _Registry()


def stats() -> dict:
    """Counts over every graph compiled since the last reset()."""
    graphs = REGISTRY.graphs
    compiled = Counter(op for g in graphs for op in g.compiled_ops)
    fallback = Counter(op for g in graphs for op, _ in g.fallbacks)
    stage_seconds: Counter = Counter()
    for g in graphs:
        for p in g.partitions:
            stage_seconds.update(p.stage_seconds)
    return {
        "graphs": len(graphs),
        "graphs_by_kind": dict(Counter(g.kind for g in graphs)),
        "partitions": sum(len(g.partitions) for g in graphs),
        "partitions_failed": sum(1 for g in graphs for p in g.partitions if not p.compiled),
        "ops_compiled": sum(compiled.values()),
        "ops_fallback": sum(fallback.values()),
        "compiled_ops": dict(compiled),
        "fallback_ops": dict(fallback),
        "fallback_reasons": sorted({(op, r) for g in graphs for op, r in g.fallbacks}),
        "stage_seconds": dict(stage_seconds),
        "compile_seconds": sum(g.compile_seconds for g in graphs),
        "targets": sorted({g.target for g in graphs}),
    }


def explain() -> str:
    """A human-readable account of every compile since the last reset()."""
    lines = []
    for g in REGISTRY.graphs:
        lines.append(f"graph {g.name} ({g.kind}, target {g.target}): {len(g.partitions)} partition(s), "
                     f"{len(g.compiled_ops)} op(s) compiled, {len(g.fallbacks)} eager, {g.compile_seconds * 1e3:.0f} ms")
        for p in g.partitions:
            status = "compiled" if p.compiled else f"FAILED, ran eagerly: {p.error}"
            times = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in p.stage_seconds.items())
            lines.append(f"  partition {p.name}: {len(p.ops)} ops, {status}; {times}")
            for op, n in sorted(Counter(p.ops).items()):
                lines.append(f"    {op} x{n}")
        for op, reason in g.fallbacks:
            lines.append(f"  eager: {op}: {reason}")
    if not lines:
        return "dynamo-mlir: nothing compiled since the last reset()"
    return "\n".join(lines)


def reset() -> None:
    REGISTRY.reset()
