"""The `dynamo-mlir` command: dump, explain, report, ops, targets, passes, pass, cache, options.

Argument parsing and dispatch only; each subcommand lives in its own module. Every error the
user can fix (a bad MODEL, wrong inputs, an unparseable .mlir file) is one line on stderr and
exit code 2.
"""

import argparse
import importlib
import logging
import sys

from .errors import UsageError

MODEL_HELP = """\
MODEL is path/to/file.py:name (or package.module:name). name is one of:
  - a factory: a function with no arguments returning (callable, example_inputs),
      def mlp(): return MLP(), (torch.randn(8, 16),)
  - an nn.Module instance (or an nn.Module class built with no arguments) or a function of
    tensors; its example inputs are the first found of name.example_inputs, a module-level
    name_example_inputs, a module-level example_inputs (a tensor, a tuple, or a function
    returning one).
"""

DUMP_EPILOG = MODEL_HELP + """
MODEL may instead be an .mlir file of any stage written by a dump: compilation resumes after
that stage (found from its '// dynamo-mlir stage: NAME target: T' header or its file name
<graph>.<stage>.mlir).

Files are named <graph>.<stage>.<ext>: g0_dynamo.fx.txt (the graph Dynamo captured),
g1_forward.aten.txt (after AOTAutograd), g1_forward_fused_0.dynamo.mlir (our dialect), then one
file per stage of the target (see `dynamo-mlir targets`), and index.json / index.md.

Resuming with --stage runs the stages up to that one only; --from STAGE says which stage the
file holds when neither its header nor its name does (tests/ir/*.mlir run this way).

examples:
  dynamo-mlir dump tests/models_for_cli.py:mlp --out dump/
  dynamo-mlir dump tests/models_for_cli.py:mlp --stage linalg
  dynamo-mlir dump tests/models_for_cli.py:mlp --target cuda -O cuda_fuse_rows=false --stage gpu
  dynamo-mlir dump dump/g1_inference_fused_0.linalg.mlir --out resumed/
  dynamo-mlir dump ops.mlir --from dynamo --stage linalg
"""


def _model(p, resumable=False):
    what = "MODEL (see below)" + (", or an .mlir file to resume from" if resumable else "")
    p.add_argument("model", metavar="MODEL", help=what)


def _compile_flags(p):
    p.lists_options = True
    p.add_argument("--target", help="target name (default: -O target=NAME, else cpu; see `dynamo-mlir targets`)")
    p.add_argument("--train", action="store_true", help="also run backward, so the backward graph is compiled")
    p.add_argument("--dynamic", action="store_true", help="compile with symbolic dims (torch.compile dynamic=True)")
    p.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a torch.compile option, core or the target's (repeatable; `dynamo-mlir options` lists them)")


def _add_dump(p):
    _model(p, resumable=True)
    _compile_flags(p)
    p.add_argument("--out", "-o", metavar="DIR", help="folder for the dumps (default: ./dump, or none with --stage)")
    p.add_argument("--stage", metavar="NAME", help="print this stage's IR to stdout (fx, aten, dynamo, linalg, ...)")
    p.add_argument("--print-after-all", action="store_true", help="print the IR after every pass, MLIR and Python (stderr)")
    p.add_argument("--after-each-pass", action="store_true",
                   help="also write the IR after every named pass of a stage (<graph>.<stage>.<NN>-<pass>.mlir)")
    p.add_argument("--from", dest="from_stage", metavar="STAGE",
                   help="the stage an .mlir MODEL holds (default: from its header or file name)")


def _add_explain(p):
    _model(p)
    _compile_flags(p)
    p.add_argument("--json", action="store_true", help="print dynamo_mlir.stats() as JSON")


def _add_report(p):
    p.add_argument("model", metavar="MODEL", help="MODEL (see below), or a folder written by `dynamo-mlir dump`")
    _compile_flags(p)
    p.add_argument("--output", "-o", metavar="FILE", default="report.html", help="HTML file to write (default: report.html)")
    p.add_argument("--out", metavar="DIR", help="also keep the dump files in DIR")


