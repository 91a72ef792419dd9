"""cuda target, no GPU needed: every test model goes through the whole stage table to PTX."""

import os
import re

import pytest
import torch
import torch.nn.functional as F
from torch_mlir import ir

from cuda_models import MODELS
from dynamo_mlir.codegen import resolve, run_stages
from dynamo_mlir.codegen.target import get_target
from dynamo_mlir.dialects import new_context


def compile_ptx(model: str, fuse: bool = True, **kwargs):
    target = get_target("cuda")
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS[model](**kwargs))
        run = run_stages(module, target, resolve({"cuda_arch": "sm_90", "cuda_fuse_rows": fuse}), keep_text=True)
    return run.artifact, {r.name: r.text for r in run.records}


def kernels_of(ptx: str) -> dict[str, str]:
    """entry name -> its PTX body."""
    parts = re.split(r"\.visible \.entry (\w+)\(", ptx)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cuda_target_is_registered():
    target = get_target("cuda")
    assert target.device_type == "cuda"
    assert target.stage_names() == ["linalg", "buffers", "gpu", "nvvm", "ll", "ptx"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_reaches_ptx(model):
    program, texts = compile_ptx(model)
    ptx = program.device
    assert ".target sm_90" in ptx
    entries = kernels_of(ptx)
    assert entries, "no kernel entry points"
    assert set(entries) == set(program.kernels)
    assert "gpu.launch" in texts["gpu"] or "gpu.launch_func" in texts["gpu"]
    assert "nvvm." in texts["nvvm"]


def test_elementwise_chain_is_one_vectorized_kernel():
    program, _ = compile_ptx("elementwise_chain")
    (body,) = kernels_of(program.device).values()
    assert body.count("ld.global.v4.b32") == 2  # x and y, 16 bytes each
    assert "st.global.v4.b32" in body
    assert "ex2.approx" in body  # libdevice's expf, linked and inlined
    assert "call" not in body


def test_bf16_elementwise_uses_16_byte_accesses():
    program, _ = compile_ptx("elementwise_chain", dt="bf16")
    (body,) = kernels_of(program.device).values()
    assert "ld.global.v4.b32" in body  # 8 bf16 per access


@pytest.mark.parametrize("model", ["softmax", "layernorm"])
def test_row_reductions_are_cooperative(model):
    program, texts = compile_ptx(model)
    ptx = program.device
    assert "shfl.sync.bfly" in ptx and "bar.sync" in ptx  # warp shuffles + shared memory
    assert "gpu.all_reduce" in texts["gpu"]
    host = program.hosts[model]
    reductions = [s for s in host.steps if getattr(s, "block", (0,))[0] > 1 and s.grid[0] == 64]
    assert reductions, "one block per row"
    for body in kernels_of(ptx).values():
        assert "ld.global.v4" in body or "st.global" in body


def test_matmul_goes_to_the_library():
    program, texts = compile_ptx("mlp")
    ops = [getattr(s, "op", None) for s in program.hosts["mlp"].steps]
    assert ops.count("linalg.matmul") == 2
    assert "linalg.fill" not in texts["gpu"]  # the zero fills folded into the matmuls
    assert "ld.global.v4.b32" in program.device  # bias + relu vectorized


def test_attention_bits_transpose_argmax_cast():
    program, texts = compile_ptx("attention_bits")
    ops = [getattr(s, "op", None) for s in program.hosts["attn"].steps]
    assert "linalg.batch_matmul" in ops
    # the argmax (one thread per row: no combiner for partials) with both fills of its two
    # results (-inf and index 0) folded into its kernel, and the cast; the permute is the
    # matmul's transposed operand
    assert sorted(kernels_of(program.device)) == ["elementwise", "serial"]
    assert "linalg.fill" not in texts["gpu"]


def test_host_schedule_dump():
    target = get_target("cuda")
    program, _ = compile_ptx("softmax")
    text = target.extra_dumps["host"][1](program)
    assert text.startswith("host softmax(") and "launch row_fused grid=(64, 1, 1)" in text


ROW_CHAINS = {"softmax": 1, "log_softmax": 1, "layernorm": 3, "rmsnorm": 2}  # model -> row-sized inputs


def _launches(program, name):
    return [s for s in program.hosts[name].steps if hasattr(s, "grid")]


@pytest.mark.parametrize("model", ROW_CHAINS)
def test_row_chains_fuse_into_one_kernel(model):
    """Reductions and the elementwise ops around them: one launch, one block per row, the row
    read once (16-byte loads) and written once, partials combined by shuffles, no local memory."""
    program, texts = compile_ptx(model, r=64, c=4096)
    (launch,) = _launches(program, model)
    assert launch.grid == (64, 1, 1) and launch.block == (256, 1, 1)
    (body,) = kernels_of(program.device).values()
    # 4096 / 256 threads / 4 lanes: 4 loads per thread of each input (x, weights), x read once
    assert body.count("ld.global.v4.b32") == 4 * ROW_CHAINS[model]
    assert body.count("st.global.v4.b32") == 4  # the output written once
    assert "shfl.sync.bfly" in body and ".local" not in body
    assert texts["gpu"].count("gpu.all_reduce") == (1 if model == "rmsnorm" else 2)


@pytest.mark.parametrize("cols", [1000, 33, 100])
def test_row_fusion_guards_a_ragged_last_chunk(cols):
    program, _ = compile_ptx("layernorm", r=5, c=cols)
    assert len(_launches(program, "layernorm")) == 1
    (body,) = kernels_of(program.device).values()
    assert "setp" in body  # the last chunk's bound check


def test_rows_too_long_for_registers_stay_unfused():
    program, _ = compile_ptx("softmax", r=2, c=1 << 16)
    assert len(_launches(program, "softmax")) > 1


def test_row_fusion_can_be_turned_off():
    target = get_target("cuda")
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS["softmax"]())
        run = run_stages(module, target, resolve({"cuda_arch": "sm_90", "cuda_fuse_rows": False}))
    assert len(_launches(run.artifact, "softmax")) == 4


