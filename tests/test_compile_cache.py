"""The compile cache (codegen/cache.py): a later process loads what an earlier one compiled; a
damaged entry is reported and compiled again; concurrent writers both get right answers; a
changed option or version misses."""

import json
import logging
import os
import pickle
import subprocess
import sys

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.codegen import cache
from dynamo_mlir.codegen.cpu.object_code import CpuObject
from dynamo_mlir.codegen.passes import CompileError
from dynamo_mlir.tools import cli
from helpers import zeros_runtime

CHILD = os.path.join(os.path.dirname(__file__), "cache_child.py")
NO_STAGE_RAN = ["cache_key", "dynamo", "load"]  # a region hit: the import (for the key) and the link only
NOTHING_TRACED = ["graph_key", "load"]  # a graph hit: the key of Dynamo's graph and the link only


def _child(folder, options=None, wait=True):
    env = {**os.environ, "DYNAMO_MLIR_CACHE_DIR": str(folder)}
    proc = subprocess.Popen([sys.executable, CHILD, json.dumps(options or {})], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return _result(proc) if wait else proc


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1]), err


def _entries(folder, level=None):
    """The entries on disk; of one level ("region": code, "graph": a graph's recipe) if given."""
    paths = sorted(folder.glob("??/*.entry"))
    return [p for p in paths if level is None or cache._split(p.read_bytes(), header_only=True)[0]["level"] == level]


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
    first, _ = _child(tmp_path)
    assert first["cache"]["misses"] == 1 and first["cache"]["hits"] == 0
    assert first["ops_compiled"] > 0 and first["ops_library"] > 0 and "object" in first["stages"]
    assert first["cache"]["graph_misses"] == 1
    entries = _entries(tmp_path)
    (region,) = _entries(tmp_path, "region")
    (graph,) = _entries(tmp_path, "graph")
    second, _ = _child(tmp_path)
    assert second["cache"]["disk_hits"] == 1 and second["cache"]["misses"] == 0
    assert second["cache"]["graph_hits"] == 1  # AOTAutograd, partitioning and import skipped
    assert second["stages"] == NOTHING_TRACED
    assert (second["ops_compiled"], second["ops_library"]) == (first["ops_compiled"], first["ops_library"])
    assert second["max_error"] == first["max_error"] == 0.0
    assert _entries(tmp_path) == entries
    graph.unlink()  # the region level alone: traced and imported (for the key), no stage of the target
    third, _ = _child(tmp_path)
    assert third["cache"]["disk_hits"] == 1 and third["cache"]["graph_hits"] == 0
    assert third["stages"] == NO_STAGE_RAN and third["max_error"] == 0.0
    assert _entries(tmp_path) == entries  # the graph's entry written again


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not an entry"])
@pytest.mark.parametrize("level", ["region", "graph"])
def test_a_damaged_entry_is_reported_and_compiled_again(tmp_path, damage, level):
    _child(tmp_path)
    (entry,) = _entries(tmp_path, level)
    data = entry.read_bytes()
    entry.write_bytes({"truncated": data[:len(data) // 2],
                       "flipped": data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:],
                       "not an entry": b"\x00" * 64}[damage])
    result, err = _child(tmp_path)
    assert result["cache"]["bad_entries"] == 1 and result["cache"]["graph_hits"] == 0 and result["max_error"] == 0.0
    if level == "region":  # compiled again
        assert result["cache"]["misses"] == 1 and result["cache"]["hits"] == 0 and "object" in result["stages"]
    else:  # traced again; its region's code is still good
        assert result["cache"]["disk_hits"] == 1 and result["stages"] == NO_STAGE_RAN
    assert "is unusable" in err and str(entry) in err  # reported, with the file
    again, _ = _child(tmp_path)  # the entry written in its place is whole
    assert again["cache"]["graph_hits"] == again["cache"]["disk_hits"] == 1 and again["max_error"] == 0.0


