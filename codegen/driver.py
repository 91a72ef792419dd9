"""The compiler driver: walks a target's stage table, timing each stage and dumping its IR.

The backend, the CLI and the `dump_dir` option all call `run_stages`, so what is dumped is
exactly what `torch.compile` ran.
"""

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from torch_mlir import ir

from . import config
from .passes import CompileError, run_passes, save_repro
from .target import Target

log = logging.getLogger("dynamo_mlir")


@dataclass
class StageRecord:
    name: str
    ext: str
    seconds: float
    text: str | bytes | None = None  # kept only when someone asked for the IR (bytes: a binary artifact)
    path: str | None = None
    passes: list = field(default_factory=list)  # PassRecords of a stage made of named passes


@dataclass
class StageRun:
    artifact: Any
    records: list[StageRecord] = field(default_factory=list)
    options: Any = None  # the options the stages ran with: bound to the target, naming the graph


def as_text(ir_value: Any) -> str:
    if hasattr(ir_value, "operation"):
        return ir_value.operation.get_asm()
    if isinstance(ir_value, (bytes, bytearray)):  # a repro names a binary input, it cannot hold it
        return f"// a binary artifact of {len(ir_value)} bytes (its stage's dump file holds it)\n"
    return str(ir_value)


def dump_content(artifact: Any) -> str | bytes:
    """What a stage's dump file holds: a stage whose artifact is bytes (an object file, a shared
    library) is dumped byte for byte, any other artifact as its text."""
    if isinstance(artifact, (bytes, bytearray)) or hasattr(artifact, "__bytes__"):
        return bytes(artifact)
    return as_text(artifact)


def run_stages(module: Any, target: Target, options, graph_name: str = "graph",
               keep_text: bool = False, start_after: str | None = None,
               observer: Callable[[StageRecord], None] | None = None, stop_after: str | None = None) -> StageRun:
    """Run `target`'s stages from the one after `start_after` (default: all) up to `stop_after`
    (default: the last) on `module`. Extra dumps need the last stage's artifact: only then."""
    stages = list(target.stages)
    names = [s.name for s in stages]
    if stop_after is not None:
        stages = stages[:names.index(stop_after) + 1]
    if start_after is not None:
        stages = stages[names.index(start_after) + 1:]
    options = config.replace(config.bind(options, target), graph_name=graph_name)
    dump_dir = options.dump_dir
    run = StageRun(module, options=options)
    for stage in stages:
        t0 = time.perf_counter()
        before = _snapshot(run.artifact)  # the repro if this stage fails
        try:
            with _context_of(run.artifact):
                if stage.passes:
                    run.artifact, pass_records = run_passes(run.artifact, list(stage.passes), options, stage.name)
                else:
                    run.artifact, pass_records = stage.run(run.artifact, options), []
        except CompileError as e:
            if e.repro is None:  # a Python pass failed: its stage's input is the repro
                e = CompileError(e.stage, e.detail, _save(before, stage, target, options), e.op)
            raise e from None
        except Exception as e:
            raise CompileError(stage.name, f"{type(e).__name__}: {e}", _save(before, stage, target, options),
                               getattr(e, "op", None)) from e
        finally:
            if hasattr(before, "erase"):
                before.erase()
        record = StageRecord(stage.name, stage.ext, time.perf_counter() - t0, passes=pass_records)
        if keep_text or dump_dir:
            record.text = dump_content(run.artifact)
        if dump_dir:
            record.path = write_dump(dump_dir, graph_name, stage.name, stage.ext, record.text, target.name)
        if observer:
            observer(record)
        log.debug("dynamo-mlir: %s: stage %s took %.1f ms", graph_name, stage.name, record.seconds * 1e3)
        run.records.append(record)
    if dump_dir and stop_after in (None, names[-1]):
        for name, (ext, fn) in target.extra_dumps.items():
            write_dump(dump_dir, graph_name, name, ext, _dump_view(fn, run.artifact, name))
    return run


def _snapshot(artifact):
    """What a failing stage's repro is made from: a copy of an MLIR module (printed only on
    failure; a copy costs a tenth of printing it), else the artifact's text."""
    return artifact.operation.clone() if hasattr(artifact, "operation") else as_text(artifact)


def _save(before, stage, target, options) -> str:
    text = before.get_asm(enable_debug_info=True) if hasattr(before, "get_asm") else before
    return save_repro(stage.name, text, f"python stage '{stage.name}' of target '{target.name}': {stage.doc}",
                      options.repro_dir)


def _dump_view(fn, artifact, name: str) -> str:
    """A dump-only view must never break a compile: on failure the file says why."""
    try:
        with _context_of(artifact):
            return fn(artifact)
    except Exception as e:
        log.warning("dynamo-mlir: could not produce the %s dump: %s", name, e)
        return f"; dynamo-mlir could not produce this view: {type(e).__name__}: {e}\n"


def _context_of(artifact):
    """Stages build IR: give them the module's MLIR context (and an unknown location)."""
    context = getattr(artifact, "context", None)
    if context is None:
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    stack.enter_context(context)
    stack.enter_context(ir.Location.unknown(context))
    return stack


def write_dump(folder: str, graph: str, stage: str, ext: str, text: str | bytes, target: str | None = None) -> str:
    """Write one stage's dump; bytes (a binary artifact) are written in binary mode, unchanged."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{graph}.{stage}.{ext}")
    if isinstance(text, bytes):
        with open(path, "wb") as f:
            f.write(text)
        return path
    with open(path, "w") as f:
        if ext == "mlir":  # lets `dynamo-mlir dump FILE.mlir` resume after this stage, on this target
            f.write(f"// dynamo-mlir stage: {stage}" + (f" target: {target}" if target else "") + "\n")
        f.write(text)
    return path
