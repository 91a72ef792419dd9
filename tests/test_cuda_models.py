"""Whole models on the cuda target: MLP, CNN, transformer block and a GPT-2-like model, fp32 and
bf16, inference and a training step (forward, backward, SGD update) against eager.

On a machine without a GPU the same models are compiled for the cuda target down to PTX
(strict: no eager fallback) and the PTX is checked; running them needs the GPU."""

import copy
import glob

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import assert_fallbacks
from dynamo_mlir.tools.models import TinyGPT, cnn, mlp, randomize_batchnorm, transformer_block

HAS_GPU = get_target("cuda").available()


MODELS = {
    "mlp": (mlp, lambda d: torch.randn(8, 10, device=d)),
    "cnn": (lambda: randomize_batchnorm(cnn()), lambda d: torch.randn(4, 3, 32, 32, device=d)),
    "transformer_block": (transformer_block, lambda d: torch.randn(2, 16, 64, device=d)),
    "gpt2": (TinyGPT, lambda d: torch.randint(0, 256, (2, 32), device=d)),
}
TOL = {torch.float32: 2e-3, torch.bfloat16: 6e-2}
# Where the ops of the inference, forward and backward graphs run (measured through the cuda
# target's stages on CPU tensors, benchmarks/cuda_library_off_check.py's placeholder runtime):
# eager ops by (model, dtype), and library calls (torch: cuBLAS/cuDNN) by model.
# (Half-precision batch norm in training stays eager on CPU only, frontend/half_precision.py: on
# a GPU it compiles.) The embeddings' backward (index_put, accumulate) is a torch call too
# (codegen/cuda/library_calls.py).
EAGER = {}
# On a GPU the inference graph of transformer_block keeps nn.MultiheadAttention's SDPA whole: one
# fused attention op (the kernel torch picks for the dtype: tests/test_cuda_attention.py) instead of
# its two bmm; the training graphs keep the math form (frontend/backend.py): 2 bmm forward and 4
# backward, and in bf16 the half math form's 5 (frontend/half_attention.py recomputes the scores).
FUSED_ATTENTION = {"aten._scaled_dot_product_efficient_attention.default",
                   "aten._scaled_dot_product_flash_attention.default",
                   "aten._scaled_dot_product_cudnn_attention.default"}
LIBRARY_ON_GPU = {("transformer_block", torch.float32): {"aten.bmm.default": 6, "aten.mm.default": 16},
                  ("transformer_block", torch.bfloat16): {"aten.bmm.default": 7, "aten.mm.default": 16}}
LIBRARY = {
    "mlp": {"aten.mm.default": 11},
    "cnn": {"aten.convolution.default": 4, "aten.max_pool2d_with_indices.default": 4, "aten.mm.default": 4,
            "aten.convolution_backward.default": 2},
    "transformer_block": {"aten.bmm.default": 8, "aten.mm.default": 16},
    "gpt2": {"aten.bmm.default": 16, "aten.mm.default": 36, "aten.index_put.default": 2},
}
# Bias adds that run in their matmul's epilogue (one torch.addmm, codegen/cuda/matmul_bias.py), in
# the inference and forward graphs: those no elementwise op after them was fused with (a GELU, a
# residual add: codegen/reshape_hoist.py). In bfloat16 the same linears (the mlp's and cnn's
# bias adds share a kernel with their ReLU): the half product summed in float32, the bias added
# and the sum rounded once, which is cuBLASLt's epilogue; each such call also runs the graph's
# two casts of its add (aten._to_copy: to float32 and back).
BIAS_IN_EPILOGUE = {torch.float32: {"mlp": 2, "cnn": 2, "transformer_block": 3, "gpt2": 6},
                    torch.bfloat16: {"transformer_block": 3, "gpt2": 6}}
CASTS_PER_HALF_BIAS = 2


def _library(name, dtype) -> dict:
    library = dict(LIBRARY_ON_GPU.get((name, dtype), LIBRARY[name]))
    adds = BIAS_IN_EPILOGUE[dtype].get(name, 0)
    if adds:
        library["aten.add.Tensor"] = adds
    if adds and dtype != torch.float32:
        library["aten._to_copy.default"] = CASTS_PER_HALF_BIAS * adds
    return library


def _make(name, dtype, device):
    torch.manual_seed(0)
    make_model, make_input = MODELS[name]
    model = make_model().to(device=device, dtype=dtype)
    x = make_input(device)
    return model, (x.to(dtype) if x.is_floating_point() else x)


def _err(got, want):
    got, want = got.float(), want.float()
    return ((got - want).norm() / want.norm().clamp_min(1e-12)).item()


def _close(got, want, dtype, what, exact=None):
    """Within TOL of eager; for bf16, or within twice eager's own error against an fp32 run
    (`exact`): reduction order alone moves bf16 gradients by a few percent."""
    err = _err(got, want)
    if err < TOL[dtype]:
        return
    assert exact is not None and _err(got, exact) <= 2 * _err(want, exact) + 1e-3, \
        f"{what}: relative error {err:.2e} vs eager"


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU and cuda-bindings")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_inference_and_training_step_match_eager(name, dtype):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch._dynamo.reset()
    model, x = _make(name, dtype, "cuda")
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir", options={"strict": True})
    model.eval(), ref.eval()
    with torch.no_grad():
        _close(compiled(x), ref(x), dtype, "inference")
    exact = copy.deepcopy(ref).float()  # the same step in fp32: the yardstick for bf16 noise
    x32 = x.float() if x.is_floating_point() else x
    for m in (model, ref, exact):
        m.train()
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref, exact)]
    for m, o, f, inp in zip((model, ref, exact), opts, (compiled, ref, exact), (x, x, x32)):
        o.zero_grad()
        f(inp).float().square().mean().backward()
        o.step()
    for (n, p), (_, q), (_, r) in zip(model.named_parameters(), ref.named_parameters(), exact.named_parameters()):
        _close(p, q, dtype, f"parameter {n} after one SGD step", exact=r)
    library = _library(name, dtype)
    if (name, dtype) in LIBRARY_ON_GPU:
        fused = [op for op in dynamo_mlir.stats()["library_ops"] if op in FUSED_ATTENTION]
        assert len(fused) == 1, dynamo_mlir.explain()
        library[fused[0]] = 1
    assert_fallbacks(EAGER.get((name, dtype), {}), min_ops=10, library=library)


@pytest.mark.skipif(HAS_GPU, reason="the GPU test above runs these models for real")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_compile_to_ptx_without_a_gpu(name, dtype, tmp_path):
    torch._dynamo.reset()
    model, x = _make(name, dtype, "cpu")
    options = {"strict": True, "target": "cuda", "dump_dir": str(tmp_path), "cuda_arch": "sm_90"}
    compiled = torch.compile(model.eval(), backend="mlir", options=options)
    with torch.no_grad(), pytest.raises((RuntimeError, AssertionError)) as info:
        compiled(x)  # compiles (strict: a compile failure raises CompileError), then cannot run
    assert "CompileError" not in type(info.value).__name__
    ptx_files = glob.glob(str(tmp_path / "*.ptx"))
    assert ptx_files, "no PTX was generated"
    for path in ptx_files:
        text = open(path).read()
        assert ".entry" in text or "torch linalg" in text  # kernels, or library calls only
    assert any("ld.global.v4" in open(p).read() for p in ptx_files)
    # What was built: the inference graph in our kernels, only matmul/conv/pooling handed to torch.
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"inference": 1} and s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert s["ops_compiled"] >= 5 and set(s["library_ops"]) <= set(_library(name, dtype)), dynamo_mlir.explain()