def test_two_processes_writing_one_entry_both_get_right_answers(tmp_path):
    procs = [_child(tmp_path, wait=False) for _ in range(2)]
    results = [_result(p)[0] for p in procs]
    for r in results:
        assert r["max_error"] == 0.0 and r["ops_compiled"] > 0
    assert sum(r["cache"]["misses"] + r["cache"]["hits"] for r in results) == 2
    (entry,) = _entries(tmp_path, "region")  # one whole entry a level, no temporary file left behind
    assert len(_entries(tmp_path, "graph")) == 1 and not list(tmp_path.glob("??/.*.tmp"))
    third, _ = _child(tmp_path)
    assert third["cache"]["disk_hits"] == 1 and third["max_error"] == 0.0


def _compile_mlp(options=None, compiled=True):
    torch._dynamo.reset()
    dynamo_mlir.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    torch.testing.assert_close(torch.compile(net, backend="mlir", options=options)(x), net(x))
    s = dynamo_mlir.stats()
    assert (s["ops_compiled"] > 0) == compiled
    return s["cache"]


def test_the_same_graph_again_in_this_process_is_a_memory_hit(tmp_path):
    options = {"cache_dir": str(tmp_path)}
    assert _compile_mlp(options)["misses"] == 1
    (kept,) = [e for e in cache.cache_for(cache_options(tmp_path))._memory.values() if e.level == "region"]
    assert kept.package.module is None  # no MLIR module (and context) kept alive by the cache
    assert _compile_mlp(options)["memory_hits"] == 1
    cache.cache_for(cache_options(tmp_path)).forget_memory()
    assert _compile_mlp(options)["disk_hits"] == 1


def cache_options(folder):
    from dynamo_mlir.codegen import config

    return config.resolve({"cache_dir": str(folder)})


def test_a_changed_option_or_version_misses(tmp_path, monkeypatch):
    options = {"cache_dir": str(tmp_path)}
    assert _compile_mlp(options)["misses"] == 1
    assert _compile_mlp({**options, "opt_level": 1})["misses"] == 1  # an option that changes code
    assert _compile_mlp({**options, "strict": True})["memory_hits"] == 1  # one that does not
    newer = {**cache.software(), "torch": "9.9.9"}
    monkeypatch.setattr(cache, "software", lambda: newer)
    assert _compile_mlp(options)["misses"] == 1
    assert len(_entries(tmp_path, "region")) == 3
    assert _entries(tmp_path, "graph") == []  # a training graph (the weights require grad) has none


