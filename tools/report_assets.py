"""The report's CSS and JavaScript, inlined into every page (no network, no package data files)."""

CSS = """
:root { --bad: #c0392b; --good: #2e8b57; --line: #d5dbe3; --soft: #f5f7fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 24px 40px; color: #1f2933; }
header { border-bottom: 1px solid var(--line); padding: 8px 0; }
h1 { font-size: 20px; margin: 4px 0; } h2 { font-size: 17px; margin: 22px 0 8px; } h3 { font-size: 15px; margin: 16px 0 6px; }
h3 small { color: #6b7785; font-weight: normal; }
.meta, .stages { margin: 2px 0; color: #52606d; }
.stages span { background: var(--soft); border: 1px solid var(--line); border-radius: 4px; padding: 0 5px; font-family: monospace; }
.badge { display: inline-block; margin-right: 6px; padding: 1px 8px; border-radius: 10px; background: var(--soft); border: 1px solid var(--line); }
.badge.bad, .bad { color: var(--bad); } .badge.bad { border-color: var(--bad); background: #fdecea; }
.badge.good, .good { color: var(--good); }
nav a { margin-right: 10px; } nav button { font-size: 12px; }
table { border-collapse: collapse; } th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fallback td { background: #fdecea; } .has-fallbacks h2 { color: var(--bad); }
.barcell { width: 320px; } .bar { display: flex; height: 12px; width: 300px; background: var(--soft); }
.bar span { display: block; height: 100%; }
.legend .key { margin-right: 12px; } .legend i { display: inline-block; width: 11px; height: 11px; margin-right: 4px; vertical-align: -1px; border: 1px solid #8796a8; }
.k-compiled { background: #e3f4e6; } .k-library { background: #fff4d6; } .k-eager { background: #fde2e1; } .k-input { background: #eef2f7; }
.graph-row { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-start; }
.graph-figure { flex: 0 1 auto; max-width: 100%; margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 6px; }
.scroll { overflow: auto; max-height: 640px; }
svg.graph text { font: 12px monospace; fill: #1f2933; }
svg.graph g.eager rect { stroke-width: 2; }
.unit { border-left: 3px solid var(--line); padding-left: 10px; } .unit.failed { border-left-color: var(--bad); }
details.stage { margin: 4px 0; border: 1px solid var(--line); border-radius: 5px; }
details.stage > summary { cursor: pointer; padding: 4px 8px; background: var(--soft); }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; padding: 6px; }
.pair.single { grid-template-columns: 1fr; }
.pane { min-width: 0; } .pane h4 { margin: 0 0 4px; font-size: 12px; color: #52606d; }
pre { margin: 0; max-height: 520px; overflow: auto; background: #fbfcfd; border: 1px solid var(--line); padding: 6px; font: 12px/1.35 monospace; }
"""

# Fills each left-hand pane from the stage before it when a section opens (each IR is in the page
# once), and marks the page ready so a headless browser test can tell the script ran.
JS = """
(function () {
  function fill(details) {
    var left = details.querySelector('pre.prev');
    if (!left || left.dataset.filled) return;
    var source = document.getElementById(left.dataset.from);
    left.textContent = source ? source.textContent : '(not dumped)';
    left.dataset.filled = '1';
  }
  var stages = document.querySelectorAll('details.stage');
  stages.forEach(function (d) {
    d.addEventListener('toggle', function () { if (d.open) fill(d); });
    if (d.open) fill(d);
  });
  function setAll(open) { stages.forEach(function (d) { d.open = open; if (open) fill(d); }); }
  document.getElementById('expand-all').addEventListener('click', function () { setAll(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { setAll(false); });
  document.body.dataset.stages = String(stages.length);
  document.body.dataset.ready = 'ok';
  document.title = document.title + ' (' + stages.length + ' stages)';
})();
"""
