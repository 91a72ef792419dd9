"""IR tests: every `tests/ir/*.mlir` file, run through the `dynamo-mlir` CLI to one stage and
checked against its `// CHECK:` lines (tests/filecheck.py), so adding a test is adding a file.

The other tiers check numerics end to end through Dynamo and AOTAutograd; these pin what one
lowering rule or one pipeline stage makes, on a few lines of IR, in milliseconds, without torch
tracing anything: a change to the IR a rule emits shows up here, named, even when the numbers
stay right.

File format (mlir-opt/lit's, cut down):

  // RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
  // RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage gpu | check --prefix GPU

- RUN lines (at the top) are `dynamo-mlir` command lines run in-process (`%s` is the case's
  input); `| check [--prefix P]` checks the command's stdout against the case's `P:` lines
  (default CHECK). `not dynamo-mlir ...` expects the command to fail, and checks its stderr.
- `// -----` splits the file into cases, each run separately (mlir-opt's --split-input-file);
  a RUN line applies to the cases that have check lines for its prefix, and a case must have
  some. A case's line numbers are the file's, so MLIR's diagnostics point into the file.

Test files are named by op family, so that they survive renames of the rule files:
RULE_TESTS maps each lowering/rules/*.py file whose name is not a test file's to its tests.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import shlex
from dataclasses import dataclass

import pytest

from dynamo_mlir.tools import cli
from filecheck import CheckFailure, Directive, check, directives

IR_DIR = os.path.join(os.path.dirname(__file__), "ir")
RULES_DIR = os.path.join(os.path.dirname(__file__), "..", "lowering", "rules")
# lowering/rules/<file>.py -> the tests/ir/<family>.mlir files that cover it (where not the same name).
RULE_TESTS = {"common": ["sizes", "matmul"]}
SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)
RUN = re.compile(r"^//\s*RUN:(.*)$", re.MULTILINE)


@dataclass
class Run:
    argv: list[str]  # after `dynamo-mlir`, with %s still in it
    prefix: str
    expect_failure: bool


@dataclass
class Case:
    path: str
    first_line: int  # of the case's text in the file
    text: str
    runs: list[Run]

    @property
    def id(self) -> str:
        return f"{os.path.basename(self.path)}:{self.first_line}"


def parse_run(line: str, where: str) -> Run:
    command, bar, checker = line.partition("|")
    argv, words = shlex.split(command), shlex.split(checker)
    expect_failure = argv[:1] == ["not"]
    argv = argv[1:] if expect_failure else argv
    if argv[:1] != ["dynamo-mlir"] or "%s" not in argv or not bar or words[:1] != ["check"]:
        raise ValueError(f"{where}: a RUN line is `[not] dynamo-mlir ... %s ... | check [--prefix P]`: {line!r}")
    prefix = words[words.index("--prefix") + 1] if "--prefix" in words else "CHECK"
    return Run(argv[1:], prefix, expect_failure)


def cases_of(path: str) -> list[Case]:
    with open(path) as f:
        text = f.read()
    if not text.startswith("// RUN:"):
        raise ValueError(f"{path}: an IR test starts with its // RUN: line(s)")
    runs = [parse_run(m[1], path) for m in RUN.finditer(text)]
    cases, start, line = [], 0, 1
    for sep in [*SPLIT.finditer(text), None]:
        end = sep.start() if sep else len(text)
        cases.append(Case(path, line, text[start:end], runs))
        if sep:
            line += text[start:sep.end()].count("\n")
            start = sep.end()
    return cases


def all_cases() -> list[Case]:
    return [case for path in sorted(glob.glob(os.path.join(IR_DIR, "*.mlir"))) for case in cases_of(path)]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return code, out.getvalue(), err.getvalue()


def run_case(case: Case, folder: str) -> int:
    """Run every RUN line that has checks in this case; returns how many ran."""
    source = os.path.join(folder, f"{os.path.splitext(os.path.basename(case.path))[0]}_{case.first_line}.mlir")
    with open(source, "w") as f:  # padded: diagnostics' line numbers are the file's
        f.write("\n" * (case.first_line - 1) + case.text)
    ran = 0
    for run in case.runs:
        checks = directives(case.text, run.prefix, case.first_line)
        if not checks:
            continue
        argv = [source if a == "%s" else a for a in run.argv]
        code, out, err = run_cli(argv)
        command = "dynamo-mlir " + " ".join(run.argv)
        if (code != 0) != run.expect_failure:
            raise CheckFailure(f"{case.id}: `{command}` exited {code}\n{err}")
        try:
            check(err if run.expect_failure else out, checks)
        except CheckFailure as e:
            raise CheckFailure(f"{case.id}: `{command} | check --prefix {run.prefix}`\n{e}") from None
        ran += 1
    return ran


CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_ir(case, tmp_path):
    assert run_case(case, str(tmp_path)) > 0, f"{case.id}: no RUN line has check lines in this case"


# ---- the checker itself must be able to fail


IR = """\
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %arg0, %arg0 : f32
  %1 = arith.mulf %0, %0 : f32
  return %1 : tensor<4xf32>
}"""


def _checks(*lines: str) -> list[Directive]:
    return directives("\n".join(lines))


@pytest.mark.parametrize("lines", [
    ["// CHECK: func.func @main", "// CHECK: arith.addf", "// CHECK-NEXT: arith.mulf", "// CHECK: return"],
    ["// CHECK: [[X:%[0-9]+]] = arith.addf", "// CHECK: arith.mulf [[X]], [[X]]"],
    ["// CHECK: @main(", "// CHECK-SAME: tensor<{{[0-9]+}}xf32>"],
    ["// CHECK-NOT: arith.subf", "// CHECK: arith.addf", "// CHECK-NOT: arith.addf"],
    ["// CHECK-DAG: arith.mulf", "// CHECK-DAG: arith.addf", "// CHECK: return"],
    ["// CHECK: %0   =   arith.addf"],
])
def test_checker_accepts(lines):
    check(IR, _checks(*lines))


@pytest.mark.parametrize("lines,why", [
    (["// CHECK: arith.mulf", "// CHECK: arith.addf"], "no match after the previous match"),
    (["// CHECK: func.func", "// CHECK-NEXT: arith.mulf"], "not on the line after"),
    (["// CHECK: arith.addf", "// CHECK-SAME: tensor"], "not on the previous match's line"),
    (["// CHECK: arith.addf", "// CHECK-NOT: arith.mulf", "// CHECK: return"], "where it must not be"),
    (["// CHECK: [[X:%[0-9]+]] = arith.mulf", "// CHECK: arith.addf [[X]]"], "no match"),
    (["// CHECK: arith.subf"], "no match"),
    ([], "must check something"),
])
def test_checker_rejects(lines, why):
    with pytest.raises(CheckFailure, match=why):
        check(IR, _checks(*lines))


def test_every_rule_file_has_an_ir_test():
    """A rule file is covered by the test file of its name, or by those RULE_TESTS names."""
    for path in glob.glob(os.path.join(RULES_DIR, "*.py")):
        name = os.path.splitext(os.path.basename(path))[0]
        if name == "__init__":
            continue
        tests = RULE_TESTS.get(name, [name])
        missing = [t for t in tests if not os.path.isfile(os.path.join(IR_DIR, f"{t}.mlir"))]
        assert not missing, f"lowering/rules/{name}.py: no tests/ir/{missing[0]}.mlir (see RULE_TESTS)"
