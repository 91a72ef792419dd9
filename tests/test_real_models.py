"""Real models through backend="mlir": Hugging Face transformers architectures (GPT-2, BERT with a
padding mask, LLaMA, Qwen2 with grouped-query attention, T5, ViT) from small random configs, a
ResNet-style CNN and the MLP (tests/real_models.py), with the default (SDPA) and the eager
attention of transformers.

Inference, then a training step (loss, every gradient, the parameters after AdamW) and a
100-step AdamW loop, each against an eager copy of the model, with every op compiled by us.
The deeper models of FLOAT64_CASES (ResNet-50's layout): inference and a training step judged
as PyTorch's benchmark suite judges float32, against a float64 copy of the model.
"""

import copy

import pytest
import torch

import dynamo_mlir

from helpers import assert_as_accurate_as_eager, assert_fallbacks, assert_gradients_as_accurate_as_eager
from real_models import CASES, FLOAT64_CASES

# LLVM's optimisation level does not change f32 results (no fast-math), and at the default level
# the JIT takes ~10x longer on these graphs: the whole file would not fit its CPU time budget.
# opt_level is the cpu target's option (the cuda target refuses it).
OPTIONS = {"cpu": {"opt_level": 0}, "cuda": {}}
STEPS = 100

DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")])]
# (model, attn_implementation): None is transformers' default, SDPA.
VARIANTS = [(name, attn) for name, case in CASES.items() for attn in ((None, "eager") if case.transformer else (None,))]
IDS = [f"{name}-{attn or 'sdpa'}" if CASES[name].transformer else name for name, attn in VARIANTS]


@pytest.fixture(autouse=True, scope="module")
def one_cpu_thread():
    """Eager's intra-op threads spin while waiting for each other: on a 2-core machine shared with
    other jobs that made the eager reference runs 10x slower (T5: 0.55 s a step, 0.05 s with one)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(autouse=True)
def exact_f32_matmuls():
    """Eager's convolutions on CUDA would round through TF32: compare f32 against f32."""
    cudnn = torch.backends.cudnn
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    # cudnn's flags only through its context manager: torch's test utilities (imported by other
    # test files) forbid setting them directly.
    with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                     allow_tf32=False):
        yield
    torch.backends.cuda.matmul.allow_tf32 = saved


def _setup(name, attn, device, cases=CASES):
    """The model and an eager copy (same weights), and the batch, all on `device`."""
    case = cases[name]
    torch.manual_seed(0)
    model = case.build(attn).to(device)
    inputs, target = case.batch(torch.Generator().manual_seed(0))
    inputs = {k: v.to(device) for k, v in inputs.items()}
    return case, model, copy.deepcopy(model), inputs, target.to(device)


# What the cuda target hands to torch's libraries (cuBLAS, cuDNN) instead of generating code, and
# to torch's own kernels: the scatter-style writes training hits, the embedding backward
# (index_put, accumulate) and cross-entropy's backward (scatter of the target positions), and in
# inference SDPA's fused attention (whichever kernel torch picks), in training the attention op
# and its backward (frontend/attention_call.py), codegen/cuda/library_calls.py;
# a float32 matmul's bias add runs in its epilogue (torch.addmm, codegen/cuda/matmul_bias.py).
CUDA_LIBRARY_OPS = {"aten.mm.default", "aten.bmm.default", "aten.add.Tensor", "aten.convolution.default",
                    "aten.convolution_backward.default", "aten.max_pool2d_with_indices.default",
                    "aten.index_put.default", "aten.scatter.value",
                    "aten._scaled_dot_product_efficient_attention.default",
                    "aten._scaled_dot_product_flash_attention.default",
                    "aten._scaled_dot_product_cudnn_attention.default",
                    "dynamo_mlir.attention.default", "dynamo_mlir.attention_grad.default"}


# What the cpu target hands to libtorch_cpu (library_matmul): every float32 matmul here to MKL
# (sgemm_/dgemm_), every float32 convolution (backward: its input and weight gradients are
# convolutions) to torch's kernel, and in inference SDPA's fused CPU attention (library_attention.py).
CPU_LIBRARY_OPS = {"aten.mm.default", "aten.bmm.default", "aten.convolution.default",
                   "aten.convolution_backward.default", "aten._scaled_dot_product_flash_attention_for_cpu.default"}