def _infer_mlp(options, x):
    """An inference compile of the MLP in a fresh Dynamo: the graph level's stats and stages."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 8))
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(net, backend="mlir", options=options)(x), net(x))
    s = dynamo_mlir.stats()
    assert s["ops_compiled"] > 0 and s["graphs_called_directly"] == 1
    return s["cache"], sorted(s["stage_seconds"])


def test_the_graph_level_skips_the_trace_and_misses_on_what_changes_it(tmp_path, monkeypatch):
    options, x = {"cache_dir": str(tmp_path)}, torch.randn(4, 16)
    first, _ = _infer_mlp(options, x)
    assert first["graph_misses"] == 1 and first["misses"] == 1
    again, stages = _infer_mlp(options, x)
    assert again["graph_hits"] == again["memory_hits"] == 1 and stages == NOTHING_TRACED
    assert "from the graph cache (memory): AOTAutograd, partitioning and import skipped" in dynamo_mlir.explain()
    cache.cache_for(cache_options(tmp_path)).forget_memory()
    assert _infer_mlp(options, x) == ({**again, "memory_hits": 0, "disk_hits": 1}, NOTHING_TRACED)
    # Inputs of another shape or layout, or an option that changes code: another graph entry
    assert _infer_mlp(options, torch.randn(8, 16))[0]["graph_misses"] == 1
    assert _infer_mlp(options, torch.randn(16, 4).t())[0]["graph_misses"] == 1
    assert _infer_mlp({**options, "opt_level": 1}, x)[0]["graph_misses"] == 1
    assert _infer_mlp({**options, "strict": True}, x)[0]["graph_hits"] == 1  # no effect on code
    newer = {**cache.software(), "torch": "9.9.9"}
    monkeypatch.setattr(cache, "software", lambda: newer)
    assert _infer_mlp(options, x)[0]["graph_misses"] == 1
    assert len(_entries(tmp_path, "graph")) == 5


def test_a_graph_entry_whose_region_is_gone_is_traced_again(tmp_path):
    options, x = {"cache_dir": str(tmp_path)}, torch.randn(4, 16)
    _infer_mlp(options, x)
    (region,) = _entries(tmp_path, "region")
    cache.cache_for(cache_options(tmp_path)).forget_memory()
    region.unlink()
    counts, stages = _infer_mlp(options, x)
    assert counts["graph_hits"] == 0 and counts["misses"] == 1 and "object" in stages  # compiled again
    assert _infer_mlp(options, x)[0]["graph_hits"] == 1 and region.exists()


def test_cache_off_and_dumps_compile_every_stage(tmp_path):
    assert _compile_mlp({"cache_dir": str(tmp_path), "cache": False}) == {
        "hits": 0, "memory_hits": 0, "disk_hits": 0, "misses": 0, "bad_entries": 0, "off": 1,
        "graph_hits": 0, "graph_misses": 0}
    assert _compile_mlp({"cache_dir": str(tmp_path), "dump_dir": str(tmp_path / "dump")})["off"] == 1
    x = torch.randn(4, 16)  # an inference graph: the graph level is off too
    assert _infer_mlp({"cache_dir": str(tmp_path), "cache": False}, x)[0]["graph_misses"] == 0
    assert _entries(tmp_path) == []
    assert (tmp_path / "dump").is_dir()


def test_explain_says_where_the_code_came_from(tmp_path):
    _compile_mlp({"cache_dir": str(tmp_path)})
    text = dynamo_mlir.explain()
    assert "compiled (stored in the compile cache)" in text
    assert "slowest passes: cpu-" in text  # the passes that ran, timed
    _compile_mlp({"cache_dir": str(tmp_path)})
    text = dynamo_mlir.explain()
    assert "compiled (from the compile cache (memory))" in text and "slowest passes" not in text  # none ran


def test_the_cpu_artifact_holds_no_mlir_and_pickles(tmp_path):
    _compile_mlp({"cache_dir": str(tmp_path)})
    (entry,) = _entries(tmp_path, "region")
    header, payload = cache._split(entry.read_bytes())
    assert header["target"] == "cpu" and header["software"] == cache.software()
    stored = pickle.loads(payload)
    assert isinstance(stored.package, CpuObject) and stored.package.module is None
    assert stored.package.code[:4] == b"\x7fELF" and stored.package.function == "_mlir_main"
    assert "sgemm_" in stored.package.calls  # the linears are MKL calls, linked at load
    assert stored.library_nodes  # ... which stats() counts as library ops, also on a hit


def test_cuda_artifact_is_plain_data(tmp_path):
    """The cuda target's last artifact (PTX and host schedule) is what the cache keeps: it
    pickles with no MLIR object in it. PTX is generated without a GPU, so this runs in CI."""
    from dynamo_mlir.codegen.cuda.ptx import CudaProgram

    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.softmax(x * 2, -1), backend="mlir",
                      options={"target": "cuda", "cache_dir": str(tmp_path)})
    with zeros_runtime("cuda"):  # every stage runs; the loader returns zeros (no GPU needed)
        f(torch.randn(4, 32))
    assert dynamo_mlir.stats()["cache"]["misses"] == 1 and dynamo_mlir.stats()["compiled_ops"] == {
        "aten.mul.Tensor": 1, "aten._softmax.default": 1}
    (entry,) = _entries(tmp_path, "region")
    stored = pickle.loads(cache._split(entry.read_bytes())[1])
    assert isinstance(stored.package, CudaProgram) and stored.package.stage == "ptx"
    assert ".entry row_fused_softmax(" in stored.package.device  # the kernel named for its op
    assert pickle.loads(pickle.dumps(stored.package)).hosts.keys() == stored.package.hosts.keys()


def test_cli_cache_stats_list_clear(tmp_path, capsys):
    _infer_mlp({"cache_dir": str(tmp_path)}, torch.randn(4, 16))
    assert cli.main(["cache", "stats", "--dir", str(tmp_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["entries"] == 2 and stats["by_target"] == {"cpu": 2} and stats["bytes"] > 0
    assert stats["by_level"] == {"graph": 1, "region": 1}
    assert cli.main(["cache", "list", "--dir", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert "cpu      graph" in listed and "cpu      region" in listed
    assert cli.main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert "removed 2 entries" in capsys.readouterr().out and _entries(tmp_path) == []


def test_an_unwritable_folder_compiles_and_warns(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="dynamo_mlir"):
        assert _compile_mlp({"cache_dir": str(blocked)})["misses"] == 1
    assert "could not write the compile cache entry" in caplog.text


def test_the_memory_level_keeps_the_most_recent_entries(tmp_path, monkeypatch):
    store = cache.CompileCache(str(tmp_path))
    monkeypatch.setattr(cache.CompileCache, "MEMORY_ENTRIES", 2)
    for key in ("a" * 64, "b" * 64, "c" * 64):
        store.put(key, cache.Entry("cpu", key[0]))
    store.get("b" * 64)  # used: kept ahead of c
    store.put("d" * 64, cache.Entry("cpu", "d"))
    assert list(store._memory) == ["b" * 64, "d" * 64]
    assert store.get("a" * 64) == (cache.Entry("cpu", "a"), "disk")  # still on disk


def test_a_folder_past_its_bound_drops_the_entries_used_longest_ago(tmp_path, capsys):
    """cache_max_bytes: a write past the bound removes the entries used longest ago (a read marks
    one used) down to 80% of it, never the one just written; `dynamo-mlir cache prune` likewise."""
    store = cache.CompileCache(str(tmp_path))
    keys = [c * 64 for c in "abcde"]
    for i, key in enumerate(keys[:4]):
        store.put(key, cache.Entry("cpu", os.urandom(10_000)))
        os.utime(store.path_of(key), (1000 + i, 1000 + i))  # written in this order, one second apart
    size = store.path_of(keys[0]).stat().st_size
    store.forget_memory()
    assert store.get(keys[0])[1] == "disk"  # a is used now: the newest mark
    store.max_bytes = 4 * size  # a fifth entry takes the folder past it: down to 3.2 entries' worth
    store.put(keys[4], cache.Entry("cpu", os.urandom(10_000)))
    assert sorted(p.stem[0] for p in _entries(tmp_path)) == ["a", "d", "e"]  # b, c: used longest ago
    assert store.get(keys[1]) == (None, "miss")  # gone from the memory level too
    assert cli.main(["cache", "prune", "--dir", str(tmp_path), "--max-bytes", str(2 * size)]) == 0
    assert "removed 2 entries" in capsys.readouterr().out and len(_entries(tmp_path)) == 1


def test_a_process_scans_the_folder_on_its_first_write_then_after_writing_a_share_of_the_bound(tmp_path,
                                                                                             monkeypatch):
    """A scan stats every entry: a process does it on its first write, then only after writing
    SCAN_EVERY of the bound since (a cold compile in a big cache folder does not pay one each)."""
    scans = []
    monkeypatch.setattr(cache.CompileCache, "prune", lambda self, max_bytes, keep=None: scans.append(keep) or 0)
    store = cache.CompileCache(str(tmp_path), max_bytes=10_000_000)  # a scan every 200 kB written
    for i in range(12):
        store.put(f"{i:064x}", cache.Entry("cpu", os.urandom(30_000)))
    assert len(scans) == 2 and scans[0] == str(store.path_of(f"{0:064x}"))  # the first write, then the 8th


def test_a_new_cache_folder_is_its_users_alone(tmp_path):
    folder = tmp_path / "new" / "cache"
    _compile_mlp({"cache_dir": str(folder)})
    (entry,) = _entries(folder, "region")
    assert folder.stat().st_mode & 0o077 == 0 and entry.parent.stat().st_mode & 0o077 == 0


def test_a_load_failure_on_a_hit_keeps_or_drops_the_entry_by_its_kind(tmp_path, caplog, monkeypatch):
    """A CompileError from `load` is the machine's answer (no device, a missing symbol): a fresh
    compile would meet it too, so the entry stays and the region runs eagerly. Any other failure
    means the entry cannot be used: removed, reported, compiled again."""
    from dynamo_mlir.codegen.cpu import runtime

    options = {"cache_dir": str(tmp_path)}
    _compile_mlp(options)
    (entry,) = _entries(tmp_path, "region")
    memory = cache.cache_for(cache_options(tmp_path))
    real, calls = runtime.LinkedObject, []

    def refuse(obj):
        raise CompileError("load", "this machine cannot run it")

    def broken_once(obj):  # the cached object fails to link, the fresh one links
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("damaged")
        return real(obj)

    memory.forget_memory()
    monkeypatch.setattr(runtime, "LinkedObject", refuse)
    with caplog.at_level(logging.WARNING, logger="dynamo_mlir"):
        _compile_mlp(options, compiled=False)  # the region ran eagerly, right
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 1 and s["cache"]["hits"] == 1
    assert "is unusable" not in caplog.text and entry.exists()

    memory.forget_memory()
    monkeypatch.setattr(runtime, "LinkedObject", broken_once)
    with caplog.at_level(logging.WARNING, logger="dynamo_mlir"):
        counts = _compile_mlp(options)
    assert counts["bad_entries"] == 1 and counts["hits"] == 0 and "is unusable" in caplog.text
    assert len(calls) == 2 and entry.exists()  # rewritten by the fresh compile


def test_graph_text_refuses_what_its_code_does_not_pin_down():
    """The graph level keys on the graph's code: a graph whose code reads as the same for other
    behaviour (a submodule's settings, a parameter's values, a function from outside torch) has
    no key; a tensor constant's bytes are part of it."""
    from dynamo_mlir.frontend.graph_cache import graph_text

    x = torch.randn(2, 4)
    leaky = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.LeakyReLU(0.2)))
    assert graph_text(leaky, [x]) is None  # call_module: the slope is not in the code
    assert graph_text(torch.fx.symbolic_trace(torch.nn.Linear(4, 4)), [x]) is None  # parameters

    def helper(t):
        return t * 2

    def calling(fn):
        graph = torch.fx.Graph()
        graph.output(graph.call_function(fn, (graph.placeholder("t"),)))
        return torch.fx.GraphModule(torch.nn.Module(), graph)

    assert graph_text(calling(helper), [x]) is None  # a function of this test, not of torch
    assert graph_text(calling(torch.relu), [x]) is not None

    class WithConstant(torch.nn.Module):
        def __init__(self, value):
            super().__init__()
            self.c = torch.full((4,), value)  # a plain attribute: get_attr, not a buffer

        def forward(self, t):
            return torch.relu(t + self.c)

    one, two = (torch.fx.symbolic_trace(WithConstant(v)) for v in (1.0, 2.0))
    assert graph_text(one, [x]) is not None and graph_text(one, [x]) != graph_text(two, [x])
    assert graph_text(one, [x]) != graph_text(one, [x.t().contiguous().t()])  # strides are in it
    assert graph_text(one, [torch.randn(2, 4, requires_grad=True)]) != graph_text(one, [x])


