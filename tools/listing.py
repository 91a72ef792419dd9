"""`dynamo-mlir ops`, `dynamo-mlir targets`, `dynamo-mlir options` and `dynamo-mlir explain`."""

import json

from ..codegen import all_targets, config
from .model_loader import check_inputs, load_model
from .session import CompileRequest, chosen_target, compile_model, option_flags, resolve_target


def _registries():
    # Importing the backend registers the ATen import rules; lowering registers its rules.
    from ..dialects import all_ops
    from ..frontend import backend  # noqa: F401
    from ..frontend.registry import imported_ops
    from ..lowering import lowered_ops

    return imported_ops, lowered_ops, [op.OPERATION_NAME for op in all_ops()]


def ops_table(target_names: list[str]) -> dict:
    imported_ops, lowered_ops, dialect_ops = _registries()
    table = {"aten": imported_ops(), "dialect": sorted(dialect_ops), "targets": {}}
    for name in target_names:
        target = resolve_target(name)
        lowered = set(lowered_ops(name)) - set(target.unsupported_ops)
        table["targets"][name] = {"accepted": sorted(lowered & set(dialect_ops)),
                                  "not_accepted": sorted(set(dialect_ops) - lowered)}
    return table


def run_ops(args) -> int:
    names = [args.target] if args.target else sorted(all_targets())
    table = ops_table(names)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    packets = sorted({op.rsplit(".", 1)[0] for op in table["aten"]})  # aten.add.Tensor -> aten.add
    print(f"ATen ops imported into the dynamo dialect, after decompositions: {len(packets)} ops "
          f"({len(table['aten'])} overloads; --json lists them):")
    print(_columns(packets))
    for name, ops in table["targets"].items():
        print(f"\ntarget {name}: accepts {len(ops['accepted'])} of {len(table['dialect'])} dynamo ops:")
        print(_columns(ops["accepted"]))
        if ops["not_accepted"]:
            print(f"  not accepted (run eagerly): {', '.join(ops['not_accepted'])}")
    return 0


def _columns(names: list[str], width: int = 100) -> str:
    if not names:
        return "  (none)"
    cell = min(max(len(n) for n in names), 26) + 2  # a rare long name may push its row, not widen all
    per_line = max(1, (width - 2) // cell)
    rows = [names[i:i + per_line] for i in range(0, len(names), per_line)]
    return "\n".join("  " + "".join(n.ljust(cell - 2) + "  " for n in row).rstrip() for row in rows)


def targets_table() -> list[dict]:
    rows = []
    for name, t in sorted(all_targets().items()):
        rows.append({"name": name, "device_type": t.device_type, "serves": list(t.served_device_types()),
                     "available": bool(t.available()),
                     "stages": [f"{s.name}.{s.ext}" for s in t.stages],
                     "extra_dumps": [f"{n}.{ext}" for n, (ext, _) in t.extra_dumps.items()], "doc": t.doc})
    return rows


def run_targets(args) -> int:
    rows = targets_table()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        here = "available here" if row["available"] else "not available here (stages can still be dumped)"
        chosen = (f"chosen for {'/'.join(row['serves'])} tensors" if row["serves"]
                  else "chosen only by options={'target': ...}")
        print(f"{row['name']}  (device {row['device_type']}, {chosen}, {here})")
        print(f"  {row['doc']}")
        print(f"  stages: fx.txt -> aten.txt -> dynamo.mlir -> {' -> '.join(row['stages'])}")
        if row["extra_dumps"]:
            print(f"  also dumped: {', '.join(row['extra_dumps'])}")
    return 0


def options_table(target: str | None = None) -> dict[str, list[dict]]:
    """'core' and each target (or only `target`) -> its options, from the one option table."""
    if target is not None:
        resolve_target(target)
    return {owner: cls.describe() for owner, cls in config.option_sets().items()
            if owner == "core" or target in (None, owner)}


def format_options(table: dict[str, list[dict]]) -> str:
    lines = []
    for owner, rows in table.items():
        lines.append("core (every target):" if owner == "core" else f"target {owner}:")
        lines += [f"  {r['name']} ({r['env']}; default {r['default']!r})\n      {r['doc']}" for r in rows]
        if not rows:
            lines.append("  (none)")
    return "\n".join(lines) + "\n"


def run_options(args) -> int:
    table = options_table(args.target)
    print(json.dumps(table, indent=1) if args.json else format_options(table), end="\n" if args.json else "")
    return 0


def run_explain(args) -> int:
    from ..frontend.stats import explain, stats

    model = load_model(args.model)
    check_inputs(model)
    options = option_flags(args.option)
    args.target = chosen_target(args.target, options)
    result = compile_model(model, CompileRequest(args.target, None, args.train, args.dynamic, options=options))
    if args.json:
        print(json.dumps({**stats(), "graph_breaks": result.graph_breaks}, indent=1, default=str))
        return 0
    print(f"dynamo-mlir: {args.model} on target {args.target} ({result.seconds:.1f} s)")
    breaks = sum(result.graph_breaks.values())
    print(f"Dynamo: {sum(1 for g in result.graphs if g.kind != 'backward')} graph(s) compiled, {breaks} graph break(s)")
    for reason, n in result.graph_breaks.items():
        print(f"  graph break x{n}: {reason}")
    print(explain())
    return 0