def _assert_compiled(caplog, graphs_by_kind, device="cpu"):
    """Every op compiled (on cuda: matmul/conv/pooling and the scatter writes as library calls,
    nothing else; on cpu: every matmul an MKL call, every convolution torch's), in the graphs expected (no graph break), and no compiled region
    ran eagerly at call time either (it would if its inputs differed from what the graph promised)."""
    s = dynamo_mlir.stats()
    library, eager = s["library_ops"], s["fallback_ops"]
    assert set(library) <= (CUDA_LIBRARY_OPS if device == "cuda" else CPU_LIBRARY_OPS), library
    if device == "cpu":  # all of them: none left in our loops
        assert "aten.mm.default" in library and not set(s["compiled_ops"]) & CPU_LIBRARY_OPS, dynamo_mlir.explain()
    assert not eager, dynamo_mlir.explain()
    s = assert_fallbacks(eager, min_ops=10, library=library)
    assert s["graphs_by_kind"] == graphs_by_kind, s["graphs_by_kind"]
    assert s["runtime_fallback_calls"] == 0, s["runtime_fallbacks"]
    ran_eagerly = [r.getMessage() for r in caplog.records if r.name == "dynamo_mlir" and "region eagerly" in r.getMessage()]
    assert not ran_eagerly, ran_eagerly


def _main_output(case, out):
    return out if case.output is None else getattr(out, case.output)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,attn", VARIANTS, ids=IDS)
def test_inference_matches_eager(name, attn, device, caplog):
    case, model, ref, inputs, _ = _setup(name, attn, device)
    model.eval(), ref.eval()
    with torch.no_grad():
        got = _main_output(case, torch.compile(model, backend="mlir", options=OPTIONS[device])(**inputs))
        want = _main_output(case, ref(**inputs))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    _assert_compiled(caplog, {"inference": 1}, device)


GRAD_TOL = dict(rtol=1e-3, atol=1e-5)


def _assert_gradients_match(model, ref):
    got = dict(model.named_parameters())
    for name, want in ref.named_parameters():
        assert (got[name].grad is None) == (want.grad is None), f"gradient of {name}"
        torch.testing.assert_close(got[name].grad, want.grad, **GRAD_TOL, msg=lambda m: f"gradient of {name}: {m}")


def _assert_state_after_step_matches(model, ref):
    """Parameters after the AdamW step, and buffers (BatchNorm's running statistics).

    Adam's first step is lr * g / (|g| + eps): about lr * sign(g) for any gradient well above eps
    (1e-8). Where a gradient is below the gradient check's atol (a gradient that is zero in exact
    arithmetic, as BERT's key bias has, is rounding noise on both sides), that check fixed
    neither its sign nor its size, so the step there is compared only where it was fixed."""
    got = dict(model.named_parameters())
    for name, want in ref.named_parameters():
        fixed = want.grad.abs() > GRAD_TOL["atol"] if want.grad is not None else torch.ones_like(want, dtype=torch.bool)
        torch.testing.assert_close(got[name][fixed], want[fixed], rtol=1e-3, atol=1e-5,
                                   msg=lambda m: f"{name} after one AdamW step: {m}")
    got = dict(model.named_buffers())
    for name, want in ref.named_buffers():
        torch.testing.assert_close(got[name], want, rtol=1e-3, atol=1e-5, msg=lambda m: f"buffer {name}: {m}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,attn", VARIANTS, ids=IDS)
def test_training_matches_eager(name, attn, device, caplog):
    """One step compared value by value, then (default attention) a 100-step loop: the same
    compiled model serves both, which also shows that further steps reuse the compiled graphs."""
    case, model, ref, inputs, target = _setup(name, attn, device)
    model.train(), ref.train()
    compiled = torch.compile(lambda: case.loss(_main_output(case, model(**inputs)), target), backend="mlir",
                             options=OPTIONS[device])
    eager = lambda: case.loss(_main_output(case, ref(**inputs)), target)
    # The optimizer runs eagerly on both sides (compiled optimizer steps: tests/test_training.py).
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, ref)]

    def step(loss_fn, optimizer):
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss.detach()

    got, want = step(compiled, optimizers[0]), step(eager, optimizers[1])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    _assert_gradients_match(model, ref)
    for optimizer in optimizers:
        optimizer.step()
    _assert_state_after_step_matches(model, ref)

    if attn is None:
        for _ in range(STEPS - 1):
            got, want = step(compiled, optimizers[0]), step(eager, optimizers[1])
            for optimizer in optimizers:
                optimizer.step()
        assert abs(got.item() - want.item()) <= 5e-3 * abs(want.item()), f"loss after {STEPS} steps: {got} vs eager {want}"
    _assert_compiled(caplog, {"forward": 1, "backward": 1}, device)