def _add_ops(p):
    p.add_argument("--target", help="only this target (default: every registered target)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _add_targets(p):
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _add_passes(p):
    p.add_argument("--target", help="only the passes of this target's stages")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _add_pass(p):
    p.lists_options = True
    p.add_argument("name", metavar="NAME", help="a named pass (see `dynamo-mlir passes`)")
    p.add_argument("file", metavar="FILE", help="an .mlir file holding the IR the pass takes")
    p.add_argument("--target", default="cpu", help="the target whose options the pass reads (default: cpu)")
    p.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option, core or the target's (repeatable)")


def _add_options(p):
    p.add_argument("--target", help="only the core's and this target's options (default: every target's)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _byte_count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a byte count is >= 0, got {value}")
    return value


def _add_cache(p):
    p.add_argument("action", choices=("stats", "list", "clear", "prune"),
                   help="stats: entries and size; list: one line an entry; clear: remove every entry; "
                        "prune: if past the bound, remove the entries used longest ago, down to 80%% of it")
    p.add_argument("--max-bytes", type=_byte_count, metavar="N",
                   help="prune's bound in bytes, 0 for none (default: the cache_max_bytes option, "
                        "$DYNAMO_MLIR_CACHE_MAX_BYTES, else 4 GiB)")
    p.add_argument("--dir", metavar="DIR", help="the cache folder (default: the cache_dir option, "
                                               "$DYNAMO_MLIR_CACHE_DIR, else ~/.cache/dynamo-mlir)")
    p.add_argument("--json", action="store_true", help="machine-readable output (stats, list)")


# name -> (one-line help, epilog, add arguments, "module:function" that runs it)
COMMANDS = {
    "dump": ("write the IR of every stage of every compiled graph", DUMP_EPILOG, _add_dump, "dump:run"),
    "explain": ("graphs, partitions, ops compiled or run eagerly and why, time per stage", MODEL_HELP,
                _add_explain, "listing:run_explain"),
    "report": ("one self-contained HTML page: stages side by side, the graph as SVG, timings, fallbacks",
               MODEL_HELP, _add_report, "report_cmd:run"),
    "ops": ("the ATen ops imported and the dynamo ops each target accepts", None, _add_ops, "listing:run_ops"),
    "targets": ("the registered targets and their stage tables", None, _add_targets, "listing:run_targets"),
    "passes": ("every named pass in the order the stages run them: the stages, the options it reads, the "
               "attributes it sets and needs, the passes it requires before it", None, _add_passes,
               "passes_cmd:run_list"),
    "pass": ("run one named pass alone on an .mlir file and print the result (IR tests)", None, _add_pass,
             "passes_cmd:run_one"),
    "cache": ("the compile cache on disk: stats, list, clear, prune", None, _add_cache, "cache_cmd:run"),
    "options": ("every option: the core's and each target's, with its environment variable and default",
                None, _add_options, "listing:run_options"),
}


class _Parser(argparse.ArgumentParser):
    """--help of the command and of those that compile ends with every option, core and per
    target. The table needs the targets (and so MLIR) loaded: it is built only when help is
    printed, not on every run."""

    lists_options = False

    def format_help(self) -> str:
        if not self.lists_options:
            return super().format_help()
        from .listing import format_options, options_table

        return super().format_help() + "\noptions={...} keys (and DYNAMO_MLIR_<KEY> variables; -O KEY=VALUE):\n" \
            + format_options(options_table())


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dynamo-mlir", description="Inspect what the dynamo-mlir torch.compile backend does, stage by stage.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=MODEL_HELP)
    parser.lists_options = True
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, epilog, add_args, runner) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_args(p)
        p.set_defaults(runner=runner)
    return parser


def _runner(spec: str):
    module, function = spec.split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)


def _configure_logging(verbose: int) -> None:
    level = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(message)s")
    logging.getLogger("dynamo_mlir").setLevel(level)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    try:
        return _runner(args.runner)(args)
    except UsageError as e:
        print(f"dynamo-mlir {args.command}: error: {e}", file=sys.stderr)
        return UsageError.exit_code


if __name__ == "__main__":
    sys.exit(main())
