"""`dynamo-mlir cache stats|list|clear|prune`: the compile cache on disk (codegen/cache.py)."""

import json
import time
from collections import Counter

from ..codegen import cache


def _cache(args) -> cache.CompileCache:
    return cache.CompileCache(args.dir or cache.configured_dir())


def run(args) -> int:
    if args.max_bytes is not None and args.action != "prune":
        raise SystemExit(f"dynamo-mlir cache: --max-bytes is prune's bound, not an option of '{args.action}'")
    store = _cache(args)
    return {"stats": _stats, "list": _list, "clear": _clear, "prune": _prune}[args.action](store, args)


def _stats(store: cache.CompileCache, args) -> int:
    rows = store.entries()
    by_target = dict(Counter(r["target"] or "unreadable" for r in rows))
    by_level = dict(Counter(r["level"] for r in rows if r["readable"]))  # regions' code, graphs' recipes
    summary = {"folder": str(store.root), "entries": len(rows), "bytes": sum(r["bytes"] for r in rows),
               "by_target": by_target, "by_level": by_level, "unreadable": sum(not r["readable"] for r in rows)}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"compile cache: {summary['folder']}")
    print(f"  {summary['entries']} entries, {summary['bytes'] / 1e6:.1f} MB"
          + "".join(f"; {t}: {n}" for t, n in sorted(by_target.items()))
          + "".join(f"; {level} entries: {n}" for level, n in sorted(by_level.items())))
    if summary["unreadable"]:
        print(f"  {summary['unreadable']} unreadable (removed when a compile meets them, or by `dynamo-mlir cache clear`)")
    return 0


def _list(store: cache.CompileCache, args) -> int:
    rows = store.entries()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"])) if r["created"] else "?"
        print(f"{r['key'][:16]}  {r['target'] or 'unreadable':8} {r['level'] or '':6} {r['bytes']:>10}  {when}")
    print(f"{len(rows)} entries in {store.root}")
    return 0


def _clear(store: cache.CompileCache, args) -> int:
    print(f"removed {store.clear()} entries from {store.root}")
    return 0


def _prune(store: cache.CompileCache, args) -> int:
    """Down to PRUNE_TO of the bound (--max-bytes, else the cache_max_bytes option) if past it."""
    bound = args.max_bytes if args.max_bytes is not None else _bound()
    if not bound:
        print(f"no bound (0): nothing removed from {store.root}")
        return 0
    print(f"removed {store.prune(bound)} entries from {store.root} (bound {bound / 1e6:.1f} MB)")
    return 0


def _bound() -> int:
    from ..codegen.config import Options

    return Options(**Options.from_env()).cache_max_bytes
