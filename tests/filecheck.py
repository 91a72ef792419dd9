"""A small FileCheck: `// CHECK:` lines matched in order against a text (the IR tests' checker).

LLVM's FileCheck binary is not installed anywhere the tests run, so the subset the IR tests use
is implemented here, with FileCheck's meaning:

  CHECK: pat       pat on a line at or after the previous match (after it, on the same line)
  CHECK-NEXT: pat  pat on the line right after the previous match's line
  CHECK-SAME: pat  pat on the previous match's line, after it
  CHECK-NOT: pat   pat nowhere between the previous match and the next positive match (or the end)
  CHECK-DAG: pat   a run of DAG lines matches in any order after the previous match
  CHECK-LABEL: pat as CHECK (no partitioning)

In a pattern, `{{re}}` is a Python regex, `[[NAME:re]]` captures what `re` matched as NAME and
`[[NAME]]` is the text captured before; the rest is literal, and a run of spaces matches any
run of horizontal whitespace. A prefix other than CHECK (`--prefix GPU`: `GPU:`, `GPU-NEXT:`,
...) lets one file check several outputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KINDS = ("NEXT", "SAME", "NOT", "DAG", "LABEL")
_TOKEN = re.compile(r"\{\{(.*?)\}\}|\[\[(\w+)(?::(.*?))?\]\]|[ \t]+")


class CheckFailure(AssertionError):
    pass


@dataclass
class Directive:
    kind: str  # "", or one of _KINDS
    pattern: str
    line: int  # 1-based, in the checks' file
    prefix: str = "CHECK"

    def __str__(self) -> str:
        return f"line {self.line}: {self.prefix}{'-' + self.kind if self.kind else ''}: {self.pattern}"


def directives(text: str, prefix: str = "CHECK", first_line: int = 1) -> list[Directive]:
    """The `// PREFIX[-KIND]: pattern` lines of `text`, in order."""
    found = []
    pattern = re.compile(rf"//\s*{re.escape(prefix)}(?:-({'|'.join(_KINDS)}))?:(.*)$")
    for number, line in enumerate(text.splitlines(), first_line):
        match = pattern.search(line)
        if match:
            found.append(Directive(match[1] or "", match[2].strip(), number, prefix))
    return found


def _regex(pattern: str, variables: dict[str, str]) -> re.Pattern:
    parts, defined, pos = [], set(), 0
    for token in _TOKEN.finditer(pattern):
        parts.append(re.escape(pattern[pos:token.start()]))
        regex, name, capture = token.groups()
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif name is not None and capture is not None:
            parts.append(f"(?P<{name}>{capture})")
            defined.add(name)
        elif name is not None:
            if name in defined:
                parts.append(f"(?P={name})")
            elif name in variables:
                parts.append(re.escape(variables[name]))
            else:
                raise CheckFailure(f"[[{name}]] is used before it is captured")
        else:
            parts.append(r"[ \t]+")
        pos = token.end()
    parts.append(re.escape(pattern[pos:]))
    return re.compile("".join(parts))


class _Cursor:
    """Where matching stands: (line index, column) in the output's lines."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.line, self.col = 0, 0
        self.variables: dict[str, str] = {}

    def find(self, d: Directive, start: tuple[int, int], end_line: int | None = None):
        """The first match of d at or after `start`, as (line, match), or None."""
        regex = _regex(d.pattern, self.variables)
        line, col = start
        last = len(self.lines) if end_line is None else min(end_line, len(self.lines))
        while line < last:
            match = regex.search(self.lines[line], col)
            if match:
                return line, match
            line, col = line + 1, 0
        return None

    def take(self, line: int, match: re.Match) -> None:
        self.variables.update({k: v for k, v in match.groupdict().items() if v is not None})
        self.line, self.col = line, match.end()


def _fail(d: Directive, why: str, cursor: _Cursor) -> CheckFailure:
    lo = max(0, cursor.line - 2)
    context = "\n".join(f"  {i + 1:4d} | {cursor.lines[i]}" for i in range(lo, min(len(cursor.lines), lo + 12)))
    return CheckFailure(f"{d}\n  {why}; the output from its line {cursor.line + 1}:\n{context}")


def check(output: str, checks: list[Directive]) -> None:
    """Raise CheckFailure naming the first directive `output` does not satisfy."""
    if not checks:
        raise CheckFailure("no check directives: a test must check something")
    cursor, pending_not, i = _Cursor(output), [], 0
    while i < len(checks):
        d = checks[i]
        if d.kind == "NOT":
            pending_not.append(d)
            i += 1
            continue
        group = [d]
        while d.kind == "DAG" and i + len(group) < len(checks) and checks[i + len(group)].kind == "DAG":
            group.append(checks[i + len(group)])
        start = (cursor.line, cursor.col)
        end = _match_group(cursor, group)
        _check_nots(cursor, pending_not, start, end)
        pending_not, i = [], i + len(group)
    _check_nots(cursor, pending_not, (cursor.line, cursor.col), (len(cursor.lines), 0))


def _match_group(cursor: _Cursor, group: list[Directive]) -> tuple[int, int]:
    """Match one positive directive (or a run of DAG ones); returns where the matches begin."""
    d, start = group[0], (cursor.line, cursor.col)
    if d.kind == "DAG":
        ends = []
        for dag in group:
            found = cursor.find(dag, start)
            if found is None:
                raise _fail(dag, "no match in any order after the previous match", cursor)
            cursor.variables.update({k: v for k, v in found[1].groupdict().items() if v is not None})
            ends.append((found[0], found[1].end()))
        cursor.line, cursor.col = max(ends)
        return start
    if d.kind == "NEXT":
        found = cursor.find(d, (cursor.line + 1, 0), cursor.line + 2)
        why = "not on the line after the previous match"
    elif d.kind == "SAME":
        found = cursor.find(d, start, cursor.line + 1)
        why = "not on the previous match's line after it"
    else:
        found = cursor.find(d, start)
        why = "no match after the previous match"
    if found is None:
        raise _fail(d, why, cursor)
    cursor.take(*found)
    return found[0], found[1].start()


def _check_nots(cursor: _Cursor, nots: list[Directive], start: tuple[int, int], end: tuple[int, int]) -> None:
    for d in nots:
        found = cursor.find(d, start, end[0] + 1)
        if found is not None and (found[0], found[1].start()) < end:
            cursor.line = found[0]
            raise _fail(d, f"found on line {found[0] + 1}, where it must not be", cursor)
