"""The fused RMSNorm extension: its op's verifier, its import rule, its generic and target
rules (numerics against the custom op's eager implementation), training through its autograd
formula, cuda PTX without a GPU, and the headline: a LLaMA model routed to the fused op."""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch_mlir import ir

import dynamo_mlir
import dynamo_mlir_rmsnorm as rmsnorm
from dynamo_mlir import plugin

HERE = Path(__file__).parent
MODELS = HERE / "rmsnorm_models.py"
EPS = 1e-6
OP = "fused.rms_norm.default"


def _fn(x, w):
    return rmsnorm.rms_norm(x, w, EPS)


def _compile(fn, **options):
    torch._dynamo.reset()
    dynamo_mlir.reset()
    return torch.compile(fn, backend="mlir", options=options or None)


def _assert_all_compiled(expected: dict):
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0, s["fallback_reasons"]
    for op, count in expected.items():
        assert s["compiled_ops"].get(op) == count, s["compiled_ops"]
    return s


class _Spy:
    """Registers a counting wrapper around `rule` for (RMSNormOp, target) and restores it after."""

    def __init__(self, target):
        self.target, self.calls = target, 0

    def __enter__(self):
        self.rule = plugin.remove_lowering(rmsnorm.RMSNormOp, target=self.target)
        plugin.register_lowering(rmsnorm.RMSNormOp, self._counted, target=self.target)
        return self

    def _counted(self, ctx, op):
        self.calls += 1
        return self.rule(ctx, op)

    def __exit__(self, *exc):
        plugin.register_lowering(rmsnorm.RMSNormOp, self.rule, target=self.target, override=True)


class _GenericOnly(_Spy):
    """The cpu rule removed: the generic expansion lowers the op (counted)."""

    def __init__(self):
        super().__init__(None)

    def __enter__(self):
        self.cpu_rule = plugin.remove_lowering(rmsnorm.RMSNormOp, target="cpu")
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        plugin.register_lowering(rmsnorm.RMSNormOp, self.cpu_rule, target="cpu")


RULES = {"cpu_rule": lambda: _Spy("cpu"), "generic": _GenericOnly}


def _reference_f32(x, w):
    """The float32 computation, rounded once to x's dtype (the half-precision reference)."""
    return rmsnorm.rms_norm(x.float(), w.float(), EPS).to(x.dtype)


# ----------------------------------------------------------------------------- the op itself


@pytest.mark.parametrize("weight, error", [
    ("tensor<64xf32>", "weight must be 1-d of x's last dim 128, got shape \\[64\\]"),
    ("tensor<2x128xf32>", "weight must be 1-d"),
    ("tensor<128xbf16>", "weight's element type bf16 differs from x's f32"),
])
def test_the_verifier_names_a_malformed_rms_norm(weight, error):
    text = f"""func.func @f(%x: tensor<4x128xf32>, %w: {weight}) -> tensor<4x128xf32> {{
      %y = "fused.rms_norm"(%x, %w) {{eps = 1.0e-06 : f64}} : (tensor<4x128xf32>, {weight}) -> tensor<4x128xf32>
      return %y : tensor<4x128xf32>
    }}"""
    with ir.Context(), ir.Location.unknown():
        rmsnorm.Fused.load()
        with pytest.raises(ir.MLIRError, match=f"'fused.rms_norm' {error}"):
            ir.Module.parse(text)


def test_a_well_formed_rms_norm_verifies():
    with ir.Context(), ir.Location.unknown():
        rmsnorm.Fused.load()
        ir.Module.parse("""func.func @f(%x: tensor<?x16x128xbf16>, %w: tensor<128xbf16>) -> tensor<?x16x128xbf16> {
          %y = "fused.rms_norm"(%x, %w) {eps = 1.0e-05 : f64} : (tensor<?x16x128xbf16>, tensor<128xbf16>) -> tensor<?x16x128xbf16>
          return %y : tensor<?x16x128xbf16>
        }""").operation.verify()


def test_the_custom_op_is_llamas_rms_norm():
    transformers = pytest.importorskip("transformers")
    norm = transformers.models.llama.modeling_llama.LlamaRMSNorm(128, eps=EPS)
    torch.nn.init.normal_(norm.weight)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(3, 5, 128).to(dtype)
        norm = norm.to(dtype)
        torch.testing.assert_close(rmsnorm.rms_norm(x, norm.weight, EPS), norm(x), rtol=0, atol=0)


# ----------------------------------------------------------------------------- numerics per rule


@pytest.mark.parametrize("shape", [(64, 4096), (2, 16, 128), (3, 1000)])
@pytest.mark.parametrize("rule", RULES)
def test_float32_matches_the_eager_custom_op(rule, shape):
    x, w = torch.randn(shape), torch.randn(shape[-1])
    with RULES[rule]() as spy:
        y = _compile(_fn)(x, w)
    assert spy.calls == 1
    _assert_all_compiled({OP: 1})
    torch.testing.assert_close(y, _fn(x, w))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("rule", RULES)
def test_half_matches_the_float32_computation_rounded_once(rule, dtype):
    x, w = torch.randn(8, 16, 512).to(dtype), torch.randn(512).to(dtype)
    with RULES[rule]() as spy:
        y = _compile(_fn)(x, w)
    assert spy.calls == 1 and y.dtype == dtype
    _assert_all_compiled({OP: 1})
    torch.testing.assert_close(y, _reference_f32(x, w))


