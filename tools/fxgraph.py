"""Read a dumped FX graph (`GraphModule.print_readable()` text: the `fx` and `aten` stages) back
into nodes and edges, for drawing.

The report is built from the dump folder alone, so it can be regenerated from any dump; the
readable text is regular enough for that (one `name: "type" = expr;  dead = None` per line).
Only the top-level `forward` is read; nested submodules are drawn as the call that uses them.
"""

import re
from dataclasses import dataclass, field

_ASSIGN = re.compile(r'^(?P<name>\w+)(?:\s*:\s*"(?P<type>[^"]*)")?\s*=\s*(?P<expr>.+)$')
_CALL = re.compile(r"^(?P<target>[\w.]+)\((?P<args>.*)\)$")
_INDEX = re.compile(r"^(?P<base>\w+)\[(?P<args>.*)\]$")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_OPERATOR = re.compile(r"(\*\*|//|[-+*/@%<>]=?|==|!=)")


@dataclass
class Node:
    name: str
    label: str  # short: the op name (mm, linear, +)
    kind: str  # placeholder, call, output, get_attr
    target: str = ""  # full: torch.ops.aten.mm.default
    type: str = ""  # f32[8, 16]
    inputs: list[str] = field(default_factory=list)


@dataclass
class Graph:
    nodes: list[Node]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


def parse(text: str) -> Graph:
    nodes: dict[str, Node] = {}
    aliases: dict[str, str] = {}  # `l_x_ = L_x_`: Dynamo renames inputs; draw them as one node
    for line in _forward_body(text, nodes):
        stmt = line.split(";")[0].strip()
        if stmt.startswith("return"):
            names = _names_in(stmt[len("return"):], nodes, aliases)
            nodes["output"] = Node("output", "output", "output", inputs=names)
            continue
        match = _ASSIGN.match(stmt)
        if not match or match["expr"].strip() == "None":
            continue
        name, expr = match["name"], match["expr"].strip()
        if re.fullmatch(r"\w+", expr) and expr in nodes:
            aliases[name] = aliases.get(expr, expr)
            continue
        nodes[name] = _expression_node(name, match["type"] or "", expr, nodes, aliases)
    return Graph(list(nodes.values()))


def _forward_body(text: str, nodes: dict[str, Node]):
    """Yield the statements of the top-level forward; its parameters become placeholders."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("    def forward(")), None)
    if start is None:
        return
    header = lines[start][len("    def forward("):].rsplit(")", 1)[0]
    for param in _split_top_level(header)[1:]:  # [0] is self
        name, _, kind = param.partition(":")
        nodes[name.strip()] = Node(name.strip(), name.strip(), "placeholder", type=kind.strip().strip('"'))
    for line in lines[start + 1:]:
        if line.strip() and not line.startswith("        "):
            break  # dedent: the end of forward (a nested class may follow)
        if line.startswith("        ") and not line.startswith("         ") and not line.strip().startswith("#"):
            yield line


def _split_top_level(params: str) -> list[str]:
    """Split on commas outside quotes and brackets: `a: "f32[8, 16]", b` -> two parameters."""
    parts, depth, quoted, current = [], 0, False, []
    for ch in params:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        if ch == "," and depth == 0 and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _names_in(expr: str, nodes: dict[str, Node], aliases: dict[str, str]) -> list[str]:
    expr = re.sub(r'"[^"]*"', "", expr)
    found = []
    for ident in _IDENT.findall(expr):
        ident = aliases.get(ident, ident)
        if ident in nodes and ident not in found:
            found.append(ident)
    return found


def _expression_node(name: str, type_: str, expr: str, nodes, aliases) -> Node:
    call, index = _CALL.match(expr), _INDEX.match(expr)
    if expr.startswith("self."):
        return Node(name, expr[len("self."):].split(".")[-1], "get_attr", expr, type_)
    if call:
        target = call["target"]
        receiver, _, method = target.rpartition(".")
        inputs = _names_in(call["args"], nodes, aliases)
        if receiver in nodes or receiver in aliases:  # a method call: x.view(...)
            inputs = _names_in(receiver, nodes, aliases) + inputs
        return Node(name, short_label(target), "call", target, type_, inputs)
    if index:
        return Node(name, "getitem", "call", expr, type_, _names_in(expr, nodes, aliases))
    operators = _OPERATOR.findall(expr)
    return Node(name, " ".join(dict.fromkeys(operators)) or "expr", "call", expr, type_, _names_in(expr, nodes, aliases))


def short_label(target: str) -> str:
    """torch.ops.aten.mm.default -> mm; torch._C._nn.linear -> linear; x.view -> view."""
    parts = target.split(".")
    if parts[:2] == ["torch", "ops"] and len(parts) >= 4:
        return parts[3] if parts[-1] == "default" else f"{parts[3]}.{parts[-1]}"
    return parts[-1]


def aten_op(target: str) -> str:
    """torch.ops.aten.mm.default -> aten.mm.default, the name stats and explain() use."""
    return target[len("torch.ops."):] if target.startswith("torch.ops.") else target