def test_frontend_layernorm_then_softmax_is_one_kernel(tmp_path):
    """What torch.compile imports (AOTAutograd's decompositions) fuses too, bf16 included: both
    row chains share their rows, so their four reductions go in one kernel."""
    import torch
    import torch.nn.functional as F

    fn = lambda x, w: torch.softmax(F.layer_norm(x, (256,), w, w), -1) + 1  # noqa: E731
    for dtype in (torch.float32, torch.bfloat16):
        torch._dynamo.reset()
        dump = tmp_path / str(dtype)
        options = {"strict": True, "target": "cuda", "dump_dir": str(dump), "cuda_arch": "sm_90", "cuda_fuse_rows": True}
        compiled = torch.compile(fn, backend="mlir", options=options)
        with pytest.raises((RuntimeError, AssertionError)):
            compiled(torch.randn(8, 256, dtype=dtype), torch.randn(256, dtype=dtype))
        (host,) = dump.glob("*.host.txt")
        assert host.read_text().count("launch") == 1, host.read_text()


def test_safe_softmax_with_its_mask_is_one_kernel(tmp_path):
    """SDPA's math form as AOTAutograd traces it for ViT and BERT (scores plus a mask, then
    _safe_softmax): one row kernel. Core ATen's decomposition tested each row with a boolean
    any-reduction of its own, which no row kernel takes: three kernels, that one a thread per row."""
    import torch

    fn = lambda s, m: torch.ops.aten._safe_softmax(s + m, -1)  # noqa: E731
    options = {"strict": True, "target": "cuda", "dump_dir": str(tmp_path), "cuda_arch": "sm_90"}
    with pytest.raises((RuntimeError, AssertionError)):
        torch.compile(fn, backend="mlir", options=options)(torch.randn(4, 12, 197, 197), torch.randn(4, 1, 1, 197))
    (host,) = tmp_path.glob("*.host.txt")
    assert host.read_text().count("launch") == 1, host.read_text()


def test_row_fusion_reads_bool_masks_lane_by_lane(tmp_path):
    """GPT-2's training forward: block 1's softmax reads the causal mask (an i1 buffer block 0's
    kernel wrote) inside a group vectorized by its f32 accesses. i1 is a byte in memory, a
    vector<4xi1> load packed bits: the mask came out wrong (gradients 80% off). Lane by lane now."""
    import torch

    from dynamo_mlir.tools.models import TinyGPT

    torch._dynamo.reset()
    torch.manual_seed(0)
    options = {"strict": True, "target": "cuda", "dump_dir": str(tmp_path), "cuda_arch": "sm_90", "cuda_fuse_rows": True}
    compiled = torch.compile(TinyGPT().train(), backend="mlir", options=options)
    with pytest.raises((RuntimeError, AssertionError)):
        compiled(torch.randint(0, 256, (2, 32)))
    (gpu,) = tmp_path.glob("*forward*.gpu.mlir")
    text = gpu.read_text()
    assert text.count("gpu.all_reduce") > 4  # row groups were built
    assert not re.search(r"vector<\d+xi1>", text)


