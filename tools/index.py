"""The index of a dump folder: which graph and partition each `<graph>.<stage>.<ext>` file
belongs to, in stage order, with compile time per stage. Written as index.json and index.md.

Graph names come from the frontend: `g<N>_dynamo` for a graph Dynamo captured (stage `fx`),
`g<N>_<kind>` for an ATen graph after AOTAutograd (stage `aten`), `g<N>_<kind>_<partition>`
for each compiled region of it (stage `dynamo` and the target's stages).
"""

import json
import os
from dataclasses import asdict, dataclass, field

from ..codegen.target import Target

FRONTEND_STAGES = ["fx", "aten", "dynamo"]
INDEX_JSON, INDEX_MD = "index.json", "index.md"


@dataclass
class Unit:
    """One named graph or partition and its stage files (stage -> file name, in stage order)."""

    name: str
    kind: str  # "dynamo", "forward", "backward", "inference", "partition", "resumed"
    files: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    parent: str | None = None
    compiled: bool | None = None
    error: str | None = None
    ops: list[str] = field(default_factory=list)
    library_ops: list[str] = field(default_factory=list)  # the ops of `ops` run as library calls
    fallbacks: list[list[str]] = field(default_factory=list)  # [aten op, reason]


@dataclass
class DumpIndex:
    model: str
    target: str
    stages: list[str]
    units: list[Unit]
    options: dict = field(default_factory=dict)
    graph_breaks: dict[str, int] = field(default_factory=dict)
    compile_seconds: float = 0.0

    def files_of_stage(self, stage: str) -> list[str]:
        return [u.files[stage] for u in self.units if stage in u.files]

    def unit(self, name: str) -> Unit | None:
        return next((u for u in self.units if u.name == name), None)


def stage_order(target: Target) -> list[str]:
    return FRONTEND_STAGES + target.stage_names() + list(target.extra_dumps)


def split_name(filename: str) -> tuple[str, str] | None:
    """`g1_forward_fused_0.linalg.mlir` -> ("g1_forward_fused_0", "linalg")."""
    parts = filename.split(".")
    return (parts[0], parts[1]) if len(parts) == 3 else None


def scan(folder: str, since: float = 0.0) -> dict[str, dict[str, str]]:
    """unit name -> {stage: file} for the dump files in `folder` written at or after `since`."""
    found: dict[str, dict[str, str]] = {}
    for filename in sorted(os.listdir(folder)):
        named = split_name(filename)
        path = os.path.join(folder, filename)
        if named and os.path.isfile(path) and os.path.getmtime(path) >= since - 1.0:
            found.setdefault(named[0], {})[named[1]] = filename
    return found


def build(folder: str, result, model: str, target: Target) -> DumpIndex:
    """Index what one compile (a session.CompileResult) wrote to `folder`."""
    files = scan(folder, result.started)
    order = stage_order(target)
    units = []
    graph_names = {g.name for g in result.graphs}
    for name, staged in files.items():  # Dynamo's captured graphs: not in the stats registry
        if name not in graph_names and not any(name.startswith(g + "_") for g in graph_names):
            units.append(Unit(name, "dynamo", _ordered(staged, order)))
    for g in result.graphs:
        units.append(Unit(g.name, g.kind, _ordered(files.get(g.name, {}), order),
                          seconds={"total": g.compile_seconds},
                          fallbacks=[list(f) for f in g.fallbacks]))
        for p in g.partitions:
            name = f"{g.name}_{p.name}"
            units.append(Unit(name, "partition", _ordered(files.get(name, {}), order), dict(p.stage_seconds),
                              parent=g.name, compiled=p.compiled, error=p.error, ops=list(p.ops),
                              library_ops=list(p.library_ops)))
    request = result.request
    return DumpIndex(model, target.name, order, units,
                     {"train": request.train, "dynamic": request.dynamic, "ran_on": result.ran_on, **request.options},
                     result.graph_breaks, result.seconds)


def _ordered(staged: dict[str, str], order: list[str]) -> dict[str, str]:
    rank = {s: i for i, s in enumerate(order)}
    return dict(sorted(staged.items(), key=lambda kv: rank.get(kv[0], len(rank))))


# ---- writing and reading

def write(folder: str, index: DumpIndex) -> list[str]:
    json_path, md_path = os.path.join(folder, INDEX_JSON), os.path.join(folder, INDEX_MD)
    with open(json_path, "w") as f:
        json.dump(asdict(index), f, indent=1)
    with open(md_path, "w") as f:
        f.write(markdown(index))
    return [json_path, md_path]


def read(folder: str) -> DumpIndex:
    with open(os.path.join(folder, INDEX_JSON)) as f:
        data = json.load(f)
    data["units"] = [Unit(**u) for u in data["units"]]
    return DumpIndex(**data)


PARTITION_FAILED = "partition failed to compile"


def eager_ops(index: DumpIndex) -> list[tuple[str, str, str, int]]:
    """(graph, aten op, reason, count) of the ops that ran eagerly, duplicates counted once.

    Ops of a partition that failed as a whole are left out: the partition's own error says it.
    """
    counts: dict[tuple[str, str, str], int] = {}
    for u in index.units:
        for op, why in u.fallbacks:
            if not why.startswith(PARTITION_FAILED):
                counts[(u.name, op, why)] = counts.get((u.name, op, why), 0) + 1
    return [(g, op, why, n) for (g, op, why), n in counts.items()]


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.1f}"


def markdown(index: DumpIndex) -> str:
    lines = [f"# dynamo-mlir dump of `{index.model}`", "",
             f"target `{index.target}`, options {index.options}, compile {index.compile_seconds:.2f} s", "",
             "Stages, in order: " + " -> ".join(f"`{s}`" for s in index.stages), "",
             "| graph | kind | stage | file | ms |", "|---|---|---|---|---|"]
    for u in index.units:
        for stage, filename in u.files.items():
            lines.append(f"| {u.name} | {u.kind} | {stage} | [{filename}]({filename}) | {_ms(u.seconds.get(stage))} |")
    failed = [u for u in index.units if u.compiled is False]
    fallbacks = eager_ops(index)
    if failed or fallbacks:
        lines += ["", "## Ran eagerly", ""]
        lines += [f"- partition {u.name} failed to compile: {u.error}" for u in failed]
        lines += [f"- {graph}: `{op}` (x{n}): {why}" for graph, op, why, n in fallbacks]
    library = [u for u in index.units if u.library_ops]
    if library:
        lines += ["", "## Library calls (torch/cuBLAS/cuDNN, not our generated code)", ""]
        lines += [f"- {u.name}: " + ", ".join(f"`{op}` (x{u.library_ops.count(op)})" for op in sorted(set(u.library_ops)))
                  + ("" if u.compiled else " (had the region loaded)") for u in library]
    if index.graph_breaks:
        lines += ["", "## Graph breaks", ""] + [f"- {r} (x{n})" for r, n in index.graph_breaks.items()]
    return "\n".join(lines) + "\n"
