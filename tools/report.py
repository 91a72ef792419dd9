"""The HTML report: one self-contained page (inline CSS, JS and SVG, nothing fetched) built
from a dump folder and its index: fallbacks, time per stage, the captured graphs drawn, and the
IR of every stage, each beside the stage before it.
"""

import html
import logging
import os

from . import fxgraph, svg
from .report_assets import CSS, JS
from .index import FRONTEND_STAGES, DumpIndex, Unit, eager_ops

log = logging.getLogger("dynamo_mlir")

MAX_CHARS = 400_000  # per stage file: a huge IR would make the page unusable, not more useful
STAGE_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"]
def _esc(text) -> str:
    return html.escape(str(text))


def _read(folder: str, filename: str) -> str:
    path = os.path.join(folder, filename)
    try:
        with open(path) as f:
            text = f.read(MAX_CHARS + 1)
    except OSError as e:
        return f"(cannot read {filename}: {e})"
    except UnicodeDecodeError:  # a binary stage (code object, executable): not shown as text
        return f"(binary file, {os.path.getsize(path)} bytes: {filename})"
    if len(text) > MAX_CHARS:
        return text[:MAX_CHARS] + f"\n... (truncated at {MAX_CHARS} characters; see {filename})"
    return text


def _anchor(unit: str, stage: str) -> str:
    return f"ir-{unit}-{stage}"


def render(folder: str, index: DumpIndex) -> str:
    body = [_header(index), _fallbacks(index), _timing(index), _graphs(folder, index), _pipeline(folder, index)]
    title = f"dynamo-mlir report: {index.model}"
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_esc(title)}</title>"
            f"<style>{CSS}</style></head>\n<body data-ready=\"no\">{svg.ARROW_DEFS}\n"
            + "\n".join(body) + f"\n<script>{JS}</script></body></html>\n")


# ---- sections

def _header(index: DumpIndex) -> str:
    partitions = [u for u in index.units if u.kind == "partition"]
    failed = [u for u in partitions if u.compiled is False]
    eager = sum(n for _, _, _, n in eager_ops(index))
    badges = [("graphs", sum(1 for u in index.units if u.kind not in ("partition", "resumed")), ""),
              ("partitions", len(partitions), ""), ("failed partitions", len(failed), "bad" if failed else ""),
              ("library calls", sum(len(u.library_ops) for u in partitions if u.compiled), ""),
              ("eager ops", eager, "bad" if eager else "good"),
              ("graph breaks", sum(index.graph_breaks.values()), "bad" if index.graph_breaks else "")]
    options = ", ".join(f"{k}={v}" for k, v in index.options.items())
    return (f'<header><h1>dynamo-mlir report</h1><p class="meta"><code>{_esc(index.model)}</code> · target '
            f'<b>{_esc(index.target)}</b> · {_esc(options)} · compiled in {index.compile_seconds:.2f} s</p>'
            f'<p class="stages">{" → ".join(f"<span>{_esc(s)}</span>" for s in index.stages)}</p>'
            '<p class="badges">' + "".join(f'<span class="badge {cls}">{_esc(n)} {_esc(label)}</span>'
                                          for label, n, cls in badges) + "</p>"
            '<nav><a href="#fallbacks">fallbacks</a> <a href="#timing">time per stage</a> '
            '<a href="#graphs">graphs</a> <a href="#pipeline">IR by stage</a> '
            '<button id="expand-all">expand all</button> <button id="collapse-all">collapse all</button></nav></header>')


def _fallbacks(index: DumpIndex) -> str:
    rows = [(u.name, f"partition ({len(u.ops)} ops)", u.error) for u in index.units if u.compiled is False]
    rows += [(g, f"{op} (x{n})", why) for g, op, why, n in eager_ops(index)]
    rows += [("Dynamo", "graph break", f"{reason} (x{n})") for reason, n in index.graph_breaks.items()]
    if not rows:
        return '<section id="fallbacks"><h2>Fallbacks</h2><p class="good">None: every op was compiled.</p></section>'
    table = "".join(f'<tr class="fallback"><td>{_esc(g)}</td><td><code>{_esc(op)}</code></td><td>{_esc(why)}</td></tr>'
                    for g, op, why in rows)
    return (f'<section id="fallbacks" class="has-fallbacks"><h2>Fallbacks: {len(rows)} ran eagerly</h2>'
            f"<table><tr><th>graph</th><th>op</th><th>why</th></tr>{table}</table></section>")


def _timing(index: DumpIndex) -> str:
    timed = [u for u in index.units if u.seconds and u.kind in ("partition", "resumed")]
    stages = [s for s in index.stages + ["load"] if any(s in u.seconds for u in timed)]
    if not timed:
        return '<section id="timing"><h2>Time per stage</h2><p>No stage was timed.</p></section>'
    colors = {s: STAGE_COLORS[i % len(STAGE_COLORS)] for i, s in enumerate(stages)}
    longest = max(sum(u.seconds.get(s, 0) for s in stages) for u in timed) or 1.0
    head = "".join(f"<th>{_esc(s)}</th>" for s in stages)
    rows = []
    for u in timed:
        cells = "".join(f'<td class="num">{u.seconds[s] * 1e3:.1f}</td>' if s in u.seconds else "<td></td>"
                        for s in stages)
        bar = "".join(f'<span style="width:{100 * u.seconds[s] / longest:.2f}%;background:{colors[s]}" '
                      f'title="{_esc(s)}: {u.seconds[s] * 1e3:.1f} ms"></span>' for s in stages if s in u.seconds)
        total = sum(u.seconds.get(s, 0) for s in stages) * 1e3
        rows.append(f'<tr><td>{_esc(u.name)}</td>{cells}<td class="num">{total:.1f}</td>'
                    f'<td class="barcell"><div class="bar">{bar}</div></td></tr>')
    legend = "".join(f'<span class="key"><i style="background:{colors[s]}"></i>{_esc(s)}</span>' for s in stages)
    return (f'<section id="timing"><h2>Time per stage (ms)</h2><table class="timing"><tr><th>partition</th>{head}'
            f'<th>total</th><th></th></tr>{"".join(rows)}</table><p class="legend">{legend}</p></section>')