def test_graph_without_inputs_that_makes_cuda_tensors_targets_cuda():
    """torch.ones(3, device="cuda") has no input to say where it runs: the target comes from the
    graph's values. It once went to the cpu target, which returned a CPU tensor (and a compiled
    randn read its CUDA seed from the host: a crash)."""
    import torch
    import torch.fx as fx
    from torch._subclasses.fake_tensor import FakeTensorMode

    from dynamo_mlir.codegen.config import resolve
    from dynamo_mlir.frontend.compile import choose_target

    graph = fx.Graph()
    ones = graph.call_function(torch.ops.aten.ones.default, ([3],), {"device": torch.device("cuda")})
    graph.output(ones)
    with FakeTensorMode(allow_non_fake_inputs=True):
        ones.meta["val"] = torch.empty(3, device="cuda")
    gm = fx.GraphModule(torch.nn.Module(), graph)
    assert choose_target(gm, [], resolve({})).name == "cuda"
    assert choose_target(gm, [], resolve({"target": "cpu"})).name == "cpu"


def test_op_without_nvvm_lowering_is_refused_before_the_translator():
    """MLIR's LLVM IR translator segfaults on an op it has no registration for: refuse it first."""
    from dynamo_mlir.codegen.cuda import ptx

    text = """module attributes {llvm.target_triple = "nvptx64-nvidia-cuda"} {
      llvm.func @k(%x: f32) -> f32 {
        %0 = math.erfc %x : f32
        llvm.return %0 : f32
      }
    }"""
    with new_context():
        module = ir.Module.parse(text)
        with pytest.raises(ptx.Untranslatable, match="math.erfc"):
            ptx.llvm_ir(module)


def test_libcall_nvptx_cannot_make_is_refused_before_codegen():
    """LLVM's NVPTX backend aborts the process on a libcall it cannot select: refuse it first."""
    from dynamo_mlir.codegen.cuda import ptx

    ll = """target triple = "nvptx64-nvidia-cuda"
    declare float @sinhf(float)
    define void @k(ptr %p) {
      %x = load float, ptr %p
      %y = call float @sinhf(float %x)
      store float %y, ptr %p
      ret void
    }"""
    with pytest.raises(ptx.Untranslatable, match="sinhf"):
        ptx.emit_ptx(ll)


@pytest.mark.parametrize("name", ["trunc", "div_trunc", "fmod_grad", "reflect_pad"])
def test_ops_that_crashed_the_translator_reach_valid_ptx(name, tmp_path):
    """trunc (and what decomposes to it) and integer abs (reflect padding's indices) were left as
    math ops that the translator crashed on; now they compile for cuda, and ptxas accepts the PTX
    where it is installed."""
    import shutil
    import subprocess

    import torch
    import torch.nn.functional as F

    import dynamo_mlir

    fns = {
        "trunc": (torch.trunc, [torch.randn(64)]),
        "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), [torch.randn(64), torch.randn(64)]),
        "fmod_grad": (lambda a, b: torch.autograd.grad(torch.fmod(a, b).sum(), (a, b)),
                      [torch.randn(64, requires_grad=True), torch.randn(64, requires_grad=True)]),
        "reflect_pad": (lambda x: F.pad(x, (2, 3), mode="reflect"), [torch.randn(2, 3, 16)]),
    }
    fn, inputs = fns[name]
    compiled = torch.compile(fn, backend="mlir", options={"target": "cuda", "cuda_arch": "sm_90",
                                                            "dump_dir": str(tmp_path), "strict": True})
    with pytest.raises(Exception, match="not a CUDA device"):  # the PTX was built; CPU tensors can't run it
        compiled(*inputs)
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["ops_compiled"] >= 1, dynamo_mlir.explain()
    ptxas = shutil.which("ptxas")
    for path in tmp_path.glob("*.ptx.ptx"):
        assert ".entry" in path.read_text()
        if ptxas:
            result = subprocess.run([ptxas, "-arch=sm_90", str(path), "-o", os.devnull], capture_output=True, text=True)
            assert result.returncode == 0, result.stderr