def test_dynamic_shapes_stay_eager_with_the_cores_reason():
    """The core compiles symbolic sizes only for the ATen ops it lists; a plugin op stays eager."""
    compiled = _compile(_fn)
    torch._dynamo.mark_dynamic(x := torch.randn(5, 256), 0)
    w = torch.randn(256)
    torch.testing.assert_close(compiled(x, w), _fn(x, w))
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {OP: 1}
    assert any("dynamic (symbolic) sizes" in why for op, why in s["fallback_reasons"] if op == OP), s["fallback_reasons"]


def test_dtypes_it_is_not_defined_for_stay_eager_with_the_reason():
    x, w = torch.randn(4, 64, dtype=torch.float64), torch.randn(64, dtype=torch.float64)
    torch.testing.assert_close(_compile(_fn)(x, w), _fn(x, w))
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {OP: 1}
    assert any(op == OP and "not torch.float64" in why for op, why in s["fallback_reasons"]), s["fallback_reasons"]


def test_training_through_the_autograd_formula():
    """Gradients of the compiled fused op equal eager autograd through LlamaRMSNorm's formula."""
    def plain(x, w):
        x32 = x.float()
        return w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)

    x, w, g = torch.randn(6, 128), torch.randn(128), torch.randn(6, 128)
    got = [t.clone().requires_grad_() for t in (x, w)]
    want = [t.clone().requires_grad_() for t in (x, w)]
    (_compile(_fn)(*got) * g).sum().backward()
    s = _assert_all_compiled({OP: 1})
    assert s["ops_compiled"] > 1  # the backward's ATen ops too
    (plain(*want) * g).sum().backward()
    for a, b in zip(got, want):
        torch.testing.assert_close(a.grad, b.grad)


# ----------------------------------------------------------------------------- the CLI and cuda


def _dump(target: str, model: str, out: Path):
    run = subprocess.run([sys.executable, "-m", "dynamo_mlir.tools.cli", "dump", "--target", target,
                          f"{MODELS}:{model}", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return {p.name.split(".", 1)[1]: p for p in out.glob("*fused_0.*")}


def test_cli_dump_on_cpu_writes_every_stage_with_the_lane_sums(tmp_path):
    files = _dump("cpu", "rms_norm", tmp_path)
    assert {"dynamo.mlir", "linalg.mlir", "loops.mlir", "llvm.mlir", "ll.ll", "s.s"} <= set(files)
    assert '"fused.rms_norm"' in files["dynamo.mlir"].read_text()
    assert "d1 * 32 + d2" in files["linalg.mlir"].read_text()  # the cpu rule's 32 partial sums per row


@pytest.mark.parametrize("model", ["rms_norm", "rms_norm_bf16"])
def test_cli_dump_for_cuda_makes_ptx_with_one_kernel(model, tmp_path):
    """No GPU needed: every stage is generated (loading it fails here, so it then runs eagerly)."""
    files = _dump("cuda", model, tmp_path)
    ptx, host = files["ptx.ptx"].read_text(), files["host.txt"].read_text()
    assert ptx.count(".visible .entry") == 1
    assert host.count("launch") == 1 and "grid=(64, 1, 1)" in host, host  # one block per row


def test_the_generic_rule_on_cuda_is_one_kernel_too(tmp_path):
    options = {"target": "cuda", "dump_dir": str(tmp_path), "cuda_arch": "sm_90"}
    fn, (x, w) = _fn, (torch.randn(64, 4096), torch.randn(4096))
    rule = plugin.remove_lowering(rmsnorm.RMSNormOp, target="cuda")
    try:  # compiled down to PTX; with no GPU here, the kernel's launch then refuses cpu tensors
        with pytest.raises(RuntimeError, match="not a CUDA device"):
            _compile(fn, **options)(x, w)
    finally:
        plugin.register_lowering(rmsnorm.RMSNormOp, rule, target="cuda")
    (host,) = tmp_path.glob("*.host.txt")
    assert host.read_text().count("launch") == 1
    (ptx,) = tmp_path.glob("*.ptx")
    assert ptx.read_text().count(".visible .entry") == 1


# ----------------------------------------------------------------------------- the headline


def _llama():
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                                      attention_dropout=0.0, use_cache=False, tie_word_embeddings=False)
    return transformers.LlamaForCausalLM(config).eval()


def test_use_fused_rmsnorm_finds_llamas_norms_and_look_alikes():
    model = _llama()
    assert rmsnorm.use_fused_rmsnorm(model) == 2 * 2 + 1

    class LookAlike(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight, self.variance_epsilon = torch.nn.Parameter(torch.randn(8)), EPS

    assert rmsnorm.is_rms_norm(LookAlike()) and not rmsnorm.is_rms_norm(torch.nn.LayerNorm(8))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_llama_with_fused_rmsnorm_matches_eager(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = _llama().to(device)
    fused = copy.deepcopy(model)
    rmsnorm.use_fused_rmsnorm(fused)
    ids = torch.randint(0, 1000, (2, 16), generator=torch.Generator().manual_seed(1)).to(device)
    with torch.no_grad():
        want = model(input_ids=ids).logits
        got = _compile(fused)(input_ids=ids).logits
    s = _assert_all_compiled({OP: 2 * 2 + 1})
    assert s["targets"] == [device], s["targets"]
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
