"""A small layered (Sugiyama-style) drawing of a dataflow graph as inline SVG.

Layers by longest path from the inputs (inputs pulled down next to their first use), order
within a layer by a few barycenter sweeps to cut crossings, edges as cubic curves. Good enough
for graphs of a few hundred nodes; the page scrolls for bigger ones.
"""

import html
import re

from .fxgraph import Graph, Node

NODE_H, LAYER_GAP, NODE_GAP, CHAR_W, PAD = 26, 34, 14, 7, 10

# node class -> fill, stroke (the legend in the report uses the same classes)
STYLES = {"placeholder": ("#eef2f7", "#8796a8"), "output": ("#eef2f7", "#8796a8"),
          "get_attr": ("#eef2f7", "#8796a8"), "call": ("#ffffff", "#5b6b7f"),
          "compiled": ("#e3f4e6", "#2e8b57"), "library": ("#fff4d6", "#b7791f"), "eager": ("#fde2e1", "#c0392b")}


def display_label(node: Node) -> str:
    if node.kind != "placeholder":
        return node.label
    # Dynamo's input names: L_self_modules_fc1_parameters_weight_ -> fc1.weight
    label = re.sub(r"^L_", "", node.label)
    label = label.replace("self_modules_", "")
    for part in ("_modules_", "_parameters_", "_buffers_"):
        label = label.replace(part, ".")
    return label.strip("_") or node.label


def layers(graph: Graph) -> dict[str, int]:
    preds = {n.name: n.inputs for n in graph.nodes}
    layer: dict[str, int] = {}
    for n in graph.nodes:  # the text is in topological order
        layer[n.name] = 1 + max((layer[p] for p in preds[n.name] if p in layer), default=-1)
    users: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    for n in graph.nodes:
        for p in n.inputs:
            users.setdefault(p, []).append(n.name)
    for n in graph.nodes:  # an input sits just above its first user, not all at the top
        if n.kind in ("placeholder", "get_attr") and users[n.name]:
            layer[n.name] = max(0, min(layer[u] for u in users[n.name]) - 1)
    return layer


def _order(graph: Graph, layer: dict[str, int], sweeps: int = 4) -> list[list[str]]:
    rows: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for n in graph.nodes:
        rows[layer[n.name]].append(n.name)
    preds = {n.name: n.inputs for n in graph.nodes}
    succs: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    for n in graph.nodes:
        for p in n.inputs:
            succs[p].append(n.name)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        neighbours = preds if down else succs
        indices = range(1, len(rows)) if down else range(len(rows) - 2, -1, -1)
        for i in indices:
            pos = {name: j for row in rows for j, name in enumerate(row)}
            rows[i].sort(key=lambda name: _barycenter(name, neighbours, pos))
    return rows


def _barycenter(name, neighbours, pos) -> float:
    around = [pos[m] for m in neighbours[name] if m in pos]
    return sum(around) / len(around) if around else pos[name]


def layout(graph: Graph) -> dict[str, tuple[float, float, float]]:
    """name -> (x, y, width) of each node's box."""
    rows = _order(graph, layers(graph))
    widths = {n.name: max(44, CHAR_W * len(display_label(n)) + 2 * PAD) for n in graph.nodes}
    row_width = [sum(widths[m] for m in row) + NODE_GAP * max(0, len(row) - 1) for row in rows]
    total = max(row_width, default=0)
    boxes = {}
    for i, row in enumerate(rows):
        x = (total - row_width[i]) / 2
        for name in row:
            boxes[name] = (x, i * (NODE_H + LAYER_GAP), widths[name])
            x += widths[name] + NODE_GAP
    return boxes


def render(graph: Graph, classes: dict[str, str] | None = None, title: str = "") -> str:
    """The graph as an <svg> element. classes: node name -> style class (compiled, eager, ...)."""
    classes = classes or {}
    boxes = layout(graph)
    margin = 8
    width = max((x + w for x, _, w in boxes.values()), default=0) + 2 * margin
    height = max((y + NODE_H for _, y, _ in boxes.values()), default=0) + 2 * margin
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="{-margin} {-margin} {width:.0f} {height:.0f}" role="img" aria-label="{html.escape(title)}">']
    for n in graph.nodes:
        for p in n.inputs:
            parts.append(_edge(boxes[p], boxes[n.name]))
    for n in graph.nodes:
        parts.append(_box(n, boxes[n.name], classes.get(n.name, n.kind)))
    parts.append("</svg>")
    return "\n".join(parts)


def _edge(src, dst) -> str:
    (x0, y0, w0), (x1, y1, w1) = src, dst
    sx, sy, dx, dy = x0 + w0 / 2, y0 + NODE_H, x1 + w1 / 2, y1
    bend = max(LAYER_GAP / 2, (dy - sy) / 2)
    return (f'<path class="edge" d="M{sx:.1f},{sy:.1f} C{sx:.1f},{sy + bend:.1f} {dx:.1f},{dy - bend:.1f} '
            f'{dx:.1f},{dy:.1f}" fill="none" stroke="#9aa5b1" stroke-width="1.2" marker-end="url(#arrow)"/>')


def _box(node: Node, box, style: str) -> str:
    x, y, w = box
    fill, stroke = STYLES.get(style, STYLES["call"])
    tip = "\n".join(filter(None, [node.name, node.target, node.type]))
    return (f'<g class="node {style}" data-name="{html.escape(node.name)}"><title>{html.escape(tip)}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{NODE_H}" rx="5" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x + w / 2:.1f}" y="{y + NODE_H / 2 + 4:.1f}" text-anchor="middle">'
            f'{html.escape(display_label(node))}</text></g>')


ARROW_DEFS = ('<svg width="0" height="0" style="position:absolute"><defs><marker id="arrow" viewBox="0 0 10 10" '
              'refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
              '<path d="M0,0 L10,5 L0,10 z" fill="#9aa5b1"/></marker></defs></svg>')
