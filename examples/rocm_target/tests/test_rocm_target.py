"""The rocm target (an out-of-tree plugin): every stage down to an HSA code object, checked with
a real disassembler, and, on a machine without an AMD GPU, compiling falls back to eager and
says why.

System tools (Debian): `llvm-19` (llvm-objdump/llvm-readelf that know gfx942; `llvm` 14 knows
gfx90a only) and `lld-19` (ld.lld 19 or newer links the code object; Debian's plain `lld` is 14, too old).
"""

import ctypes
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import dynamo_mlir
from dynamo_mlir import plugin
from dynamo_mlir_rocm import code_object

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "rocm_models.py")
STAGES = ["linalg", "buffers", "gpu", "rocdl", "ll", "hsaco"]
E_FLAGS_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C}
# The first LLVM whose disassembler knows each architecture.
MIN_LLVM = {"gfx90a": 13, "gfx942": 17}


def _newest(tool: str):
    """(path, LLVM major version) of the newest `tool` on PATH (Debian: llvm-objdump-19, ...)."""
    for v in range(30, 12, -1):
        path = shutil.which(f"{tool}-{v}")
        if path:
            return path, v
    path = shutil.which(tool)
    if path is None:
        return None, 0
    version = re.search(r"LLVM version (\d+)", subprocess.run([path, "--version"], capture_output=True, text=True).stdout)
    return path, int(version.group(1)) if version else 0


def _tools(arch: str):
    objdump, v = _newest("llvm-objdump")
    readelf, _ = _newest("llvm-readelf")
    if objdump is None or readelf is None:
        pytest.skip("llvm-objdump/llvm-readelf not found: apt-get install llvm-19")
    if v < MIN_LLVM[arch]:
        pytest.skip(f"llvm-objdump {v} does not know {arch}: apt-get install llvm-19")
    if code_object.linker() is None:
        pytest.skip(f"ld.lld {code_object.MIN_LLD} or newer not found: apt-get install lld-{code_object.MIN_LLD}")
    return objdump, readelf


