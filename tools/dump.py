"""`dynamo-mlir dump`: write every stage of every compiled graph, plus index.json / index.md."""

import contextlib
import logging
import os
import sys
import tempfile

from . import index as dump_index
from .errors import UsageError
from .model_loader import check_inputs, load_model
from .resume import resume
from .session import CompileRequest, chosen_target, compile_model, option_flags, resolve_target

log = logging.getLogger("dynamo_mlir")

DEFAULT_OUT = "dump"


def dump(model_spec: str, request: CompileRequest, from_stage: str | None = None,
         stop_after: str | None = None) -> dump_index.DumpIndex:
    """Compile `model_spec` (or resume an .mlir file, from `from_stage` up to `stop_after`) with
    dumps into request.dump_dir; index it."""
    os.makedirs(request.dump_dir, exist_ok=True)
    if model_spec.endswith(".mlir"):
        index = resume(model_spec, request, from_stage, stop_after)
    else:
        model = load_model(model_spec)
        check_inputs(model)
        result = compile_model(model, request)
        index = dump_index.build(request.dump_dir, result, model_spec, resolve_target(request.target))
    dump_index.write(request.dump_dir, index)
    return index


def check_stage(stage: str | None, target_name: str) -> None:
    known = dump_index.stage_order(resolve_target(target_name))
    if stage is not None and stage not in known:
        raise UsageError(f"unknown stage '{stage}' for target '{target_name}'; stages: {', '.join(known)}")


def run(args) -> int:
    options = option_flags(args.option)
    args.target = chosen_target(args.target, options)
    check_stage(args.stage, args.target)
    if args.after_each_pass:
        options["dump_passes"] = True
    if args.from_stage and not args.model.endswith(".mlir"):
        raise UsageError("--from applies to an .mlir file (a MODEL is compiled from the start)")
    out = args.out or (None if args.stage else DEFAULT_OUT)
    with contextlib.ExitStack() as stack:
        if out is None:  # --stage alone: the files are only a means to print one stage
            out = stack.enter_context(tempfile.TemporaryDirectory(prefix="dynamo-mlir-"))
        request = CompileRequest(args.target, out, args.train, args.dynamic, args.print_after_all, options)
        # Resuming with --stage stops there: what comes after it would not be printed anyway.
        index = dump(args.model, request, args.from_stage, args.stage)
        if args.stage:
            return print_stage(index, out, args.stage)
        print_summary(index, out)
    return 0


def print_stage(index: dump_index.DumpIndex, folder: str, stage: str) -> int:
    files = index.files_of_stage(stage)
    if not files:
        raise UsageError(f"nothing was dumped for stage '{stage}' (did every region fall back? "
                         "run `dynamo-mlir explain MODEL`)")
    for filename in files:
        if len(files) > 1:  # several graphs: say which is which, as a comment in every IR syntax
            sys.stdout.write(f"// ===== {filename}\n")
        _print_file(os.path.join(folder, filename))
    return 0


def _print_file(path: str) -> None:
    """A text stage as text; a binary stage (code object, executable) as its bytes."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        sys.stdout.write(data.decode())
    except UnicodeDecodeError:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)


def print_summary(index: dump_index.DumpIndex, folder: str) -> None:
    print(f"dynamo-mlir: dumped {index.model} (target {index.target}) to {folder} "
          f"in {index.compile_seconds:.1f} s")
    for unit in index.units:
        for stage, filename in unit.files.items():
            seconds = unit.seconds.get(stage)
            timing = f"{seconds * 1e3:8.1f} ms" if seconds is not None else ""
            print(f"  {os.path.normpath(os.path.join(folder, filename)):<60} {timing}")
    for unit in index.units:
        if unit.compiled is False:
            print(f"  ! partition {unit.name} ran eagerly: {unit.error}")
    for graph, op, why, n in dump_index.eager_ops(index):
        print(f"  ! {graph}: {op} (x{n}) ran eagerly: {why}")
    print(f"  index: {os.path.join(folder, dump_index.INDEX_MD)}, {os.path.join(folder, dump_index.INDEX_JSON)}")
