"""Options: the core's and each target's own (codegen/options.py), resolved with one precedence
(explicit > DYNAMO_MLIR_* > default), validated, and refused by name when unknown; a plugin
target adds an option without touching the core; cuda_rowfuse_only is keyed on the graph."""

import dataclasses
import json
import os

import pytest
import torch

import dynamo_mlir
from torch_mlir import ir

from cuda_models import MODELS
from dynamo_mlir.codegen import config, get_target, register_target, run_stages, target as target_registry
from dynamo_mlir.codegen.options import TargetOptions, option
from dynamo_mlir.dialects import new_context
from dynamo_mlir.tools import cli
from helpers import assert_all_compiled


def test_core_options_hold_no_target_option():
    for name, target in config.option_sets().items():
        if name != "core":
            assert set(target.names()).isdisjoint(config.Options.names()), name
    assert "cuda_arch" in get_target("cuda").options_class.names()
    assert "opt_level" in get_target("cpu").options_class.names()


@pytest.mark.parametrize("explicit,env,want", [({}, {}, 2), ({}, {"DYNAMO_MLIR_OPT_LEVEL": "3"}, 3),
                                               ({"opt_level": 1}, {"DYNAMO_MLIR_OPT_LEVEL": "3"}, 1)])
def test_target_option_precedence(explicit, env, want):
    options = config.resolve({"target": "cpu", **explicit}, environ=env)
    assert options.target_options.opt_level == want


def test_env_applies_only_to_the_target_that_declares_it():
    options = config.resolve({"target": "cpu"}, environ={"DYNAMO_MLIR_CUDA_ARCH": "sm_80"})
    assert options.target_options == get_target("cpu").options_class()
    cuda = config.bind(config.resolve({}, environ={}), get_target("cuda"), {"DYNAMO_MLIR_CUDA_ARCH": "sm_80"})
    assert cuda.target_options.cuda_arch == "sm_80"


def test_unknown_option_names_every_option_set():
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'cuda_fuse_row'; known options: core: .*cpu: "
                                         r"\['opt_level', 'library_matmul'.*\]; cuda: \[.*'cuda_fuse_rows'"):
        config.resolve({"cuda_fuse_row": True})


def test_another_targets_option_is_refused_naming_the_chosen_targets_options():
    with pytest.raises(ValueError, match=r"'cuda_arch' \(an option of cuda\) for target 'cpu'.*its options: \['opt_level', 'library_matmul'"):
        config.resolve({"target": "cpu", "cuda_arch": "sm_90"})
    # With the target chosen by the inputs' device, the graph's compile refuses it: raised to the
    # caller, not turned into a quiet fallback to eager.
    torch._dynamo.reset()
    dynamo_mlir.reset()
    with pytest.raises(Exception, match=r"'cuda_arch' \(an option of cuda\) for target 'cpu'"):
        torch.compile(lambda x: x + 1, backend="mlir", options={"cuda_arch": "sm_90"})(torch.randn(2))
    assert dynamo_mlir.stats()["fallback_ops"] == {}
    # The cpu target's own option is taken, and the graph compiles.
    torch._dynamo.reset()
    x = torch.randn(2)
    torch.testing.assert_close(torch.compile(lambda x: x + 1, backend="mlir", options={"opt_level": 1})(x), x + 1)
    assert_all_compiled()


@pytest.mark.parametrize("options,why", [
    ({"target": "cuda", "cuda_arch": "90"}, "a PTX architecture is sm_<number>"),
    ({"target": "cpu", "opt_level": 4}, "optimisation level is 0-3"),
    ({"strict": "yes"}, "expected bool, got str"),
    ({"target": "cuda", "cuda_rowfuse_only": "1:0-2"}, "is not \\[GRAPH:\\]LO-HI"),
    ({"target": "cdua"}, "unknown target 'cdua'"),
])
def test_invalid_values_are_refused(options, why):
    with pytest.raises(ValueError, match=why):
        config.resolve(options)


def test_environment_text_is_parsed_by_type():
    with pytest.raises(ValueError, match="takes a boolean"):
        config.resolve({}, environ={"DYNAMO_MLIR_STRICT": "maybe"})
    assert config.resolve({}, environ={"DYNAMO_MLIR_STRICT": "on"}).strict is True


@dataclasses.dataclass(frozen=True)
class ToyOptions(TargetOptions):
    toy_tile: int = option(8, "Tile size of the toy target.", lambda v: None if v > 0 else "must be positive")


@pytest.fixture
def toy_target():
    """A plugin target (the cpu stages) with an option of its own, declared in its own class."""
    toy = register_target(dataclasses.replace(get_target("cpu"), name="toy", options_class=ToyOptions))
    try:
        yield toy
    finally:
        target_registry._TARGETS.pop("toy")