def _graph_classes(graph: fxgraph.Graph, unit: Unit, index: DumpIndex) -> dict[str, str]:
    eager = {op for op, _ in unit.fallbacks}
    regions = [u for u in index.units if u.parent == unit.name and u.compiled]
    library = {op for u in regions for op in u.library_ops}  # by op name: every mm, if one ran as a call
    compiled = {op for u in regions for op in u.ops} - library
    classes = {}
    for n in graph.nodes:
        op = fxgraph.aten_op(n.target)
        if n.kind == "call" and op in eager:
            classes[n.name] = "eager"
        elif n.kind == "call" and op in library:
            classes[n.name] = "library"
        elif n.kind == "call" and op in compiled:
            classes[n.name] = "compiled"
    return classes


def _graphs(folder: str, index: DumpIndex) -> str:
    figures = []
    for unit in index.units:
        stage = next((s for s in ("fx", "aten") if s in unit.files), None)
        if stage is None:
            continue
        nodes = 0
        try:
            graph = fxgraph.parse(_read(folder, unit.files[stage]))
            picture = svg.render(graph, _graph_classes(graph, unit, index) if stage == "aten" else {}, unit.name)
            nodes = len(graph.nodes)
        except Exception as e:  # a drawing problem must not cost the rest of the report
            log.warning("dynamo-mlir: cannot draw %s: %s", unit.files[stage], e)
            picture = f'<p class="bad">cannot draw this graph: {_esc(e)}</p>'
        what = "captured by Dynamo" if stage == "fx" else f"{unit.kind} graph after AOTAutograd (ATen)"
        figures.append(f'<figure class="graph-figure" data-unit="{_esc(unit.name)}"><figcaption><b>{_esc(unit.name)}</b>: '
                       f'{what}, {nodes} nodes</figcaption>'
                       f'<div class="scroll">{picture}</div></figure>')
    legend = ('<p class="legend"><span class="key"><i class="k-compiled"></i>compiled (generated code)</span>'
              '<span class="key"><i class="k-library"></i>library call</span>'
              '<span class="key"><i class="k-eager"></i>ran eagerly</span>'
              '<span class="key"><i class="k-input"></i>input / output</span></p>')
    return f'<section id="graphs"><h2>Graphs</h2>{legend}<div class="graph-row">{"".join(figures) or "<p>No graph was dumped.</p>"}</div></section>'


def _previous_stage(unit: Unit, stage: str, index: DumpIndex, last_fx: str | None) -> tuple[str, str] | None:
    """(unit, stage) this stage was made from, for the left-hand pane."""
    stages = list(unit.files)
    position = stages.index(stage)
    parent = index.unit(unit.parent) if unit.parent else None
    if position > 0:
        return unit.name, stages[position - 1]
    if parent and "aten" in parent.files:
        return parent.name, "aten"
    if stage == "aten" and unit.kind != "backward" and last_fx:
        return last_fx, "fx"
    return None


def _pipeline(folder: str, index: DumpIndex) -> str:
    sections, last_fx, opened = [], None, False
    for unit in index.units:
        if not unit.files:
            continue
        stages = []
        for stage, filename in unit.files.items():
            previous = _previous_stage(unit, stage, index, last_fx)
            # Open one real compiler stage up front, so the page shows the side-by-side view at once.
            is_open = (not opened and unit.kind in ("partition", "resumed") and previous is not None
                       and stage not in FRONTEND_STAGES)
            opened = opened or is_open
            stages.append(_stage(folder, unit, stage, filename, previous, is_open))
        if "fx" in unit.files:
            last_fx = unit.name
        state = " failed" if unit.compiled is False else ""
        note = f'<p class="bad">ran eagerly: {_esc(unit.error)}</p>' if unit.compiled is False else ""
        sections.append(f'<section class="unit{state}" data-unit="{_esc(unit.name)}"><h3>{_esc(unit.name)} '
                        f'<small>{_esc(unit.kind)}</small></h3>{note}{"".join(stages)}</section>')
    return f'<section id="pipeline"><h2>IR by stage</h2>{"".join(sections)}</section>'


def _stage(folder: str, unit: Unit, stage: str, filename: str, previous: tuple[str, str] | None,
           is_open: bool) -> str:
    seconds = unit.seconds.get(stage)
    timing = f" · {seconds * 1e3:.1f} ms" if seconds is not None else ""
    text = _read(folder, filename)
    lines = text.count("\n") + 1
    left = (f'<div class="pane"><h4>before: {_esc(previous[1])}</h4>'
            f'<pre class="prev" data-from="{_esc(_anchor(*previous))}"></pre></div>') if previous else ""
    return (f'<details class="stage" data-stage="{_esc(stage)}" data-unit="{_esc(unit.name)}"{" open" if is_open else ""}>'
            f'<summary><b>{_esc(stage)}</b> · <code>{_esc(filename)}</code> · {lines} lines{timing}</summary>'
            f'<div class="pair{" single" if not previous else ""}">{left}<div class="pane"><h4>{_esc(stage)}</h4>'
            f'<pre id="{_esc(_anchor(unit.name, stage))}">{_esc(text)}</pre></div></div></details>')
