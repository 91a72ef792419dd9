"""`dynamo-mlir report`: dump (or reuse a dump folder), then write the one-file HTML report."""

import contextlib
import os
import tempfile

from . import index as dump_index
from .dump import dump
from .errors import UsageError
from .report import render
from .session import CompileRequest, chosen_target, option_flags


def write_report(folder: str, index: dump_index.DumpIndex, output: str) -> str:
    page = render(folder, index)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        f.write(page)
    return output


def run(args) -> int:
    if os.path.isdir(args.model):
        if not os.path.isfile(os.path.join(args.model, dump_index.INDEX_JSON)):
            raise UsageError(f"'{args.model}' has no {dump_index.INDEX_JSON}; give a folder written by "
                             "`dynamo-mlir dump` or a MODEL")
        folder, index = args.model, dump_index.read(args.model)
        write_report(folder, index, args.output)
    else:
        with contextlib.ExitStack() as stack:
            folder = args.out or stack.enter_context(tempfile.TemporaryDirectory(prefix="dynamo-mlir-report-"))
            options = option_flags(args.option)
            request = CompileRequest(chosen_target(args.target, options), folder, args.train, args.dynamic, options=options)
            index = dump(args.model, request)
            write_report(folder, index, args.output)
    print(f"dynamo-mlir: wrote {args.output} ({len(index.units)} graphs/partitions, "
          f"{sum(len(u.files) for u in index.units)} stage files)")
    return 0