FUZZ_FINDINGS = {
    # a zero-size slice: MLIR gives memref<7x0xi1> no static strides; its loops have no trips
    "empty_slice": (lambda x, y: y <= x[:, -3:-3], lambda: [torch.randn(3, 7).t(), torch.randn(7, 1)]),
    # clamp(x, -1, 1) of int64: LLVM's instcombine makes it llvm.scmp, which NVPTX selects
    "int_clamp_unit": (lambda x: x.clamp(-1, 1) + 1, lambda: [torch.randint(-4, 5, (7,))]),
    # the backward's zero-size ops erased leave a fill right before a transpose
    "empty_linear_grad": (lambda x, w: F.linear(x, w),
                          lambda: [torch.randn(1, 1, 1, 1, 1, requires_grad=True), torch.randn(0, 1, requires_grad=True)]),
}


@pytest.mark.parametrize("name", list(FUZZ_FINDINGS))
def test_fuzzer_findings_compile_for_cuda(name):
    """Graphs the differential fuzzer (tests/fuzz, on an H200) saw fail to compile for cuda and
    run eagerly: each reaches PTX now (forward and backward), every op in our kernels or library
    calls. (The regions return zeros here: no GPU to run them.)"""
    import dynamo_mlir
    from helpers import zeros_runtime

    fn, inputs = FUZZ_FINDINGS[name]
    torch._dynamo.reset()
    with zeros_runtime("cuda"):
        out = torch.compile(fn, backend="mlir", options={"target": "cuda", "cuda_arch": "sm_90", "strict": True})(*inputs())
        if out.requires_grad:
            out.sum().backward()
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["ops_compiled"] >= 1 and not s["fallback_ops"], dynamo_mlir.explain()
    assert s["graphs_by_kind"] == ({"forward": 1, "backward": 1} if out.requires_grad else {"inference": 1})


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_constants_upload_in_their_own_dtype(dtype):
    """torch.ones/full/linspace in bf16 on cuda read as zeros: their memref.global was uploaded as
    float32 and the kernel read its bytes as bf16. Splat and non-splat constants, every float type."""
    import torch

    import dynamo_mlir.codegen.cuda.runtime as runtime

    dt = getattr(torch, dtype)
    expected = [torch.ones(7, dtype=dt), torch.linspace(-3, 5, 7, dtype=dt)]
    compiled = torch.compile(lambda: [torch.ones(7, dtype=dt), torch.linspace(-3, 5, 7, dtype=dt)],
                             backend="mlir", options={"target": "cuda", "cuda_arch": "sm_90", "strict": True})
    seen, saved = [], runtime.CudaFunction.__init__

    def spy(self, program, signature, options):
        seen.append(program.hosts[signature.name])
        saved(self, program, signature, options)

    runtime.CudaFunction.__init__ = spy
    try:
        compiled()  # without a GPU the call cannot run, but the program is built
    except Exception:
        pass
    finally:
        runtime.CudaFunction.__init__ = saved
    (host,) = seen
    uploaded = sorted((runtime._upload(c, "cpu") for c in host.constants.values()), key=lambda t: t.sum().item())
    assert [t.dtype for t in uploaded] == [dt] * len(uploaded) and uploaded, str(host)
    for got in uploaded:
        assert any(torch.equal(got.reshape(-1), e) for e in expected), (got, expected)


# ----------------------------------------------------------------------------- library calls in stats


def _compile_for_cuda(model, x, **options):
    """torch.compile for the cuda target on CPU tensors: every stage runs (PTX included), then the
    call fails on the CPU tensors; what was compiled, and where each op runs, is in stats()."""
    import torch

    import dynamo_mlir

    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, **options}
    with torch.no_grad(), pytest.raises(RuntimeError, match="not a CUDA device"):
        torch.compile(model, backend="mlir", options=options)(x)
    return dynamo_mlir.stats()


def _small_cnn():
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, groups=2),
                         nn.AvgPool2d(1), nn.Flatten(), nn.Linear(8 * 2 * 2, 4)).eval()


