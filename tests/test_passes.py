"""Named passes (codegen/passes.py): the registry, the contract checks, the per-pass dumps and
IR printing, and what the CLI makes of them (`dynamo-mlir passes`, `pass`, `dump
--after-each-pass`)."""

import contextlib
import glob
import json
import logging
import os
import re

import pytest
import torch
from torch_mlir import ir

import dynamo_mlir
from dynamo_mlir.codegen import CompileError, config, get_target
from dynamo_mlir.codegen.kernel_names import without_ops
from dynamo_mlir.codegen.passes import Pass, artifact_text, get_pass, register_pass, run_passes
from dynamo_mlir.dialects import new_context
from dynamo_mlir.tools import cli

MODELS = os.path.join(os.path.dirname(__file__), "models_for_cli.py")
MODULE = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"


def _options(**kw):
    return config.bind(config.resolve({"target": "cpu", **kw}), get_target("cpu"))


def _marker(name):
    """A pass that records its run by setting a unit attribute `test.<name>` on the module (a
    module's attributes are dialect-prefixed, which the verifier after a Python pass checks)."""
    def run(module, options):
        module.operation.attributes[f"test.{name}"] = ir.UnitAttr.get()
    return run


def test_registry_refuses_a_second_pass_of_one_name():
    p = register_pass(Pass("test-unique", _marker("a"), "a test pass"))
    register_pass(p)  # the same object again: fine
    with pytest.raises(ValueError, match="'test-unique' is registered already"):
        register_pass(Pass("test-unique", _marker("b"), "another"))
    assert get_pass("test-unique") is p


def test_requires_is_checked_in_order():
    first = Pass("test-first", _marker("first"), "runs first")
    second = Pass("test-second", _marker("second"), "needs first", requires=("test-first",))
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODULE)
        with pytest.raises(CompileError, match="pass 'test-second' requires \\['test-first'\\]"):
            run_passes(module, [second, first], _options(), "s")
        module, records = run_passes(module, [first, second], _options(), "s")
        assert [r.name for r in records] == ["test-first", "test-second"]
        assert "test.first" in module.operation.attributes and "test.second" in module.operation.attributes


def test_call_blas_without_unshared_zero_fills_fails_naming_both():
    """cpu-call-blas folds a zero fill into beta = 0 only when it is right before the matmul, which
    cpu-unshare-zero-fills guarantees: a loops stage without it (or with it after) is refused."""
    options = _options()  # loads the cpu target, which registers its passes
    passes = [get_pass(n) for n in ("cpu-read-only-arguments", "cpu-distinct-results", "cpu-bufferize",
                                    "cpu-call-blas", "cpu-unshare-zero-fills")]
    with new_context(), ir.Location.unknown():
        with pytest.raises(CompileError, match="pass 'cpu-call-blas' requires \\['cpu-unshare-zero-fills'\\]"):
            run_passes(ir.Module.parse(MODULE), passes, options, "loops")


def test_a_converting_pass_makes_the_artifact_and_ends_the_module_passes():
    """A pass with `converts` returns the stage's next artifact (the cuda target's CudaProgram):
    it is what the stage returns, dumped as its text; no pass may run after it."""
    class Program:
        def __str__(self):
            return "// a program"
    convert = Pass("test-convert", lambda m, o: Program(), "module -> program", converts=True)
    counted = Pass("test-count", lambda m, o: 3, "returns a count: the module, rewritten in place")
    with new_context(), ir.Location.unknown():
        artifact, _ = run_passes(ir.Module.parse(MODULE), [counted, convert], _options(), "s")
        assert isinstance(artifact, Program) and artifact_text(artifact) == "// a program"
        with pytest.raises(CompileError, match="pass 'test-count' follows 'test-convert'"):
            run_passes(ir.Module.parse(MODULE), [convert, counted], _options(), "s")


def test_disabled_pass_does_not_run():
    off = Pass("test-off", _marker("off"), "never", enabled=lambda o: False)
    with new_context(), ir.Location.unknown():
        module, records = run_passes(ir.Module.parse(MODULE), [off], _options(), "s")
        assert records == [] and "test.off" not in module.operation.attributes


def test_a_python_pass_that_raises_names_itself_and_leaves_its_stages_input(tmp_path):
    import dataclasses

    from dynamo_mlir.codegen.driver import run_stages
    from dynamo_mlir.codegen.target import Stage

    def broken(module, options):
        module.body.operations[0].erase()  # half done, then a bug
        raise RuntimeError("boom")
    target = dataclasses.replace(get_target("cpu"), stages=(Stage("s", "mlir", passes=(Pass("test-broken", broken, "raises"),)),))
    with new_context(), ir.Location.unknown():
        with pytest.raises(CompileError, match="stage 's' failed: pass 'test-broken': RuntimeError: boom") as e:
            run_stages(ir.Module.parse(MODULE), target, config.resolve({"target": "cpu", "repro_dir": str(tmp_path)}))
    assert "func.func @main" in open(e.value.repro).read()  # the stage's input, from before the pass ran


