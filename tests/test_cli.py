"""The `dynamo-mlir` CLI: dump (every stage, re-parse, resume), explain, report (in a real
headless Chromium), ops, targets, errors and --help.

Commands run in-process through `cli.main` (one torch import for the whole file); one test runs
the installed console script to check the real exit code.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from torch_mlir import ir

from dynamo_mlir.codegen import all_targets, get_target
from dynamo_mlir.dialects import new_context
from dynamo_mlir.tools import cli
from browser import load_in_chromium

MODELS = os.path.join(os.path.dirname(__file__), "models_for_cli.py")
CPU_STAGES = ["dynamo"] + get_target("cpu").stage_names() + list(get_target("cpu").extra_dumps)


def run_cli(*argv) -> int:
    return cli.main([str(a) for a in argv])


@pytest.fixture(scope="module")
def train_dump(tmp_path_factory):
    """One forward+backward dump of the MLP, shared by the tests that only read it."""
    out = tmp_path_factory.mktemp("dump")
    assert run_cli("dump", f"{MODELS}:mlp", "--train", "--out", out) == 0
    return out


def _index(folder):
    with open(os.path.join(folder, "index.json")) as f:
        return json.load(f)


def test_dump_writes_every_stage_of_forward_and_backward(train_dump):
    index = _index(train_dump)
    kinds = {u["kind"] for u in index["units"]}
    assert {"dynamo", "forward", "backward", "partition"} <= kinds
    for unit in index["units"]:
        expected = {"dynamo": ["fx"], "forward": ["aten"], "backward": ["aten"], "partition": CPU_STAGES}[unit["kind"]]
        assert list(unit["files"]) == expected, unit
        for filename in unit["files"].values():
            assert os.path.getsize(os.path.join(train_dump, filename)) > 0
        if unit["kind"] == "partition":
            assert unit["compiled"] and {"linalg", "loops", "llvm"} <= set(unit["seconds"])
    assert index["stages"][:3] == ["fx", "aten", "dynamo"]
    markdown = open(os.path.join(train_dump, "index.md")).read()
    forward = next(u for u in index["units"] if u["kind"] == "partition" and "_forward_" in u["files"]["linalg"])
    assert forward["files"]["linalg"] in markdown and "| ms |" in markdown


def test_every_mlir_stage_file_reparses(train_dump):
    paths = sorted(glob.glob(os.path.join(train_dump, "*.mlir")))
    assert len(paths) == 2 * 4  # forward and backward: dynamo, linalg, loops, llvm
    for path in paths:
        text = open(path).read()
        stage = os.path.basename(path).split(".")[1]
        target = "" if stage == "dynamo" else " target: cpu"  # the dynamo dialect is target-independent
        assert text.startswith(f"// dynamo-mlir stage: {stage}{target}\n")
        module = ir.Module.parse(text, new_context())
        assert module.operation.verify()


@pytest.mark.parametrize("stage", ["linalg", "dynamo"])
def test_resuming_from_a_stage_gives_the_same_llvm_ir(train_dump, tmp_path, stage):
    # graph ids come from a process-wide counter: find the backward region's name in the dump
    (source,) = glob.glob(os.path.join(train_dump, f"g*_backward_fused_0.{stage}.mlir"))
    graph = os.path.basename(source).split(".")[0]
    assert run_cli("dump", source, "--out", tmp_path) == 0
    for later in ("llvm.mlir", "ll.ll"):
        resumed = open(tmp_path / f"{graph}.{later}").read()
        assert resumed == open(os.path.join(train_dump, f"{graph}.{later}")).read()
    assert _index(tmp_path)["options"] == {"resumed_from": stage}


def test_stage_prints_one_stage_and_print_after_all(capfd):
    # The nn.Module-instance convention (inputs in `mlp_instance_example_inputs`).
    assert run_cli("dump", f"{MODELS}:mlp_instance", "--stage", "linalg", "--print-after-all") == 0
    out, err = capfd.readouterr()
    assert "linalg." in out and "func.func @main" in out
    ir.Module.parse(out, new_context())
    assert "IR Dump After" in err  # MLIR's pass manager printing


@pytest.mark.skipif("cuda" not in all_targets(), reason="the cuda target is not registered")
def test_cuda_target_dumps_ptx(tmp_path, capsys):
    # Without a GPU every stage is still generated; the regions then run eagerly.
    assert run_cli("dump", f"{MODELS}:mlp", "--target", "cuda", "--out", tmp_path) == 0
    assert ".entry" in open(glob.glob(str(tmp_path / "*.ptx.ptx"))[0]).read()
    names = [u["name"] for u in _index(tmp_path)["units"] if u["kind"] == "partition"]
    assert run_cli("dump", tmp_path / f"{names[0]}.gpu.mlir", "--out", tmp_path / "resumed") == 0  # target from the header
    assert os.path.exists(tmp_path / "resumed" / f"{names[0]}.ptx.ptx")


def test_dynamic_dumps_symbolic_dims(tmp_path):
    assert run_cli("dump", f"{MODELS}:gelu_add", "--dynamic", "--out", tmp_path) == 0
    aten = open(glob.glob(str(tmp_path / "*.aten.txt"))[0]).read()
    assert re.search(r'f32\[s\d+', aten), aten


def test_explain(capsys):
    assert run_cli("explain", f"{MODELS}:with_fallback") == 0
    out = capsys.readouterr().out
    assert "0 graph break(s)" in out
    assert "partition fused_" in out and "aten.sin.default" in out
    assert "eager: aten._linalg_svd.default" in out


def test_explain_json(capsys):
    assert run_cli("explain", f"{MODELS}:gelu_add", "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["graphs"] == 1 and stats["ops_fallback"] == 0 and stats["graph_breaks"] == {}


def test_ops_and_targets(capsys):
    assert run_cli("ops", "--target", "cpu", "--json") == 0
    table = json.loads(capsys.readouterr().out)
    assert "aten.mm.default" in table["aten"]
    assert table["targets"]["cpu"]["accepted"] and set(table["targets"]["cpu"]["accepted"]) <= set(table["dialect"])
    assert run_cli("ops") == 0
    assert "target cpu: accepts" in capsys.readouterr().out
    assert run_cli("targets") == 0
    out = capsys.readouterr().out
    assert "cpu  (device cpu, chosen for cpu tensors, available here)" in out and "linalg.mlir -> loops.mlir -> llvm.mlir" in out
    assert run_cli("targets", "--json") == 0
    assert "cpu" in [t["name"] for t in json.loads(capsys.readouterr().out)]


def test_report_highlights_fallbacks(tmp_path):
    page = tmp_path / "fallback.html"
    assert run_cli("report", f"{MODELS}:with_fallback", "-o", page) == 0
    html = page.read_text()
    assert '<tr class="fallback">' in html and "aten._linalg_svd.default" in html
    assert 'class="node eager"' in html and 'class="node compiled"' in html  # coloured in the graph
    assert "<script src" not in html and "<link" not in html and "http" not in html.replace("http://www.w3.org", "")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_report_renders_in_headless_chromium(train_dump, tmp_path):
    page = tmp_path / "report.html"
    assert run_cli("report", train_dump, "-o", page) == 0
    result = load_in_chromium(str(page), str(tmp_path / "report.png"), str(tmp_path / "profile"))
    assert result.console == [], result.console
    assert 'data-ready="ok"' in result.dom  # the page's script ran to its end
    sections = set(re.findall(r'<details class="stage" data-stage="(\w+)"', result.dom))
    assert sections == {"fx", "aten", *CPU_STAGES}
    assert f'data-stages="{3 + 2 * len(CPU_STAGES)}"' in result.dom  # fx, 2 aten, 2 partitions' stages
    assert re.search(r'<pre class="prev" data-from="[^"]+" data-filled="1">\S', result.dom)  # side by side
    assert result.dom.count("<svg") >= 4  # the arrow defs + the Dynamo graph + 2 ATen graphs
    assert os.path.getsize(tmp_path / "report.png") > 10_000


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_chromium_harness_sees_console_errors(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.error('boom'); notDefined();</script></body></html>")
    result = load_in_chromium(str(page), str(tmp_path / "broken.png"), str(tmp_path / "profile"))
    assert any("boom" in line for line in result.console)
    assert any("Uncaught ReferenceError" in line for line in result.console)


ERRORS = [
    (["dump", MODELS], "has no ':name'"),
    (["dump", f"{MODELS}:nope"], "has no 'nope'; it defines: "),
    (["dump", "missing/model.py:mlp"], "no such file 'missing/model.py'"),
    (["dump", f"{MODELS}:wrong_inputs"], "do not fit it: RuntimeError: mat1 and mat2 shapes"),
    (["dump", f"{MODELS}:no_inputs"], "no example inputs for 'no_inputs'"),
    (["dump", f"{MODELS}:not_a_model"], "'not_a_model' is of type int, not a model"),
    (["dump", "dynamo_mlir.tools.models:mlp"], "no example inputs for 'mlp'"),  # module form, builder
    (["dump", f"{MODELS}:mlp", "--stage", "nope"], "unknown stage 'nope' for target 'cpu'"),
    (["dump", f"{MODELS}:mlp", "--target", "tpu"], "unknown target 'tpu'"),
    (["explain", f"{MODELS}:nope"], "has no 'nope'"),
    (["report", "missing/model.py:mlp"], "no such file"),
    (["pass", "cpu-bufferize", "missing.mlir"], "no such file 'missing.mlir'"),
    (["pass", "cpu-nope", MODELS], "no pass named 'cpu-nope'"),
    (["dump", f"{MODELS}:mlp", "--target", "cpu", "-O", "target=cuda"], "name different targets"),
]


@pytest.mark.parametrize("argv, message", ERRORS, ids=[" ".join(a[1:])[-40:] for a, _ in ERRORS])
def test_errors_are_one_line_and_exit_2(argv, message, capsys):
    assert run_cli(*argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_unparseable_mlir(tmp_path, capsys):
    bad = tmp_path / "g0_inference_fused_0.linalg.mlir"
    bad.write_text("func.func @main( {\n")
    assert run_cli("dump", bad, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"cannot parse '{bad}' as MLIR" in err and err.count("\n") == 1
    unnamed = tmp_path / "x.mlir"
    unnamed.write_text("module {}\n")
    assert run_cli("dump", unnamed) == 2
    assert "cannot tell which stage" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[]] + [[name] for name in cli.COMMANDS])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_cli(*command, "--help")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: dynamo-mlir")
    if command in ([], ["dump"], ["explain"], ["report"]):
        assert "returning (callable, example_inputs)" in out  # the MODEL convention


def test_console_script_exit_code():
    script = os.path.join(os.path.dirname(sys.executable), "dynamo-mlir")
    done = subprocess.run([script, "dump", "no/such.py:mlp"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("dynamo-mlir dump: error: no such file")


@pytest.mark.skipif("cuda" not in all_targets(), reason="the cuda target is not registered")
def test_explain_cuda_names_library_calls(capsys):
    # Without a GPU the regions run eagerly after every stage; explain still says which ops the
    # cuda target hands to torch (cuBLAS) rather than to its generated kernels.
    assert run_cli("explain", f"{MODELS}:mlp", "--target", "cuda") == 0
    out = capsys.readouterr().out
    assert re.search(r"aten\.mm\.default x2 \(2 (would run )?as library call\)", out), out