def test_a_failing_graph_lookup_traces_the_graph(tmp_path, monkeypatch, caplog):
    """A bug or surprise in the graph level costs a trace, never the compile."""
    from dynamo_mlir.frontend.graph_cache import GraphLookup

    options, x = {"cache_dir": str(tmp_path)}, torch.randn(4, 16)
    _infer_mlp(options, x)

    def broken(self):
        raise RuntimeError("unexpected entry")

    monkeypatch.setattr(GraphLookup, "_load", broken)
    with caplog.at_level(logging.WARNING, logger="dynamo_mlir"):
        counts, stages = _infer_mlp(options, x)  # compiled and right (asserted inside)
    assert counts["graph_hits"] == 0 and counts["hits"] == 1 and stages == sorted(NO_STAGE_RAN)
    assert "graph cache lookup failed (RuntimeError: unexpected entry)" in caplog.text


def test_cli_cache_prune_refuses_a_negative_bound_and_max_bytes_elsewhere(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["cache", "prune", "--dir", str(tmp_path), "--max-bytes", "-1"])
    assert e.value.code == 2 and "a byte count is >= 0, got -1" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--max-bytes is prune's bound, not an option of 'clear'"):
        cli.main(["cache", "clear", "--dir", str(tmp_path), "--max-bytes", "10"])
    assert cli.main(["cache", "prune", "--dir", str(tmp_path), "--max-bytes", "0"]) == 0
    assert "no bound (0): nothing removed" in capsys.readouterr().out
