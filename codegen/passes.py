"""Passes: running MLIR pass pipelines with a repro on failure (torch-mlir's
run_pipeline_with_repro), and named passes (`Pass`), upstream and Python alike, that a stage
lists and `run_passes` runs, times, checks and dumps one by one."""

import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from torch_mlir import ir, passmanager

log = logging.getLogger("dynamo_mlir")


class CompileError(RuntimeError):
    """A stage failed. Carries the stage, the op it failed on (when known) and a repro path."""

    def __init__(self, stage: str, message: str, repro: str | None = None, op: str | None = None):
        self.stage, self.repro, self.op, self.detail = stage, repro, op, message
        text = f"dynamo-mlir: stage '{stage}' failed"
        if op:
            text += f" on op '{op}'"
        text += f": {message}"
        if repro:
            text += f"\n  repro (input IR + pipeline): {repro}"
        super().__init__(text)


def save_repro(stage: str, module_text: str, pipeline: str, repro_dir: str | None) -> str:
    folder = repro_dir or os.path.join(tempfile.gettempdir(), "dynamo_mlir_repro")
    os.makedirs(folder, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"{stage}-", suffix=".mlir", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(f"// stage: {stage}\n// pipeline: {pipeline}\n")
        f.write(f"// reproduce: python -c \"from torch_mlir import ir, passmanager; ...\" or\n")
        f.write(f"//   torch-mlir-opt --pass-pipeline='{pipeline}' {os.path.basename(path)}\n")
        f.write(module_text)
    return path


def failing_op(message: str) -> str | None:
    """The op name an MLIR diagnostic points at ('dynamo.add', 'linalg.generic', ...), if any."""
    for token in message.replace("'", " ").replace('"', " ").split():
        if "." in token and token.split(".")[0] in ("dynamo", "linalg", "tensor", "arith", "math", "memref",
                                                     "func", "scf", "gpu", "nvvm", "llvm", "vector", "bufferization"):
            return token.strip(":,")
    return None


def run_pipeline(module: ir.Module, pipeline: str, stage: str, options=None) -> ir.Module:
    """Run `pipeline` (a comma-separated pass list, nested in builtin.module) in place."""
    text = f"builtin.module({pipeline})"
    before = module.operation.clone()  # printed only if the pipeline fails: a copy costs a tenth
    try:
        pm = passmanager.PassManager.parse(text, context=module.context)
        if options is not None and options.print_after_all:
            module.context.enable_multithreading(False)
            pm.enable_ir_printing()
        pm.run(module.operation)
    except Exception as e:
        repro = save_repro(stage, before.get_asm(enable_debug_info=True), text, getattr(options, "repro_dir", None))
        message = str(e)
        raise CompileError(stage, message, repro, failing_op(message)) from None
    finally:
        before.erase()
    return module


# ----------------------------------------------------------------------------- named passes


@dataclass(frozen=True)
class Pass:
    """A named rewrite of a module, upstream MLIR passes and Python rewrites alike.

    name: unique (the registry refuses a second pass of the same name); what dumps, timings and
    `dynamo-mlir dump --pass NAME` call it.
    run(module, options) -> the module it made, or anything else (a count, None): `module`
    rewritten in place; with `converts`, the stage's next artifact (e.g. the cuda target's
    CudaProgram), which ends the module's part of the stage: no pass may follow it there.
    options: the option fields it reads (core `Options` or the target's, by field name).
    enabled(options) -> bool: whether it runs in this compile (default: always).
    produces / consumes: the IR attributes (codegen/attributes.py) it sets / relies on.
    requires: passes that must have run before it in the same stage (checked by `run_passes`):
    the order a later pass depends on, declared instead of a convention.
    upstream: it runs MLIR's own passes, whose pass manager verifies the IR; a Python rewrite's
    result is verified by `run_passes` (invalid IR would crash the next upstream pass, and the
    process with it, where a verifier error fails the stage and the graph runs eagerly).
    """

    name: str
    run: Callable[[ir.Module, Any], ir.Module | None]
    doc: str
    options: tuple[str, ...] = ()
    enabled: Callable[[Any], bool] = field(default=lambda options: True, compare=False)
    produces: tuple[str, ...] = ()
    consumes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    converts: bool = False
    upstream: bool = False


_PASSES: dict[str, Pass] = {}


def register_pass(p: Pass) -> Pass:
    """Add `p` to the registry; a second pass of the same name is refused."""
    if p.name in _PASSES and _PASSES[p.name] is not p:
        raise ValueError(f"dynamo-mlir: a pass named '{p.name}' is registered already")
    _PASSES[p.name] = p
    return p


def get_pass(name: str) -> Pass:
    if name not in _PASSES:
        raise KeyError(f"dynamo-mlir: no pass named '{name}'; passes: {', '.join(sorted(_PASSES))}")
    return _PASSES[name]


def all_passes() -> dict[str, Pass]:
    return dict(_PASSES)


def python_pass(name: str, doc: str, **contract):
    """Decorator: register `fn(module, options)` as the pass `name`."""
    def wrap(fn):
        register_pass(Pass(name, fn, doc, **contract))
        return fn
    return wrap


def upstream(name: str, pipeline: str | Callable[[ir.Module, Any], str], doc: str, **contract) -> Pass:
    """A registered pass running upstream MLIR passes (`pipeline`: their textual list, or a
    function of the module and options returning it)."""
    def run(module, options):
        return run_pipeline(module, pipeline(module, options) if callable(pipeline) else pipeline, name, options)
    return register_pass(Pass(name, run, doc, upstream=True, **contract))


@dataclass
class PassRecord:
    name: str
    seconds: float
    path: str | None = None  # its dump, with options.dump_passes


def run_passes(module: ir.Module, passes: list[Pass], options, stage: str,
               check_requires: bool = True) -> tuple[ir.Module, list[PassRecord]]:
    """Run the enabled `passes` in order on `module`, as stage `stage`: each timed, its declared
    `requires` checked against what ran before it in this stage (not when one pass runs alone
    on IR that is already past them: `dynamo-mlir pass`), the IR printed after it with
    print_after_all and dumped with dump_passes (under dump_dir, one file a pass). A Python pass
    that raises fails the stage with the pass named and the module it started from saved."""
    ran, records, converted = set(), [], None
    for p in passes:
        if not p.enabled(options):
            continue
        if converted:
            raise CompileError(stage, f"pass '{p.name}' follows '{converted}', after which there is no module to rewrite")
        missing = [r for r in p.requires if r not in ran] if check_requires else []
        if missing:
            raise CompileError(stage, f"pass '{p.name}' requires {missing} to run before it in this stage")
        t0 = time.perf_counter()
        module = _run_one(p, module, options, stage)
        record = PassRecord(p.name, time.perf_counter() - t0)
        if getattr(options, "print_after_all", False):
            log.warning("// -----// IR Dump After %s (dynamo-mlir pass, stage %s) //----- //\n%s",
                        p.name, stage, artifact_text(module))
        if getattr(options, "dump_passes", False) and getattr(options, "dump_dir", None):
            record.path = _dump_pass(options, stage, len(records), p.name, module)
        records.append(record)
        ran.add(p.name)
        converted = p.name if p.converts else None
    return module, records


def artifact_text(artifact) -> str:
    """A module's IR, or what a converting pass made (its own text: a CudaProgram's device
    module with the host schedule as comments)."""
    return artifact.operation.get_asm() if hasattr(artifact, "operation") else str(artifact)


def _run_one(p: Pass, module: ir.Module, options, stage: str) -> ir.Module:
    try:
        result = p.run(module, options)
    except CompileError as e:  # an upstream pass failed: the stage's error, the pass named
        raise CompileError(stage, e.detail if e.detail.startswith("pass ") else f"pass '{p.name}': {e.detail}",
                           e.repro, e.op) from None
    except Exception as e:  # noqa: BLE001 - a Python pass's bug: name it (the driver saves the stage's input)
        raise CompileError(stage, f"pass '{p.name}': {type(e).__name__}: {e}", None, getattr(e, "op", None)) from e
    if p.converts:
        return result
    module = result if isinstance(result, ir.Module) else module  # else it rewrote `module` in place
    if not p.upstream:
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise CompileError(stage, f"pass '{p.name}' left invalid IR: {e}", None,
                               failing_op(str(e))) from None
    return module


def _dump_pass(options, stage: str, index: int, name: str, module: ir.Module) -> str:
    path = os.path.join(options.dump_dir, f"{options.graph_name or 'graph'}.{stage}.{index:02d}-{name}.mlir")
    os.makedirs(options.dump_dir, exist_ok=True)
    with open(path, "w") as f:
        f.write(f"// dynamo-mlir stage {stage}, after pass {name}\n{artifact_text(module)}")
    return path