def test_every_cpu_stage_is_named_passes_and_dumps_one_file_each(tmp_path):
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.tanh(x) @ x.t(), backend="mlir",
                      options={"dump_dir": str(tmp_path), "dump_passes": True})
    x = torch.randn(8, 8)
    torch.testing.assert_close(f(x), torch.tanh(x) @ x.t())
    s = dynamo_mlir.stats()
    assert s["ops_compiled"] >= 1
    target = get_target("cpu")
    enabled_passes = {p.name for stage in target.stages for p in stage.passes if p.enabled(_options())}
    assert set(s["pass_seconds"]) == enabled_passes  # each timed, in stats()
    ir_stages = [st for st in target.stages if st.ext == "mlir"]  # then `object`: a translation, not a pass
    assert [st.name for st in target.stages if st not in ir_stages] == ["object"]
    assert sum(s["pass_seconds"].values()) <= sum(s["stage_seconds"][st.name] for st in ir_stages)
    for stage in ir_stages:
        assert stage.passes, stage.name
        files = sorted(glob.glob(str(tmp_path / f"*.{stage.name}.[0-9][0-9]-*.mlir")))
        ran = [os.path.basename(p).split("-", 1)[1].removesuffix(".mlir") for p in files]
        enabled = [p.name for p in stage.passes if p.enabled(_options())]
        assert ran == enabled, (stage.name, ran)
        with new_context():  # each is IR that parses
            ir.Module.parse(open(files[-1]).read())


def test_print_after_all_prints_python_passes(caplog):
    torch._dynamo.reset()
    with caplog.at_level(logging.WARNING, logger="dynamo_mlir"):
        torch.compile(torch.sin, backend="mlir", options={"print_after_all": True})(torch.randn(4))
    printed = [r.getMessage() for r in caplog.records if "IR Dump After" in r.getMessage()]
    assert any("IR Dump After cpu-lower-dynamo-ops (dynamo-mlir pass" in m for m in printed)


def test_cli_lists_passes_with_their_contracts(capsys):
    assert cli.main(["passes", "--target", "cpu", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["cpu-call-blas"]["requires"] == ["cpu-unshare-zero-fills", "cpu-bufferize"]
    assert rows["cpu-call-blas"]["stages"] == ["cpu.loops"] and rows["cpu-plan-memory"]["options"] == ["plan_memory"]


def test_cli_dump_after_each_pass(tmp_path):
    assert cli.main(["dump", f"{MODELS}:mlp", "--after-each-pass", "--out", str(tmp_path)]) == 0
    assert glob.glob(str(tmp_path / "*.loops.*-cpu-bufferize.mlir"))


def test_cli_dump_follows_the_target_option(tmp_path, capsys):
    """-O target=cuda used to dump for cpu and say nothing."""
    assert cli.main(["dump", f"{MODELS}:mlp", "-O", "target=cuda", "--out", str(tmp_path)]) == 0
    assert glob.glob(str(tmp_path / "*.ptx.ptx"))
    assert cli.main(["dump", f"{MODELS}:mlp", "--target", "cpu", "-O", "target=cuda"]) == 2
    assert "name different targets" in capsys.readouterr().err


def test_cuda_stages_up_to_nvvm_are_named_passes(tmp_path):
    """No GPU needed: the cuda stages are generated for CPU tensors (the regions then run
    eagerly); the linalg, buffers, gpu and nvvm stages dump one file per pass, the last of nvvm
    the CudaProgram it makes (ll and ptx are translations, not passes)."""
    assert cli.main(["dump", f"{MODELS}:mlp", "--target", "cuda", "--after-each-pass", "--out", str(tmp_path)]) == 0
    target = get_target("cuda")
    options = config.bind(config.resolve({"target": "cuda"}), target)
    for stage in target.stages:
        files = sorted(glob.glob(str(tmp_path / f"*.{stage.name}.[0-9][0-9]-*.mlir")))
        ran = [os.path.basename(p).split("-", 1)[1].removesuffix(".mlir") for p in files]
        assert ran == [p.name for p in stage.passes if p.enabled(options)], stage.name
        assert bool(stage.passes) == (stage.name not in ("ll", "ptx")), stage.name
    kernels = open(glob.glob(str(tmp_path / "*.gpu.[0-9][0-9]-cuda-kernels.mlir"))[0]).read()
    assert "gpu.launch" in kernels and "gpu.module" not in kernels  # outlining is the next pass
    program = open(glob.glob(str(tmp_path / "*.nvvm.[0-9][0-9]-cuda-program.mlir"))[0]).read()
    assert open(glob.glob(str(tmp_path / "*.nvvm.mlir"))[0]).read().endswith(program.split("\n", 1)[1])
    assert "// host main(" in program and "llvm.func @" in program  # the host schedule with the device module


def _pass_files(folder, unit: str, stages) -> list[tuple[str, str]]:
    """(pass name, file of the IR after it) in the order the passes ran, from `unit`'s dynamo
    module through `stages`."""
    out = []
    for stage in stages:
        for path in sorted(glob.glob(os.path.join(folder, f"{unit}.{stage}.[0-9][0-9]-*.mlir"))):
            out.append((os.path.basename(path).split(".")[2].split("-", 1)[1], path))
    return out


def _body(text: str) -> str:
    """The IR of a pass dump, without its header, the FX nodes a cuda host schedule's library
    step names and the graph ops in kernel names (both read from op locations, which a dump does
    not print: a parsed dump has none)."""
    lines = [re.sub(r"^(//\s+torch .*) for .*$", r"\1", line) for line in text.splitlines()]
    return without_ops("\n".join(line for line in lines if not line.startswith("// dynamo-mlir")).strip())


def _compile_with_pass_dumps(case: str, folder: str, target: str) -> None:
    from dynamo_mlir.tools.models import cnn, transformer_block

    from helpers import zeros_runtime

    torch._dynamo.reset()
    options = {"target": target, "dump_dir": folder, "dump_passes": True}
    with zeros_runtime(target) if target == "cuda" else contextlib.nullcontext():
        if case == "mlp_train":
            model, x = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)), torch.randn(8, 16)
            torch.compile(model, backend="mlir", options=options)(x).sum().backward()
        else:
            model, x = (cnn(), torch.randn(2, 3, 32, 32)) if case == "cnn" else (transformer_block(), torch.randn(2, 16, 64))
            with torch.no_grad():
                torch.compile(model.eval(), backend="mlir", options=options)(x)