def test_mlp_for_cuda_reports_its_matmuls_as_library_calls():
    import torch

    import dynamo_mlir
    from dynamo_mlir.tools.models import mlp

    s = _compile_for_cuda(mlp().eval(), torch.randn(8, 10))
    # The last linear's bias add runs in its matmul's epilogue, one torch.addmm (cuda/matmul_bias.py);
    # the other two are fused with the ReLU after them into a kernel of ours.
    assert s["library_ops"] == {"aten.mm.default": 3, "aten.add.Tensor": 1} and s["ops_library"] == 4
    assert "aten.mm.default" not in s["compiled_ops"]  # compiled = our generated kernels only
    assert s["compiled_ops"]["aten.relu.default"] == 2 and s["compiled_ops"]["aten.add.Tensor"] == 2
    assert s["ops_fallback"] == 0
    text = dynamo_mlir.explain()
    assert f"{s['ops_compiled']} op(s) compiled, 4 library call(s), 0 eager" in text
    assert "aten.mm.default x3 (3 as library call)" in text and "aten.add.Tensor x3 (1 as library call)" in text


def test_cnn_for_cuda_reports_conv_and_pooling_as_library_calls(tmp_path):
    import torch

    s = _compile_for_cuda(_small_cnn(), torch.randn(2, 3, 12, 12), dump_dir=str(tmp_path))
    assert s["library_ops"] == {"aten.convolution.default": 2, "aten.max_pool2d_with_indices.default": 1,
                                "aten.avg_pool2d.default": 1, "aten.mm.default": 1, "aten.add.Tensor": 1}
    (host,) = tmp_path.glob("*.host.txt")
    # each library step names the graph node it computes
    assert re.search(r"torch torch\.addmm\(.* for add\w*, mm$", host.read_text(), re.M), host.read_text()


def _assembles(ptx_path) -> bool:
    import shutil
    import subprocess

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    done = subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, str(ptx_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return True


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_library_off_compiles_matmul_conv_and_pooling_into_our_kernels(model, tmp_path):
    import torch

    from dynamo_mlir.tools.models import mlp

    fn, x = (mlp().eval(), torch.randn(8, 10)) if model == "mlp" else (_small_cnn(), torch.randn(2, 3, 12, 12))
    s = _compile_for_cuda(fn, x, dump_dir=str(tmp_path), library_matmul=False)
    assert s["ops_library"] == 0 and s["library_ops"] == {} and s["ops_fallback"] == 0
    assert s["compiled_ops"]["aten.mm.default"] >= 1
    (host,) = tmp_path.glob("*.host.txt")
    assert "torch linalg." not in host.read_text()  # no library step left in the host schedule
    gpu = next(tmp_path.glob("*.gpu.mlir")).read_text()
    assert not re.search(r"linalg\.(matmul|conv|pooling)", gpu)
    (ptx,) = tmp_path.glob("*.ptx.ptx")
    assert _assembles(ptx)


def test_library_off_batch_matmul_from_mlir():
    """attention_bits' batch_matmul as a generated kernel (a reduction over k per output)."""
    target = get_target("cuda")
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS["attention_bits"]())
        run = run_stages(module, target, resolve({"cuda_arch": "sm_90", "library_matmul": False}), keep_text=True)
    steps = run.artifact.hosts["attn"].steps
    assert not [s for s in steps if hasattr(s, "op")] and run.artifact.library_nodes == frozenset()
    assert "linalg.batch_matmul" not in run.records[2].text  # the gpu stage


def test_row_fusion_never_gathers_from_a_buffer_the_group_writes(tmp_path):
    """flip(cumsum(x, 1)): the flip is a gather (memref.load at computed positions) from the
    scan's result. Fused into the scan's row kernel it read other rows' elements, which other
    blocks had not stored yet (4.35 off on an H100): the gather must be a kernel of its own."""
    import torch

    compiled = torch.compile(lambda x: torch.flip(torch.cumsum(x, 1), [1]), backend="mlir",
                             options={"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path)})
    with pytest.raises(Exception, match="not a CUDA device"):
        compiled(torch.randn(5, 5, 5))
    (host,) = [p.read_text() for p in tmp_path.glob("*.host.txt")]
    launches = [line for line in host.splitlines() if "launch" in line]
    assert len(launches) == 2, host
