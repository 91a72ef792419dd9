"""The compile cache: a compiled region's package, found again by what was compiled.

A region is compiled once per machine and set of versions: its target's `package` (what the
loaded code needs, nothing tied to this process: the CPU's object code, the GPU's PTX and host
schedule) is kept under a key, in memory for this process and on disk for the next ones.

The key is a SHA-256 over everything that decides the generated code:
- the region's dynamo-dialect module, printed with its locations (they name the FX nodes that
  library calls serve, which stats() reports);
- the target's name, the machine it generates for (`Target.machine`: host CPU and its
  features, GPU architecture) and the options that affect code (`OptionSet.fingerprint`);
- the versions of Python, torch, torch-mlir and llvmlite, and a hash of this package's sources
  (and of a plugin target's package), so an edited compiler never reads old entries.

On disk an entry is one file, `<dir>/<key[:2]>/<key>.entry`: a header line (JSON: format,
key, target, the payload's length and SHA-256, the versions) and the payload (the pickled
Entry). It is written to a temporary file in the same folder and renamed into place, so a reader
sees a whole entry or none, and two processes writing one key each write a whole, equal file.
An entry that is truncated, altered, of another format or that fails to load is reported once,
removed, and compiled again: a cache never makes a compile fail or an answer wrong.

The payload is a pickle: the cache folder must be writable only by its user (as ~/.cache is);
a folder the cache creates is made so (mode 0700).

The folder is bounded (option `cache_max_bytes`): a read marks its entry used (its mtime). A
process checks the folder's size on its first write and again after each SCAN_EVERY of the bound
it writes; past the bound, the entries used longest ago go, down to PRUNE_TO of it. Another
process may be reading an entry removed so: it sees a miss and compiles.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import importlib.metadata
import json
import logging
import os
import pickle
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("dynamo_mlir")

FORMAT = 1  # bump when the entry layout changes
PRUNE_TO = 0.8  # a folder past its bound is pruned down to this fraction of it
SCAN_EVERY = 0.02  # a process checks the folder's size again after writing this fraction of the bound
MAGIC = b"dynamo-mlir-cache\n"
_OUR_PACKAGES = ("frontend", "dialects", "lowering", "codegen")  # hashed with every subpackage


@dataclass(frozen=True)
class Entry:
    """What a region needs to run without compiling: the target's package and the FX nodes it
    runs as library calls (stats()). At the graph level (frontend/graph_cache.py) the package
    is a GraphEntry naming its region's entry."""

    target: str
    package: Any
    library_nodes: frozenset[str] = frozenset()
    level: str = "region"  # or "graph"


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dynamo-mlir")


def _version_of(distribution: str, module: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(sys.modules.get(module) or importlib.import_module(module), "__version__", "unknown"))


def _hash_sources(folders: list[str], recursive: bool = False) -> str:
    digest = hashlib.sha256()
    for folder in sorted(set(folders)):
        files = Path(folder).rglob("*.py") if recursive else Path(folder).glob("*.py")
        for path in sorted(files):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def software() -> dict[str, str]:
    """The versions the generated code depends on, and a hash of this package's compiler
    sources (a development checkout changes without a version bump)."""
    import torch

    # Found, not imported: importing the cuda target here would cost a CPU compile its import.
    folders = [importlib.util.find_spec(f"dynamo_mlir.{p}").submodule_search_locations[0] for p in _OUR_PACKAGES]
    return {"python": "%d.%d" % sys.version_info[:2], "torch": torch.__version__,
            "torch-mlir": _version_of("torch-mlir", "torch_mlir"), "llvmlite": _version_of("llvmlite", "llvmlite"),
            "dynamo-mlir": _version_of("dynamo-mlir", "dynamo_mlir"),
            "sources": _hash_sources(folders, recursive=True)[:16]}


_PROCESS = os.urandom(8).hex()  # stands for sources that cannot be read: such entries stay in this process


@functools.cache
def _package_sources(module_name: str) -> str:
    """A hash of the sources of the top-level package (or the lone file) defining `module_name`,
    code outside this package that a compile runs (a plugin target, a lowering rule); '' for ours."""
    top = module_name.split(".")[0]
    if top == "dynamo_mlir":
        return ""
    module = sys.modules.get(top)
    if module is None or not (getattr(module, "__path__", None) or getattr(module, "__file__", None)):
        return _PROCESS
    if getattr(module, "__path__", None):
        return _hash_sources(list(module.__path__), recursive=True)[:16]
    return hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]


def _lowering_rules(target) -> list:
    """The lowering rules the target may use, by name, and the sources of those outside this package."""
    from ..lowering.registry import rules_for

    rules = rules_for(target.name)
    outside = sorted({r[2].split(".")[0] for r in rules} - {"dynamo_mlir"})
    return [rules, [(m, _package_sources(m)) for m in outside]]


