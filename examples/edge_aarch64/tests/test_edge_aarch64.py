"""The aarch64 target (dynamo_mlir_edge): models compiled ahead of time to AArch64 shared
libraries, run under qemu-aarch64 and compared with eager PyTorch; the artifacts are AArch64 ELF
files; the CLI lists the target and dumps every stage down to the library.

Needs the Debian packages qemu-user and gcc-aarch64-linux-gnu (skipped, with the reason, without)."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir import plugin

REPO = pathlib.Path(__file__).resolve().parents[3]
TOOLS = {"qemu-aarch64": "qemu-user", "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu"}
MISSING = [f"{tool} (Debian package {pkg})" for tool, pkg in TOOLS.items() if shutil.which(tool) is None]
needs_toolchain = pytest.mark.skipif(bool(MISSING), reason=f"the aarch64 target needs {', '.join(MISSING)}")

EM_AARCH64, ET_REL, ET_DYN = 183, 1, 3


def elf_kind(path) -> tuple[int, int]:
    """(e_type, e_machine) of a 64-bit little-endian ELF file (what `file` reads)."""
    head = pathlib.Path(path).read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 2 and head[5] == 1, f"{path}: not a 64-bit little-endian ELF"
    return int.from_bytes(head[16:18], "little"), int.from_bytes(head[18:20], "little")


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 1)).eval()


class TransformerBlock(torch.nn.Module):
    """Pre-norm block: layernorm, multi-head self-attention, residual, layernorm, GELU MLP, residual."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.fc1, self.fc2 = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        attention = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(attention)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def compile_and_compare(model, x, artifacts):
    dynamo_mlir.reset()
    torch._dynamo.reset()
    options = {"target": "aarch64", "aarch64_artifact_dir": str(artifacts), "strict": True}
    with torch.no_grad():
        got = torch.compile(model, backend="mlir", options=options)(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["targets"] == ["aarch64"], s["targets"]
    assert s["fallback_ops"] == {} and s["ops_library"] == 0 and s["runtime_fallback_calls"] == 0, s
    assert s["ops_compiled"] > 0
    return s


def assert_aarch64_library(artifacts):
    (library,) = pathlib.Path(artifacts).glob("*.so")  # the deploy artifact of the one region
    assert elf_kind(library) == (ET_DYN, EM_AARCH64)
    objdump = shutil.which("aarch64-linux-gnu-objdump")  # binutils-aarch64-linux-gnu, gcc's dependency
    if objdump:
        code = subprocess.run([objdump, "-d", str(library)], capture_output=True, text=True, check=True).stdout
        assert "<main_packed>:" in code and "file format elf64-littleaarch64" in code
        assert "\tret" in code and re.search(r"\bv\d+\.4s\b", code)  # AArch64 code, NEON vectors (+neon)


@needs_toolchain
def test_mlp_runs_as_an_aarch64_library_under_qemu_and_matches_eager(tmp_path):
    s = compile_and_compare(mlp(), torch.randn(16, 10), tmp_path)
    # Each Linear is decomposed (addmm -> mm, scaled adds): all of them run in the library.
    assert s["compiled_ops"]["aten.mm.default"] == 3 and s["compiled_ops"]["aten.relu.default"] == 2
    assert_aarch64_library(tmp_path)


@needs_toolchain
def test_transformer_block_runs_as_an_aarch64_library_under_qemu_and_matches_eager(tmp_path):
    torch.manual_seed(0)
    s = compile_and_compare(TransformerBlock().eval(), torch.randn(2, 8, 32), tmp_path)
    for op in ("aten.var_mean.correction", "aten.bmm.default", "aten._safe_softmax.default", "aten.gelu.default"):
        assert s["compiled_ops"].get(op), (op, s["compiled_ops"])
    assert_aarch64_library(tmp_path)


@needs_toolchain
def test_dynamic_shapes_are_refused_with_the_reason(tmp_path):
    f = lambda x: torch.sin(x) + 1
    dynamo_mlir.reset()
    torch._dynamo.reset()
    options = {"target": "aarch64", "aarch64_artifact_dir": str(tmp_path)}
    x = torch.randn(5)
    torch.testing.assert_close(torch.compile(f, backend="mlir", dynamic=True, options=options)(x), f(x))
    s = dynamo_mlir.stats()
    assert s["ops_compiled"] == 0 and s["fallback_ops"] == {"aten.sin.default": 1, "aten.add.Tensor": 1}
    assert all("compiles static shapes only" in why for _, why in s["fallback_reasons"]), s["fallback_reasons"]
    assert not list(tmp_path.glob("*.so"))


def test_the_target_is_explicit_only_and_never_chosen_for_cpu_tensors():
    target = plugin.get_target("aarch64")
    assert target.device_type == "cpu" and target.served_device_types() == ()
    assert plugin.target_for_device("cpu").name == "cpu"
    assert target.stage_names() == ["linalg", "loops", "llvm", "ll", "obj", "so"]


def test_a_bad_target_option_is_an_error_naming_it():
    # Raised to the caller (torch.compile wraps it), never turned into a quiet eager fallback.
    with pytest.raises(Exception, match="invalid value for option 'aarch64_features'"):
        torch._dynamo.reset()
        torch.compile(lambda x: x + 1, backend="mlir",
                      options={"target": "aarch64", "aarch64_features": "neon"})(torch.randn(3))


def cli(*args, cwd=REPO):
    run = subprocess.run([sys.executable, "-m", "dynamo_mlir.tools.cli", *args], capture_output=True, text=True,
                         cwd=cwd, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_cli_lists_the_target_with_its_stages():
    out = cli("targets")
    block = out[out.index("aarch64  ("):].split("\n")[:3]
    assert "chosen only by options={'target': ...}" in block[0]
    assert block[2].strip() == ("stages: fx.txt -> aten.txt -> dynamo.mlir -> linalg.mlir -> loops.mlir -> "
                                "llvm.mlir -> ll.ll -> obj.o -> so.so")


@needs_toolchain
def test_cli_dump_writes_every_stage_down_to_the_shared_library(tmp_path):
    out = tmp_path / "dump"
    cli("dump", "--target", "aarch64", "tests/models_for_cli.py:mlp", "--out", str(out),
        "-O", f"aarch64_artifact_dir={tmp_path / 'artifacts'}")
    region = "g1_inference_fused_0"
    for stage in ("dynamo.mlir", "linalg.mlir", "loops.mlir", "llvm.mlir", "ll.ll", "obj.o", "so.so"):
        assert (out / f"{region}.{stage}").is_file(), sorted(os.listdir(out))
    assert (out / "g0_dynamo.fx.txt").is_file() and (out / "g1_inference.aten.txt").is_file()
    assert 'target triple = "aarch64-unknown-linux-gnu"' in (out / f"{region}.ll.ll").read_text()
    assert elf_kind(out / f"{region}.obj.o") == (ET_REL, EM_AARCH64)
    assert elf_kind(out / f"{region}.so.so") == (ET_DYN, EM_AARCH64)
    # The dumped library is the one that ran (the CLI runs the model once).
    (ran,) = (tmp_path / "artifacts").glob("*.so")
    assert ran.read_bytes() == (out / f"{region}.so.so").read_bytes()


def test_without_the_cross_tools_the_target_says_which_debian_packages_to_install(monkeypatch):
    from dynamo_mlir_edge import toolchain

    # no qemu-aarch64, no aarch64-linux-gnu-gcc, no sysroot, whatever this machine has installed
    monkeypatch.setattr(toolchain, "_present", lambda tool: False)
    assert not plugin.get_target("aarch64").available()
    with pytest.raises(plugin.CompileError, match=r"apt-get install gcc-aarch64-linux-gnu libc6-arm64-cross qemu-user"):
        toolchain.require("load")
    dynamo_mlir.reset()
    torch._dynamo.reset()
    f = lambda x: torch.tanh(x) * 3
    x = torch.randn(6)
    torch.testing.assert_close(torch.compile(f, backend="mlir", options={"target": "aarch64"})(x), f(x))
    s = dynamo_mlir.stats()  # the stages up to the object file ran; linking could not: the region ran eagerly
    assert s["partitions_failed"] == 1 and s["fallback_ops"] == {"aten.tanh.default": 1, "aten.mul.Tensor": 1}
    assert "install them with `apt-get install gcc-aarch64-linux-gnu`" in dynamo_mlir.explain()