def _cli(*args, timeout=600):
    run = subprocess.run([sys.executable, "-m", "dynamo_mlir.tools.cli", *args], capture_output=True, text=True,
                         timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _dump(model: str, out: str, *options: str) -> str:
    """`dynamo-mlir dump --target rocm` of one model; returns the one region's file prefix."""
    _cli("dump", "--target", "rocm", f"{MODELS}:{model}", "--out", out, *options)
    hsaco = [f for f in os.listdir(out) if f.endswith(".hsaco.hsaco")]
    assert len(hsaco) == 1, sorted(os.listdir(out))
    return os.path.join(out, hsaco[0][:-len(".hsaco.hsaco")])


def _kernels_of_host_schedule(prefix: str) -> set:
    with open(prefix + ".host.txt") as f:
        return set(re.findall(r"launch (\w+) grid=", f.read()))


def _symbols(readelf: str, path: str):
    """(name, type, section index) of every symbol of the code object, null entries left out."""
    text = subprocess.run([readelf, "--syms", "--dyn-syms", path], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in text.splitlines() if re.match(r"\s*\d+:", line)]
    return [(r[7], r[3], r[6]) for r in rows if len(r) >= 8]


def test_targets_lists_rocm_with_its_stages():
    listing = json.loads(_cli("targets", "--json").stdout)
    rocm = next(t for t in listing if t["name"] == "rocm")
    assert [s.split(".")[0] for s in rocm["stages"]] == STAGES


def test_the_core_steps_are_named_passes_each_running_alone(tmp_path):
    """linalg, buffers and gpu list the core's steps as named passes (plugin.stages.*_passes):
    `--after-each-pass` dumps one file each, and each pass run alone (`dynamo-mlir pass NAME
    --target rocm`) on the IR the pass before it left makes what it made in the pipeline."""
    _cli("dump", "--target", "rocm", f"{MODELS}:mlp", "--out", str(tmp_path), "--after-each-pass")
    target = plugin.get_target("rocm")
    before = next(str(p) for p in tmp_path.glob("*.dynamo.mlir"))
    unit = os.path.basename(before).split(".")[0]
    ran = []
    for stage in target.stages[:3]:
        for path in sorted(tmp_path.glob(f"{unit}.{stage.name}.[0-9][0-9]-*.mlir")):
            name = path.name.split(".")[2].split("-", 1)[1]
            out = _cli("pass", name, before, "--target", "rocm").stdout
            body = [line for line in path.read_text().splitlines() if not line.startswith("// dynamo-mlir")]
            # A kernel's name comes from the graph ops of its locations, which dumps do not print.
            unnamed = plugin.kernel_names.without_ops
            assert unnamed(out.strip()) == unnamed("\n".join(body).strip()), name
            ran.append(name)
            before = str(path)
    assert ran == [p.name for s in target.stages[:3] for p in s.passes]
    assert ran[0] == "rocm-lower-dynamo-ops" and "rocm-fuse-rows" in ran and ran[-1] == "rocm-merge-identical-kernels"


@pytest.mark.parametrize("model,arch", [("mlp", "gfx90a"), ("transformer_block", "gfx90a"), ("mlp", "gfx942")])
def test_dump_writes_every_stage_down_to_a_code_object_for_the_gfx_arch(tmp_path, model, arch):
    objdump, readelf = _tools(arch)
    prefix = _dump(model, str(tmp_path), "-O", f"rocm_arch={arch}")
    for stage, ext in zip(STAGES, ["mlir", "mlir", "mlir", "mlir", "ll", "hsaco"]):
        assert os.path.getsize(f"{prefix}.{stage}.{ext}") > 0, stage
    with open(prefix + ".rocdl.mlir") as f:
        rocdl = f.read()
    assert "rocdl.kernel" in rocdl and "rocdl.workitem.id.x" in rocdl
    assert "__ocml" not in open(prefix + ".ll.ll").read()  # no call left to ROCm's device library

    code = prefix + ".hsaco.hsaco"
    with open(code, "rb") as f:
        head = f.read(64)
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 3  # ET_DYN: ld.lld -shared
    assert int.from_bytes(head[48:52], "little") & 0xFF == E_FLAGS_MACH[arch]
    header = subprocess.run([readelf, "-h", code], capture_output=True, text=True, check=True).stdout
    assert arch in header, header

    symbols = _symbols(readelf, code)
    assert not [s for s in symbols if s[2] == "UND" and s[0]], "undefined symbols left in the code object"
    kernels = _kernels_of_host_schedule(prefix)
    assert kernels and {n for n, t, _ in symbols if t == "FUNC"} == kernels
    assert {n for n, t, _ in symbols if t == "OBJECT" and n.endswith(".kd")} == {f"{k}.kd" for k in kernels}

    asm = subprocess.run([objdump, "--triple=amdgcn-amd-amdhsa", f"--mcpu={arch}", "-d", code],
                         capture_output=True, text=True, check=True).stdout
    assert set(re.findall(r"^[0-9a-f]+ <(\w+)>:", asm, re.M)) == kernels
    instructions = re.findall(r"^\s+([a-z_0-9]+)", asm, re.M)
    assert "s_endpgm" in instructions and "global_load_dword" in " ".join(instructions)
    assert any(i.startswith(("v_add_f32", "v_fma_f32", "v_fmac_f32", "v_pk_fma_f32", "v_mac_f32")) for i in instructions)
    assert "<unknown>" not in asm  # every word decoded as an instruction of this ISA


def _load_models():
    spec = importlib.util.spec_from_file_location("rocm_models_for_test", MODELS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module



def test_a_graph_of_symbolic_sizes_reaches_a_code_object_through_the_core_gpu_strategies(tmp_path):
    """`--dynamic`: the transformer block with symbolic batch and sequence sizes. The kernels come
    from the core's codegen/gpu strategies (row groups for its layer norms and softmax, chunks
    for a flat op) with this target's capabilities; the host schedule's grids and sizes are
    expressions evaluated per call (the runtime: the core's launch steps on hipModuleLaunchKernel)."""
    _tools("gfx942")
    prefix = _dump("transformer_block", str(tmp_path), "--dynamic", "-O", "rocm_arch=gfx942")
    with open(prefix + ".host.txt") as f:
        host = f.read()
    assert host.startswith("host main(%0: ?x?x64xfloat32"), host
    launches = [line for line in host.splitlines() if "launch " in line]
    per_row = [line for line in launches if re.search(r"grid=\(muli\(dim\(%0, 0\), dim\(%0, 1\)\), 1, 1\)", line)]
    assert per_row, host  # a layer norm: one block per row of the symbolic batch x sequence
    # its row (64 floats), and the centered row its variance sums twice, kept in LDS between its
    # ops (the core's row_staging.py), declared as the dynamic LDS the launch provides
    assert any(" shared=512 " in line for line in per_row), host
    assert any("grid=(ceildivui(" in line for line in launches), host  # a flat op in chunks of 8192
    with open(prefix + ".hsaco.hsaco", "rb") as f:
        head = f.read(64)
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[48:52], "little") & 0xFF == E_FLAGS_MACH["gfx942"]
    with open(prefix + ".rocdl.mlir") as f:
        rocdl = f.read()
    assert "gpu.all_reduce" not in rocdl  # lowered for the wavefront
    assert "llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3" in rocdl

@pytest.mark.parametrize("model", ["mlp", "transformer_block"])
def test_compiling_for_rocm_without_an_amd_gpu_runs_eagerly_and_says_why(model):
    if plugin.get_target("rocm").available():
        pytest.skip("an AMD GPU is present: this checks the machine without one")
    if code_object.linker() is None:
        pytest.skip(f"ld.lld {code_object.MIN_LLD} or newer not found: apt-get install lld-{code_object.MIN_LLD}")
    fn, inputs = getattr(_load_models(), model)()
    dynamo_mlir.reset()
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend="mlir", options={"target": "rocm"})(*inputs)
        torch.testing.assert_close(got, fn(*inputs))
    s = dynamo_mlir.stats()
    assert s["targets"] == ["rocm"] and s["ops_compiled"] == 0 and s["ops_fallback"] > 0
    reasons = {why for _, why in s["fallback_reasons"]}
    assert reasons and all("no AMD GPU" in why for why in reasons), reasons
    assert "no AMD GPU" in dynamo_mlir.explain()