def test_a_plugin_target_declares_its_own_option(toy_target, capsys):
    assert config.resolve({"target": "toy", "toy_tile": 4}).target_options == ToyOptions(4)
    assert config.resolve({"target": "toy"}, environ={"DYNAMO_MLIR_TOY_TILE": "16"}).target_options.toy_tile == 16
    with pytest.raises(ValueError, match="must be positive"):
        config.resolve({"target": "toy", "toy_tile": 0})
    assert cli.main(["options", "--target", "toy"]) == 0
    out = capsys.readouterr().out
    assert "target toy:\n  toy_tile (DYNAMO_MLIR_TOY_TILE; default 8)" in out and "cuda_arch" not in out


def test_cli_lists_options_per_target(capsys):
    assert cli.main(["options"]) == 0
    out = capsys.readouterr().out
    for heading in ("core (every target):", "target cpu:", "target cuda:"):
        assert heading in out
    assert "cuda_fuse_rows (DYNAMO_MLIR_CUDA_FUSE_ROWS; default True)" in out
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "target cuda:" in capsys.readouterr().out


def _launches(graph_name: str, **cuda_options) -> int:
    """gpu.launch_func count of the softmax model (two row reductions) at the gpu stage."""
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS["softmax"]())
        options = config.resolve({"target": "cuda", **cuda_options})
        run = run_stages(module, get_target("cuda"), options, graph_name, keep_text=True, stop_after="gpu")
    return run.records[-1].text.count("gpu.launch_func")


def test_rowfuse_only_is_keyed_on_the_graph_not_on_a_process_count():
    fused, unfused = _launches("g7_forward_fused_0"), _launches("g7_forward_fused_0", cuda_fuse_rows=False)
    assert fused < unfused
    # The same selection gives the same kernels however often it ran before in this process.
    for _ in range(2):
        assert _launches("g7_forward_fused_0", cuda_rowfuse_only="forward:0-9") == fused
        assert _launches("g7_forward_fused_0", cuda_rowfuse_only="backward:0-9") == unfused
        assert _launches("g9_backward_fused_0", cuda_rowfuse_only="backward:0-9") == fused
        assert _launches("g7_forward_fused_0", cuda_rowfuse_only="0-0") == unfused


def test_readme_lists_every_option():
    """The README's table is written by hand: it must name each option of the core and its
    targets once, under its owner."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    for owner, cls in config.option_sets().items():
        if not cls.__module__.startswith("dynamo_mlir."):
            continue  # an installed plugin target's options: its own package documents them
        for row in cls.describe():
            prefix = "" if owner == "core" else f"{owner}: "
            assert f"| {prefix}`{row['name']}` | `{row['env']}` |" in readme, row["name"]


def test_cli_option_flags_are_typed_and_checked(tmp_path, capsys):
    models = os.path.join(os.path.dirname(__file__), "models_for_cli.py")
    assert cli.main(["dump", f"{models}:gelu_add", "--out", str(tmp_path), "-O", "opt_level=0", "-O", "strict=1"]) == 0
    index = json.load(open(tmp_path / "index.json"))
    assert index["options"]["opt_level"] == 0 and index["options"]["strict"] is True
    assert cli.main(["dump", f"{models}:gelu_add", "--out", str(tmp_path), "-O", "cuda_arch=sm_90"]) == 2
    assert "'cuda_arch' (an option of cuda) for target 'cpu'" in capsys.readouterr().err
    assert cli.main(["dump", f"{models}:gelu_add", "-O", "opt_level"]) == 2
    assert "-O takes KEY=VALUE" in capsys.readouterr().err


def test_a_compile_loads_only_the_target_it_uses(tmp_path):
    """A new process compiling for the CPU, its cache folder set through the environment, imports
    no other target (each imports its pipeline: a tenth of a second of a warm start's first call);
    an unknown DYNAMO_MLIR_* variable still gets its warning, which needs every target's options."""
    import subprocess
    import sys

    script = (
        "import sys, torch, dynamo_mlir\n"
        "f = torch.compile(lambda x: torch.relu(x) * 2, backend='mlir')\n"
        "x = torch.randn(8)\n"
        "assert torch.equal(f(x), torch.relu(x) * 2)\n"
        "assert dynamo_mlir.stats()['ops_compiled'] == 2, dynamo_mlir.explain()\n"
        "print(sorted(m for m in sys.modules if m.startswith('dynamo_mlir.codegen.') and m.count('.') == 2))\n"
    )
    env = {**os.environ, "DYNAMO_MLIR_CACHE_DIR": str(tmp_path)}
    env.pop("DYNAMO_MLIR_TARGET", None)
    loaded = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    targets = [m for m in eval(loaded.stdout.strip().splitlines()[-1]) if m.split(".")[-1] in ("cpu", "cuda")]
    assert targets == ["dynamo_mlir.codegen.cpu"]
    env["DYNAMO_MLIR_NOT_AN_OPTION"] = "1"
    warned = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert warned.returncode == 0 and "ignoring environment variable(s) ['DYNAMO_MLIR_NOT_AN_OPTION']" in warned.stderr