def _name_of(fn) -> str:
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _stage_table(target) -> list:
    """The target's stages and passes by name and by the functions that run them: a target
    re-registered with another stage (a plugin, a test) never reads the other's entries."""
    return [(s.name, _name_of(s.run) if s.run else "", [(p.name, _name_of(p.run)) for p in s.passes])
            for s in target.stages]


def names_graphs(options) -> bool:
    """Whether an option picking graphs by name is set: the graph's name is then part of what
    decides the code."""
    return options.names_graphs() or options.target_options.names_graphs()


def _facts(target, options, graph_name: str) -> dict:
    return {
        "stages": _stage_table(target),
        "format": FORMAT, "target": target.name, "machine": target.machine(options),
        "graph": graph_name if names_graphs(options) else "",
        "core": options.fingerprint(), "target_options": options.target_options.fingerprint(),
        "software": software(), "plugin": _package_sources(target.load.__module__), "rules": _lowering_rules(target),
    }


def _digest(facts: dict, text: str) -> str:
    digest = hashlib.sha256(json.dumps(facts, sort_keys=True).encode())
    digest.update(text.encode())
    return digest.hexdigest()


def region_key(module_text: str, target, options, graph_name: str) -> str:
    """The key of a region: its dynamo-dialect module's text (with locations), the target, the
    machine, the options that affect code, the versions (see the module's doc); the graph's
    name only while an option picking graphs by name is set."""
    return _digest(_facts(target, options, graph_name), module_text)


def graph_key(graph_text: str, target, options) -> str:
    """The key of a Dynamo graph's entry (frontend/graph_cache.py): its text (the graph's code
    and its inputs' metadata) and the same facts as a region's, in a key space of its own."""
    return _digest({"level": "graph", **_facts(target, options, "")}, graph_text)