def test_load_without_an_amd_gpu_raises_a_clear_error():
    import dynamo_mlir_rocm.runtime as runtime

    if runtime.available():
        pytest.skip("an AMD GPU is present")
    with pytest.raises(runtime.NoAMDGPU, match="no AMD GPU: the rocm target generated every stage"):
        runtime.load(b"", None, None)


def _run_on_host(module_text: str, values: np.ndarray) -> np.ndarray:
    """@f(memref<Nxf32>, memref<Nxf32>) through MLIR's CPU JIT (upstream passes only)."""
    from torch_mlir import ir, passmanager
    from torch_mlir.execution_engine import ExecutionEngine
    from torch_mlir.runtime import get_ranked_memref_descriptor

    from dynamo_mlir_rocm.math_expansion import expand_erf

    with ir.Context():
        module = ir.Module.parse(module_text)
        assert expand_erf(module) == 1
        assert "math.erf" not in str(module)
        passmanager.PassManager.parse(
            "builtin.module(convert-scf-to-cf, convert-math-to-llvm, expand-strided-metadata, finalize-memref-to-llvm, "
            "convert-arith-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, reconcile-unrealized-casts)").run(module.operation)
        engine = ExecutionEngine(module, opt_level=2)
        out = np.zeros_like(values)
        args = [ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(a))) for a in (values, out)]
        engine.invoke("f", *args)
        return out


def test_the_erf_expansion_matches_torch_erf_in_float32():
    """GELU's erf has no AMDGPU instruction and ROCm's __ocml_erf_f32 is not here: the target
    expands it into arith; the same expansion, run on the host, against torch.erf."""
    x = torch.cat([torch.linspace(-6, 6, 4001), torch.tensor([0.0, -0.0, 1e-30, -1e-7, 0.999999, 1.0, 1.000001,
                                                              float("inf"), float("-inf"), float("nan")])])
    n = x.numel()
    text = f"""
      func.func @f(%x: memref<{n}xf32>, %y: memref<{n}xf32>) attributes {{llvm.emit_c_interface}} {{
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %cn = arith.constant {n} : index
        scf.for %i = %c0 to %cn step %c1 {{
          %v = memref.load %x[%i] : memref<{n}xf32>
          %e = math.erf %v : f32
          memref.store %e, %y[%i] : memref<{n}xf32>
        }}
        return
      }}"""
    got = torch.from_numpy(_run_on_host(text, x.numpy().astype(np.float32)))
    torch.testing.assert_close(got, torch.erf(x), rtol=4e-7, atol=2e-7, equal_nan=True)


def test_the_package_uses_only_the_public_plugin_api():
    root = os.path.join(HERE, "..", "dynamo_mlir_rocm")
    for name in os.listdir(root):
        if name.endswith(".py"):
            with open(os.path.join(root, name)) as f:
                imports = re.findall(r"^\s*(?:from|import)\s+(dynamo_mlir\S*)", f.read(), re.M)
            assert all(i in ("dynamo_mlir", "dynamo_mlir.plugin") for i in imports), (name, imports)


def test_a_launch_of_symbolic_sizes_evaluates_its_grid_and_sizes_per_call(monkeypatch):
    """The runtime's launch step (the core's, on hipModuleLaunchKernel), with HIP replaced by a
    recorder: each call's grid and `index` argument come from that call's tensor."""
    from types import SimpleNamespace

    from dynamo_mlir_rocm import runtime

    Apply, Dim = plugin.host_sizes.Apply, plugin.host_sizes.Dim

    calls = []

    class Recorder:
        def hipModuleLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            size = ctypes.cast(params[1], ctypes.POINTER(ctypes.c_int64)).contents.value
            calls.append(((gx, gy, gz), (bx, by, bz), size))
            return 0

    monkeypatch.setattr(runtime, "hip", lambda: Recorder())
    grid = (Apply("arith.ceildivui", (Dim(0, 0), 4096)), 1, 1)
    launch = SimpleNamespace(kernel="main_kernel", grid=grid, block=(256, 1, 1), shared=0, args=(("ptr", 0), ("index", Dim(0, 0))))
    function = SimpleNamespace(host=SimpleNamespace(index_bits=64))
    step = runtime.STEP_BUILDERS["Launch"](function, launch, SimpleNamespace(functions={"main_kernel": None}), None)
    for n in (5000, 10000, 0):
        step([torch.empty(n)], stream=0)
    assert calls == [((2, 1, 1), (256, 1, 1), 5000), ((3, 1, 1), (256, 1, 1), 10000)]  # 0 elements: no launch