# ----------------------------------------------------------------------------- against float64


def _float64(model, inputs):
    """A float64 copy of `model` and of the float inputs: the reference both runs are judged by."""
    return copy.deepcopy(model).double(), {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}


def _assert_convolutions_are_library_calls(model):
    """Every convolution of the model ran as a library call (torch's kernel), none in our loops
    or eagerly (what _assert_compiled checks of all ops)."""
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    s = dynamo_mlir.stats()
    assert s["library_ops"].get("aten.convolution.default") == convs, s["library_ops"]


def _assert_inputs_intact(model, ref, inputs, saved):
    """The compiled call left the caller's tensors as they were: the batch (`saved`: a copy made
    before) and the parameters (the eager copy's: no optimizer step has run)."""
    for key, value in inputs.items():
        assert torch.equal(value, saved[key]), f"input {key} was written"
    want = dict(ref.named_parameters())
    for name, p in model.named_parameters():
        assert torch.equal(p, want[name]), f"parameter {name} was written"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", FLOAT64_CASES)
def test_inference_as_accurate_as_eager(name, device, caplog):
    case, model, ref, inputs, _ = _setup(name, None, device, FLOAT64_CASES)
    exact, exact_inputs = _float64(ref, inputs)
    saved = {k: v.clone() for k, v in inputs.items()}
    for m in (model, ref, exact):
        m.eval()
    with torch.no_grad():
        got = _main_output(case, torch.compile(model, backend="mlir", options=OPTIONS[device])(**inputs))
        _assert_inputs_intact(model, ref, inputs, saved)
        want, reference = _main_output(case, ref(**inputs)), _main_output(case, exact(**exact_inputs))
    assert_as_accurate_as_eager(got, want, reference, what=case.output)
    _assert_compiled(caplog, {"inference": 1}, device)
    _assert_convolutions_are_library_calls(model)


def _training_step(case, model, batch, target, options=None):
    """One forward and backward of `model` in training mode (compiled with `options` unless None);
    the loss."""
    model.train()
    loss = lambda: case.loss(_main_output(case, model(**batch)), target)
    loss = (loss if options is None else torch.compile(loss, backend="mlir", options=options))()
    loss.backward()
    return loss.detach()


def test_gradient_rule_takes_a_flipped_relu_and_refuses_a_wrong_gradient():
    """The training step's gradient rule: an error the size of one ReLU taking the other side
    (eager's own gradients carry one of that size) passes, a gradient 10% off or of the wrong
    sign does not."""
    g = torch.Generator().manual_seed(0)
    exact = {n: torch.randn(64, 32, generator=g, dtype=torch.float64) for n in ("a", "b")}
    eager = {n: (v + 1e-7 * torch.randn(v.shape, generator=g, dtype=torch.float64)).float() for n, v in exact.items()}
    eager["b"][0, 0] += 0.5  # eager's flip: one element, about 1% of the gradient's scale
    flipped = {**eager, "a": eager["a"].clone()}
    flipped["a"][3, 7] -= 0.8
    assert_gradients_as_accurate_as_eager(flipped, eager, exact)
    for wrong in (eager["a"] * 1.1, -eager["a"]):
        with pytest.raises(AssertionError, match="gradient of a"):
            assert_gradients_as_accurate_as_eager({**eager, "a": wrong}, eager, exact)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", FLOAT64_CASES)
def test_training_step_as_accurate_as_eager(name, device, caplog):
    """One training step: the loss, every gradient and the buffers after it (batch norm's running
    statistics)."""
    case, model, ref, inputs, target = _setup(name, None, device, FLOAT64_CASES)
    exact, exact_inputs = _float64(ref, inputs)
    saved = {k: v.clone() for k, v in inputs.items()}
    got = _training_step(case, model, inputs, target, OPTIONS[device])
    _assert_inputs_intact(model, ref, inputs, saved)
    want, reference = _training_step(case, ref, inputs, target), _training_step(case, exact, exact_inputs, target)
    assert_as_accurate_as_eager(got, want, reference, what="loss")
    grads = lambda m: {n: p.grad for n, p in m.named_parameters()}  # noqa: E731
    assert_gradients_as_accurate_as_eager(grads(model), grads(ref), grads(exact))
    for (name_, b), c, d in zip(model.named_buffers(), ref.buffers(), exact.buffers()):
        if b.is_floating_point():
            assert_as_accurate_as_eager(b, c, d, what=f"buffer {name_}")
    _assert_compiled(caplog, {"forward": 1, "backward": 1}, device)
    _assert_convolutions_are_library_calls(model)
