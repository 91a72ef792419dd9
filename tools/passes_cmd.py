"""`dynamo-mlir passes` (every named pass, where it runs and its contract) and `dynamo-mlir pass
NAME FILE.mlir` (one pass alone on a file: what IR tests run)."""

import json
import os

from torch_mlir import ir

from ..codegen import CompileError, config
from ..codegen.passes import all_passes, artifact_text, get_pass, run_passes
from ..codegen.target import all_targets
from ..dialects import new_context
from .errors import UsageError
from .session import option_flags, resolve_target


def _stages_of() -> dict[str, list[str]]:
    """pass name -> the target stages that list it (`cpu.loops`, ...)."""
    where: dict[str, list[str]] = {}
    for tname, target in sorted(all_targets().items()):
        for stage in target.stages:
            for p in stage.passes:
                where.setdefault(p.name, []).append(f"{tname}.{stage.name}")
    return where


def _in_stage_order() -> list:
    """Every registered pass: those of the targets' stages in the order they run, then the rest."""
    ordered = {}
    for _, target in sorted(all_targets().items()):
        for stage in target.stages:
            ordered.update({p.name: p for p in stage.passes})
    rest = sorted((p for name, p in all_passes().items() if name not in ordered), key=lambda p: p.name)
    return list(ordered.values()) + rest


def run_list(args) -> int:
    where = _stages_of()
    rows = [dict(name=p.name, stages=where.get(p.name, []), options=list(p.options), produces=list(p.produces),
                 consumes=list(p.consumes), requires=list(p.requires), doc=p.doc)
            for p in _in_stage_order()
            if not args.target or any(s.startswith(args.target + ".") for s in where.get(p.name, []))]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(f"{r['name']}  ({', '.join(r['stages']) or 'in no stage'})\n    {r['doc']}")
        for key in ("options", "produces", "consumes", "requires"):
            if r[key]:
                print(f"    {key}: {', '.join(r[key])}")
    return 0


def run_one(args) -> int:
    target = resolve_target(args.target)  # loads the targets, whose modules register their passes
    try:
        p = get_pass(args.name)
    except KeyError as e:
        raise UsageError(str(e.args[0]).removeprefix("dynamo-mlir: ") + " (see `dynamo-mlir passes`)") from None
    try:
        options = config.bind(config.resolve({**option_flags(args.option), "target": target.name}), target)
    except ValueError as e:
        raise UsageError(str(e).removeprefix("dynamo-mlir: ")) from None
    if not os.path.isfile(args.file):
        raise UsageError(f"no such file '{args.file}'; give an .mlir file holding the IR the pass takes")
    with open(args.file) as f:
        text = f.read()
    with new_context() as context, ir.Location.unknown(context):
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise UsageError(f"{args.file} does not parse: {str(e).splitlines()[1] if len(str(e).splitlines()) > 1 else e}") from None
        try:
            module, _ = run_passes(module, [p], options, "pass", check_requires=False)
        except CompileError as e:
            raise UsageError(str(e).removeprefix("dynamo-mlir: ")) from None
        print(artifact_text(module))
    return 0