@pytest.mark.parametrize("target,case", [("cpu", "mlp_train"), ("cpu", "cnn"), ("cpu", "transformer_block"),
                                         ("cuda", "mlp_train"), ("cuda", "cnn")])
def test_each_pass_alone_gives_what_the_pipeline_gave(target, case, tmp_path):
    """Every named pass, run alone on the IR the pass before it left (parsed back from its
    dump), makes exactly the IR it made in the pipeline: what a pass needs is in the IR, not in
    Python state or the in-memory form of an op (cpu-fold-transposes once skipped every matmul of
    a parsed module: the parser spells out a matmul's default indexing maps)."""
    _compile_with_pass_dumps(case, str(tmp_path), target)
    stages = [s.name for s in get_target(target).stages if s.passes]
    units = sorted({os.path.basename(p).split(".")[0] for p in glob.glob(str(tmp_path / "*.dynamo.mlir"))})
    assert units
    options = config.bind(config.resolve({"target": target}), get_target(target))
    checked = set()
    for unit in units:
        before = str(tmp_path / f"{unit}.dynamo.mlir")
        for name, after in _pass_files(str(tmp_path), unit, stages):
            with new_context(), ir.Location.unknown():
                module = ir.Module.parse(open(before).read())
                module, _ = run_passes(module, [get_pass(name)], options, "test", check_requires=False)
                assert _body(artifact_text(module)) == _body(open(after).read()), (unit, name)
            checked.add(name)
            before = after
    assert checked == {p.name for s in get_target(target).stages for p in s.passes if p.enabled(options)}


def test_every_pass_has_an_ir_test_running_it_alone():
    """Each named pass of the cpu and cuda stages is run alone by some tests/ir/*.mlir RUN line
    (`dynamo-mlir pass NAME %s`): a new pass comes with one."""
    ran = set()
    for path in glob.glob(os.path.join(os.path.dirname(__file__), "ir", "*.mlir")):
        ran |= set(re.findall(r"^//\s*RUN:\s*dynamo-mlir pass ([\w-]+) %s", open(path).read(), re.MULTILINE))
    passes = {p.name for name in ("cpu", "cuda") for stage in get_target(name).stages for p in stage.passes}
    assert passes - ran == set(), sorted(passes - ran)


def test_bufferize_needs_the_arguments_read_only_first():
    """cpu-bufferize would write the caller's tensors (issue 22's addmm) without the argument
    attributes cpu-read-only-arguments sets: a loops stage without it is refused, naming it."""
    options = _options()
    with new_context(), ir.Location.unknown():
        with pytest.raises(CompileError, match="pass 'cpu-bufferize' requires \\['cpu-read-only-arguments'\\]"):
            run_passes(ir.Module.parse(MODULE), [get_pass("cpu-distinct-results"), get_pass("cpu-bufferize")],
                       options, "loops")
