"""Resume compilation from an `.mlir` file of any stage.

The stage (and target) come from the header comment a dump carries,
`// dynamo-mlir stage: linalg target: cpu`, or else from the file name `<graph>.<stage>.mlir`.
The stages after it are run by the same driver as `torch.compile` runs them.
"""

import logging
import os
import re
import time
from dataclasses import dataclass

from ..codegen import CompileError, config, driver
from ..dialects import new_context
from .errors import UsageError
from .index import DumpIndex, Unit, split_name, stage_order
from .session import CompileRequest, compile_options, resolve_target

log = logging.getLogger("dynamo_mlir")

_HEADER = re.compile(r"//\s*dynamo-mlir\s+stage:\s*(?P<stage>[\w-]+)(?:\s+target:\s*(?P<target>[\w-]+))?")


@dataclass
class MlirInput:
    path: str
    graph: str
    stage: str
    target: str | None  # from the header, when the dump recorded it


def identify(path: str, stage: str | None = None) -> MlirInput:
    """Which stage (and target) `path` holds: `stage` when given (the CLI's --from), else its
    header, else its name."""
    if not os.path.isfile(path):
        raise UsageError(f"no such file '{path}'; give an .mlir file written by `dynamo-mlir dump`")
    with open(path) as f:
        head = f.read(4096)
    named = split_name(os.path.basename(path))
    graph = named[0] if named else os.path.basename(path).split(".")[0]
    match = _HEADER.search(head)
    if stage is not None:
        return MlirInput(path, graph, stage, match["target"] if match else None)
    if match:
        return MlirInput(path, graph, match["stage"], match["target"])
    if named:
        return MlirInput(path, graph, named[1], None)
    raise UsageError(f"cannot tell which stage '{path}' is: name it <graph>.<stage>.mlir "
                     "(e.g. g1_forward_fused_0.linalg.mlir) or start it with '// dynamo-mlir stage: linalg'")


def resumable_stages(target) -> list[str]:
    """Stages whose output is an MLIR module: `dynamo` and the target's `.mlir` stages."""
    return ["dynamo"] + [s.name for s in target.stages if s.ext == "mlir"]


def resume(path: str, request: CompileRequest, from_stage: str | None = None,
           stop_after: str | None = None) -> DumpIndex:
    """Run the stages after the one `path` holds, up to `stop_after` (a stage of the target;
    default: all), with the request's options; dump them into request.dump_dir."""
    source = identify(path, from_stage)
    target = resolve_target(source.target or request.target or "cpu")
    if source.stage not in resumable_stages(target):
        raise UsageError(f"cannot resume from stage '{source.stage}' of target '{target.name}': "
                         f"resume from one of {', '.join(resumable_stages(target))}")
    module = _parse(source.path)
    options = config.resolve(compile_options(request, target))
    start_after = None if source.stage == "dynamo" else source.stage
    stop_after = stop_after if stop_after in target.stage_names() else None
    t0 = time.perf_counter()
    try:
        run = driver.run_stages(module, target, options, source.graph, start_after=start_after,
                                stop_after=stop_after)
    except CompileError as e:
        raise UsageError(f"resuming '{path}' from stage '{source.stage}' failed: {str(e).splitlines()[0]}") from None
    dump_dir = request.dump_dir
    unit = Unit(source.graph, "resumed", {source.stage: os.path.relpath(source.path, dump_dir)},
                {r.name: r.seconds for r in run.records})
    unit.files.update({r.name: os.path.basename(r.path) for r in run.records if r.path})
    for name, (ext, _) in target.extra_dumps.items():
        if os.path.isfile(os.path.join(dump_dir, f"{source.graph}.{name}.{ext}")):
            unit.files[name] = f"{source.graph}.{name}.{ext}"
    return DumpIndex(path, target.name, stage_order(target), [unit],
                     {"resumed_from": source.stage, **request.options},
                     compile_seconds=time.perf_counter() - t0)


def _parse(path: str):
    from torch_mlir import ir

    context = new_context()
    with open(path) as f:
        text = f.read()
    try:
        return ir.Module.parse(text, context)
    except Exception as e:  # MLIRError: the first diagnostic says where
        detail = " ".join(str(e).split())[:300]
        raise UsageError(f"cannot parse '{path}' as MLIR: {detail}; give an unmodified dump "
                         "(parsed with the dynamo dialect loaded)") from None