class CompileCache:
    """An in-memory level over an on-disk level of Entries, in one folder (see the module's doc)."""

    MEMORY_ENTRIES = 512  # the in-memory level keeps the most recently used (a long process
    # compiling many shapes would otherwise keep every artifact it ever made)

    def __init__(self, folder: str, max_bytes: int = 0):
        self.root = Path(folder)
        self.max_bytes = max_bytes  # 0: unbounded
        self._scanned, self._unscanned = False, 0  # bytes this process wrote since its last prune scan
        self._memory: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, key: str, entry: Entry) -> None:
        with self._lock:
            self._memory[key] = entry
            self._memory.move_to_end(key)
            while len(self._memory) > self.MEMORY_ENTRIES:
                self._memory.popitem(last=False)

    def path_of(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.entry"

    def get(self, key: str) -> tuple[Entry | None, str]:
        """(the entry, "memory" or "disk"), or (None, "miss"), or (None, "bad"): an entry was
        there but unusable (reported and removed)."""
        with self._lock:
            entry = self._memory.get(key)
            if entry is not None:
                self._memory.move_to_end(key)
        if entry is not None:
            return entry, "memory"
        entry, where = self._read(key)
        if entry is not None:
            self._remember(key, entry)
        return entry, where

    def put(self, key: str, entry: Entry) -> None:
        self._remember(key, entry)
        try:
            self._write(key, entry)
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as e:
            log.warning("dynamo-mlir: could not write the compile cache entry %s: %s", self.path_of(key), e)
            return
        if self.max_bytes and self._due_for_prune(self.path_of(key)):
            self.prune(self.max_bytes, keep=str(self.path_of(key)))

    def _due_for_prune(self, path: Path) -> bool:
        """A folder scan (a stat per entry: ~30 ms for 7,000 entries) on this process's first
        write, then once it has written SCAN_EVERY of the bound since its last one."""
        try:
            self._unscanned += path.stat().st_size
        except OSError:
            return False
        if self._scanned and self._unscanned < self.max_bytes * SCAN_EVERY:
            return False
        self._scanned, self._unscanned = True, 0
        return True

    def prune(self, max_bytes: int, keep: str | None = None) -> int:
        """If the entries on disk take more than `max_bytes`, remove those used longest ago
        (oldest mtime) until they take at most PRUNE_TO of it; `keep` (the entry just written)
        stays. Returns how many were removed."""
        rows = []
        for sub in _scandir(self.root):
            for e in _scandir(sub.path):
                if e.name.endswith(".entry"):
                    try:
                        st = e.stat()
                    except OSError:  # removed meanwhile by another process
                        continue
                    rows.append((st.st_mtime, st.st_size, e.path))
        total = sum(size for _, size, _ in rows)
        if total <= max_bytes:
            return 0
        removed = 0
        for _, size, path in sorted(rows):
            if total <= max_bytes * PRUNE_TO:
                break
            if path == keep:
                continue
            try:
                os.unlink(path)
            except OSError:
                continue
            with self._lock:
                self._memory.pop(os.path.basename(path)[:-len(".entry")], None)
            total -= size
            removed += 1
        return removed

    def discard(self, key: str, why: str) -> None:
        """An entry that could not be used: reported, removed from both levels (compiled again)."""
        with self._lock:
            self._memory.pop(key, None)
        path = self.path_of(key)
        log.warning("dynamo-mlir: compile cache entry %s is unusable (%s); removed, compiling again", path, why)
        try:
            path.unlink()
        except OSError:
            pass

    def forget_memory(self) -> None:
        with self._lock:
            self._memory.clear()

    def _write(self, key: str, entry: Entry) -> None:
        payload = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        header = {"format": FORMAT, "key": key, "target": entry.target, "level": entry.level, "size": len(payload),
                  "sha256": hashlib.sha256(payload).hexdigest(), "created": time.time(), "software": software()}
        path = self.path_of(key)
        if not self.root.exists():  # a new cache folder is its user's alone: entries are pickles
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + json.dumps(header).encode() + b"\n" + payload)
            os.replace(tmp, path)  # atomic: readers see the old entry, the new one, or none
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _read(self, key: str) -> tuple[Entry | None, str]:
        path = self.path_of(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None, "miss"
        except OSError as e:
            log.warning("dynamo-mlir: cannot read compile cache entry %s: %s", path, e)
            return None, "miss"
        try:
            header, payload = _split(data)
            if header.get("format") != FORMAT or header.get("key") != key:
                raise ValueError(f"format {header.get('format')}, key {str(header.get('key'))[:16]}")
            if len(payload) != header["size"] or hashlib.sha256(payload).hexdigest() != header["sha256"]:
                raise ValueError(f"payload of {len(payload)} bytes does not match its header "
                                 f"({header['size']} bytes and checksum)")
            entry = pickle.loads(payload)
            if not isinstance(entry, Entry):
                raise ValueError(f"payload is a {type(entry).__name__}")
        except Exception as e:  # any damage is a miss, never a crash
            self.discard(key, f"{type(e).__name__}: {e}")
            return None, "bad"
        try:
            os.utime(path)  # used now: pruning removes the entries used longest ago first
        except OSError:
            pass  # a read-only cache folder: it is never pruned either
        return entry, "disk"

    def entries(self) -> list[dict]:
        """Every entry on disk: key, target, bytes, created, readable (headers only)."""
        rows = []
        for path in sorted(self.root.glob("??/*.entry")):
            row = {"key": path.stem, "path": str(path), "bytes": path.stat().st_size}
            try:
                with open(path, "rb") as f:
                    header, _ = _split(f.read(64 << 10), header_only=True)
                row.update(target=header.get("target"), level=header.get("level", "region"),
                           created=header.get("created"), readable=True)
            except Exception:
                row.update(target=None, level=None, created=None, readable=False)
            rows.append(row)
        return rows

    def clear(self) -> int:
        """Remove every entry on disk and in memory; the number of files removed."""
        self.forget_memory()
        removed = 0
        for path in list(self.root.glob("??/*.entry")) + list(self.root.glob("??/.*.tmp")):
            try:
                path.unlink()
                removed += path.suffix == ".entry"
            except OSError:
                pass
        return removed


def _scandir(folder) -> list:
    try:
        with os.scandir(folder) as it:
            return [e for e in it if not e.name.startswith(".")]
    except OSError:  # no folder yet, or not one
        return []


def _split(data: bytes, header_only: bool = False) -> tuple[dict, bytes]:
    if not data.startswith(MAGIC):
        raise ValueError("not a dynamo-mlir cache entry")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise ValueError("truncated header")
    return json.loads(data[len(MAGIC):end]), (b"" if header_only else data[end + 1:])


def configured_dir() -> str:
    """The folder the `cache_dir` option names through its environment variable, else the default."""
    return os.environ.get("DYNAMO_MLIR_CACHE_DIR") or default_dir()


_CACHES: dict[str, CompileCache] = {}
_CACHES_LOCK = threading.Lock()


def cache_for(options) -> CompileCache:
    """The cache in the folder `options.cache_dir` names (default: default_dir())."""
    folder = os.path.abspath(options.cache_dir or default_dir())
    with _CACHES_LOCK:
        store = _CACHES.setdefault(folder, CompileCache(folder))
    store.max_bytes = options.cache_max_bytes
    return store
