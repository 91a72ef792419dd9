"""scaled_dot_product_attention on the cuda target: an inference graph keeps SDPA whole, AOTAutograd
traces the fused op torch's dispatcher picks (efficient, flash or cuDNN attention), it imports as
one dynamo.attention, and the cuda target runs it as one torch call (codegen/cuda/library_calls.py):
the attention matrix never reaches memory. A training graph (and one of symbolic sizes) calls
frontend/attention_call.py's op, whose backward is one dynamo.attention_grad, a torch call of the
fused kernel's backward. With the option cuda_library_attention off, training takes the math form
(frontend/backend.py); on half CUDA tensors, the half one of frontend/half_attention.py.

Without a GPU: the fused ops are traced on fake CUDA tensors (a CPU-only torch cannot pick a CUDA
kernel, so the graphs are built with the ops themselves, as AOTAutograd hands them over on a GPU),
then compiled for the cuda target through every stage with a placeholder runtime (the host schedule
is checked) and for the cpu target, whose generic rule (the math form) is checked against eager.
With a GPU: torch.compile against eager, and transformers' GPT-2 and BERT."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.fx.experimental.proxy_tensor import make_fx

import dynamo_mlir
from dynamo_mlir.codegen.config import resolve
from dynamo_mlir.codegen.target import get_target
from dynamo_mlir.frontend import half_attention
from dynamo_mlir.frontend.attention_call import attention_call
from dynamo_mlir.frontend.backend import decompositions, keeps_fused_attention, prepare_attention
from dynamo_mlir.frontend.half_attention import half_math_attention
from dynamo_mlir.frontend.compile import compile_graph
from helpers import assert_close_to_float32, read_stage, zeros_runtime, on_gpu

aten = torch.ops.aten
TARGET = get_target("cuda")
CUDA = {"target": "cuda", "cuda_arch": "sm_90", "strict": True}
FUSED = {"aten._scaled_dot_product_efficient_attention.default", "aten._scaled_dot_product_flash_attention.default",
         "aten._scaled_dot_product_cudnn_attention.default"}
B, H, L, E = 2, 4, 16, 32



def _qkv(dtype=torch.float32, length=L, kv_length=L, kv_heads=H):
    torch.manual_seed(0)
    return (torch.randn(B, H, length, E, dtype=dtype), torch.randn(B, kv_heads, kv_length, E, dtype=dtype),
            torch.randn(B, kv_heads, kv_length, E, dtype=dtype))


def _bool_mask(length=L):
    mask = torch.rand(B, 1, length, L) > 0.3
    mask[..., 0] = True
    return mask


def _additive(mask, dtype):
    """What torch's SDPA makes of a boolean mask before its fused kernels, expanded as it does."""
    bias = torch.zeros_like(mask, dtype=dtype).masked_fill(mask.logical_not(), float("-inf"))
    return bias.expand(B, H, mask.shape[2], L)


def _traced(fn, inputs):
    """fn traced on fake CUDA copies of `inputs`, dead outputs dropped: the graph AOTAutograd
    hands the inference compiler on a GPU (a CPU-only torch cannot run the fused ops)."""
    with FakeTensorMode():
        fake = [torch.empty(t.shape, dtype=t.dtype, device="cuda") for t in inputs]
        gm = make_fx(fn, decomposition_table=decompositions())(*fake)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm, fake


def _efficient(bias=None, causal=False, scale=None, dropout=0.0):
    return lambda q, k, v, *mask: aten._scaled_dot_product_efficient_attention(
        q, k, v, bias(mask[0], q.dtype) if bias else None, False, dropout, causal, scale=scale)[0]


# case -> (the fused op's call on (q, k, v[, mask]), inputs, eager SDPA's keyword arguments given the mask)
CASES = {
    "plain": (_efficient(), lambda: _qkv(), lambda m: {}),
    "causal": (_efficient(causal=True), lambda: _qkv(), lambda m: {"is_causal": True}),
    "causal_fewer_queries": (_efficient(causal=True), lambda: _qkv(length=8), lambda m: {"is_causal": True}),
    "bool_mask": (_efficient(bias=_additive), lambda: (*_qkv(), _bool_mask()), lambda m: {"attn_mask": m}),
    "float_mask": (_efficient(bias=lambda m, dt: m.expand(B, H, L, L)), lambda: (*_qkv(), torch.randn(B, 1, L, L)),
                   lambda m: {"attn_mask": m}),
    "scale": (_efficient(bias=_additive, scale=0.3), lambda: (*_qkv(), _bool_mask()),
              lambda m: {"attn_mask": m, "scale": 0.3}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_generic_rule_matches_eager_math_on_cpu(case):
    """The fused op as AOTAutograd traces it on a GPU, compiled for cpu (the generic rule's math
    form: its two contractions MKL calls, as every float matmul on cpu with library_matmul, the
    softmax our loops), run on CPU tensors, against torch's SDPA in float64."""
    fn, make_inputs, reference = CASES[case]
    inputs = make_inputs()
    gm, fake = _traced(fn, inputs)
    got = compile_graph(gm, fake, "inference", resolve({"target": "cpu", "strict": True}))(*inputs)
    mask = inputs[3] if len(inputs) > 3 else None
    mask = mask.double() if mask is not None and mask.is_floating_point() else mask
    want = F.scaled_dot_product_attention(*(t.double() for t in inputs[:3]), **reference(mask))
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"]["aten._scaled_dot_product_efficient_attention.default"] == 1, \
        dynamo_mlir.explain()


def test_generic_rule_gives_zeros_for_a_fully_masked_row():
    q, k, v = _qkv()
    mask = _bool_mask()
    mask[0, 0, 3, :] = False
    gm, fake = _traced(_efficient(bias=_additive), (q, k, v, mask))
    got = compile_graph(gm, fake, "inference", resolve({"target": "cpu", "strict": True}))(q, k, v, mask)
    assert got[0, :, 3].abs().max() == 0 and not got.isnan().any()
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rtol=1e-4, atol=1e-5)


HALF_OPS = {  # the fused ops of the half types: flash attention (no bias) and cuDNN attention
    "flash_f16": (lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)[0], torch.float16,
                  {"is_causal": True}),
    "cudnn_bf16": (lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, False, 0.0, False, False,
                                                                           scale=0.2)[0],
                   torch.bfloat16, {"scale": 0.2}),
}


@pytest.mark.parametrize("case", sorted(HALF_OPS))
def test_generic_rule_on_half_types_rounds_the_float32_result_once(case):
    fn, dtype, reference = HALF_OPS[case]
    inputs = _qkv(dtype)
    gm, fake = _traced(fn, inputs)
    got = compile_graph(gm, fake, "inference", resolve({"target": "cpu", "strict": True}))(*inputs)
    assert got.dtype == dtype
    assert_close_to_float32(got, F.scaled_dot_product_attention(*(t.float() for t in inputs), **reference),
                            magnitude_rtol=1e-5)
    assert dynamo_mlir.stats()["ops_fallback"] == 0, dynamo_mlir.explain()


# ----------------------------------------------------------------------------- the cuda target's host schedule

SCHEDULES = {  # case -> (fn, inputs, its ATen op, kernel launches besides the call)
    # the boolean mask's conversion to -inf/0 is the one kernel: on the [B, 1, L, S] mask, not the
    # expanded one (the call reads the mask broadcast)
    "efficient_bool_mask": (_efficient(bias=_additive), lambda: (*_qkv(), _bool_mask()),
                            "aten._scaled_dot_product_efficient_attention.default", 1),
    "efficient_causal": (_efficient(causal=True), _qkv, "aten._scaled_dot_product_efficient_attention.default", 0),
    "flash": (HALF_OPS["flash_f16"][0], lambda: _qkv(torch.float16),
              "aten._scaled_dot_product_flash_attention.default", 0),
    "cudnn": (HALF_OPS["cudnn_bf16"][0], lambda: _qkv(torch.bfloat16),
              "aten._scaled_dot_product_cudnn_attention.default", 0),
}


@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_fused_attention_for_cuda_is_one_torch_call(case, tmp_path):
    fn, make_inputs, aten_op, launches = SCHEDULES[case]
    gm, fake = _traced(fn, make_inputs())
    node = next(n.name for n in gm.graph.nodes if str(n.target) == aten_op)
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {aten_op: 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    assert host.count("torch torch.attention(") == 1 and host.count("launch ") == launches, host
    call = next(line for line in host.splitlines() if "torch torch.attention(" in line)
    assert call.endswith(f" for {node}"), call  # stats() counts the call's ATen node as a library op
    assert read_stage(str(tmp_path), "ptx")  # every stage ran
    if launches:  # the bias as the call reads it: the mask's own [B, 1, L, S], broadcast by torch
        assert f"[{B}x1x{L}x{L}|{L * L},{L * L},{L},1+0]" in call, call


def _attention_block(x, w_qkv, w_out):
    """GPT-2's attention block as AOTAutograd traces it on a GPU: a fused qkv projection split
    into heads, the fused attention, the heads merged, the output projection."""
    q, k, v = (t.view(B, L, H, E).transpose(1, 2) for t in (x @ w_qkv).split(H * E, dim=2))
    out = aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0, True)[0]
    return out.transpose(1, 2).reshape(B, L, H * E) @ w_out


def test_heads_moved_around_attention_are_views_not_copies(tmp_path):
    inputs = (torch.randn(B, L, H * E), torch.randn(H * E, 3 * H * E), torch.randn(H * E, H * E))
    gm, fake = _traced(_attention_block, inputs)
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    assert dynamo_mlir.stats()["library_ops"] == {"aten._scaled_dot_product_efficient_attention.default": 1,
                                                  "aten.mm.default": 2}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    call = next(line for line in host.splitlines() if "torch torch.attention(" in line)
    # q, k and v: views of the projection's [B, L, 3*H*E] output at offsets 0, H*E, 2*H*E (the
    # split's slices reshaped to heads are expand_shapes: codegen/sliced_reshapes.py); the result
    # in eager's [B, L, H, E] layout: strides (L*H*E, E, H*E, 1)
    for offset in (0, H * E, 2 * H * E):
        assert f"[{B}x{H}x{L}x{E}|{3 * L * H * E},{E},{3 * H * E},1+{offset}]" in call, call
    assert call.count(f"[{B}x{H}x{L}x{E}|{L * H * E},{E},{H * E},1+0]") == 1, call
    # no copy: none out of the split (three before the expand_shapes), none for the transposes
    # (four more without the folds), none for the output: the output projection writes a view
    # of it (codegen/result_copies.py)
    assert host.count("launch ") == 0, host


def _three_projections_block(x, wq, bq, wk, bk, wv, bv):
    """ViT's and BERT's attention: three linears with biases, each split into heads."""
    q, k, v = (F.linear(x, w, b).view(B, L, H, E).transpose(1, 2) for w, b in ((wq, bq), (wk, bk), (wv, bv)))
    return aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0, False)[0]


def test_three_biased_projections_are_read_as_views_not_copied(tmp_path):
    """Each projection's bias add has its own buffer (cuda-own-inits), so each bias folds into
    its own cuBLASLt addmm and the attention reads the three outputs' head views. Sharing one
    buffer (CSE's one empty for the three bias adds), q and k were copied out by a kernel each
    before the next projection overwrote it."""
    w = [torch.randn(H * E, H * E) if i % 2 == 0 else torch.randn(H * E) for i in range(6)]
    gm, fake = _traced(_three_projections_block, (torch.randn(B, L, H * E), *w))
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    host = read_stage(str(tmp_path), "host")
    addmms = [line for line in host.splitlines() if "torch torch.addmm(" in line]
    outputs = {re.findall(r"(%\d+)\[", line)[-1] for line in addmms}
    assert len(addmms) == 3 and len(outputs) == 3, host
    call = next(line for line in host.splitlines() if "torch torch.attention(" in line)
    for out in outputs:  # [B, H, L, E] views of [B, L, H*E] buffers: strides (L*H*E, E, H*E, 1)
        assert f"{out}[{B}x{H}x{L}x{E}|{L * H * E},{E},{H * E},1+0]" in call, call
    assert host.count("launch ") == 0, host


def _padding_like_bert(q, k, v):
    """BERT's mask as transformers builds it for SDPA: a boolean [1, 1, L, 1] broadcast to
    [B, 1, L, L], which kept torch's dispatcher from tracing a fused kernel at symbolic sizes."""
    b, _, length, _ = q.shape
    mask = (torch.arange(length) >= 0)[None, None, :, None].expand(b, 1, length, length)
    return attention_call(q, k, v, mask)


def _symbolic_length(tensors):
    """Fake copies of [B, H, L, E] tensors whose L is one symbolic size (E, B, H static), as
    Dynamo's automatic dynamic shapes hands them over."""
    mode = FakeTensorMode(shape_env=ShapeEnv())
    static, dynamic = DimDynamic.STATIC, DimDynamic.DYNAMIC
    context = StatelessSymbolicContext(dynamic_sizes=[static, static, dynamic, static])
    with mode:
        first = mode.from_tensor(tensors[0], symbolic_context=context)
        rest = [torch.empty_strided(first.shape, first.stride(), dtype=t.dtype) for t in tensors[1:]]
    return [first, *rest]


def test_attention_of_symbolic_sizes_is_one_call_whose_kernel_is_picked_per_call(tmp_path):
    """frontend/attention_call.py, without a GPU: SDPA of symbolic sizes traced as the opaque
    dynamo_mlir::attention (its boolean mask made additive before it) imports as dynamo.attention
    and runs as the cuda target's torch call, its sizes read per call; no buffer of the host
    schedule is as large as the attention matrix (L x L per head)."""
    dynamo_mlir.reset()
    fake = _symbolic_length(_qkv())
    gm = make_fx(_padding_like_bert, tracing_mode="symbolic")(*fake)
    assert any(n.target is torch.ops.dynamo_mlir.attention.default for n in gm.graph.nodes), gm.code
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {"dynamo_mlir.attention.default": 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    call = next(line for line in host.splitlines() if "torch torch.attention(" in line)
    assert f"[{B}x{H}x" in call and f"x{E}|" in call and "dim(" in call, call  # [B, H, L, E], L read per call
    assert not re.search(rf"empty\(muli\(muli\({B * H}, ", host), host  # no [B, H, L, L] buffer


def test_grouped_query_attention_of_symbolic_sizes_is_traced_as_sdpa_not_the_opaque_op():
    """dynamo.attention takes no grouped-query attention: attention_call leaves such a call (what
    transformers' LLaMA asks of SDPA without a mask) to SDPA itself, as traced before, instead of
    an op that could only run eagerly."""
    q, k, v = _qkv(kv_heads=H // 2)
    gm = make_fx(lambda q, k, v: attention_call(q, k, v, is_causal=True, enable_gqa=True), tracing_mode="symbolic")(q, k, v)
    assert not any(n.target is torch.ops.dynamo_mlir.attention.default for n in gm.graph.nodes), gm.code
    torch.testing.assert_close(attention_call(q, k, v, is_causal=True, enable_gqa=True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))


def test_attention_call_matches_sdpa_and_runs_it_where_it_stays_eager():
    """The op's own implementation (what an eager node runs): SDPA, its boolean mask additive."""
    q, k, v = _qkv()
    mask = _bool_mask()
    torch.testing.assert_close(attention_call(q, k, v, mask), F.scaled_dot_product_attention(q, k, v, mask))
    torch.testing.assert_close(attention_call(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_attention_call_casts_as_autocast_casts_sdpa():
    """Inside an autocast region SDPA runs in the autocast type; the op, which autocast does not
    know, is handed its inputs cast the same way."""
    q, k, v = _qkv()
    mask = _bool_mask()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = attention_call(q, k, v, mask), F.scaled_dot_product_attention(q, k, v, mask)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want)


REFUSED = {  # case -> (fn, inputs, the reason the node stays eager)
    "dropout": (_efficient(dropout=0.1), _qkv, "attention with dropout"),
    "log_sumexp_read": (lambda q, k, v: aten._scaled_dot_product_efficient_attention(q, k, v, None, True)[:2], _qkv,
                        "an output besides the attention's"),
    "grouped_query": (_efficient(), lambda: _qkv(kv_heads=2), "grouped-query attention"),
    "bias_and_causal": (_efficient(bias=_additive, causal=True), lambda: (*_qkv(), _bool_mask()),
                        "both a bias and is_causal"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_attention_stays_eager_and_says_why(case):
    fn, make_inputs, reason = REFUSED[case]
    gm, fake = _traced(fn, make_inputs())
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({"target": "cuda", "cuda_arch": "sm_90"}))
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {"aten._scaled_dot_product_efficient_attention.default": 1}, dynamo_mlir.explain()
    assert any(reason in why for _, why in s["fallback_reasons"]), s["fallback_reasons"]


# ----------------------------------------------------------------------------- the rewrite decision


def _sdpa_graph(set_grad=False):
    """A graph calling SDPA as Dynamo's does; set_grad: turning grad mode on first, as Dynamo
    records a `with torch.enable_grad():` in the compiled function."""
    gm = torch.fx.symbolic_trace(lambda q, k, v: F.scaled_dot_product_attention(q, k, v))
    if set_grad:
        first = next(n for n in gm.graph.nodes if n.op == "call_function")
        with gm.graph.inserting_before(first):
            gm.graph.call_function(torch._C._set_grad_enabled, (True,))
        gm.recompile()
    return gm


def _fake_cuda(requires_grad=False):
    with FakeTensorMode():
        return [torch.empty(B, H, L, E, device="cuda").requires_grad_(requires_grad) for _ in range(3)]


def test_inference_graph_on_cuda_keeps_fused_attention():
    assert keeps_fused_attention(_sdpa_graph(), _fake_cuda(), resolve({}))
    with torch.no_grad():  # parameters require grad, but grad mode is off: an inference graph
        assert keeps_fused_attention(_sdpa_graph(), _fake_cuda(requires_grad=True), resolve({}))


@pytest.mark.parametrize("why", ["cpu_tensors_library_off", "cpu_training", "cuda_target_on_cpu_tensors",
                                 "option_off", "option_off_training"])
def test_otherwise_attention_takes_the_math_form(why):
    """(On CPU tensors the cpu target keeps the fused op only with library_matmul, in inference:
    its own call of torch's CPU kernel, codegen/cpu/library_attention.py.)"""
    cpu = why in ("cpu_tensors_library_off", "cpu_training", "cuda_target_on_cpu_tensors")
    training = why in ("cpu_training", "option_off_training")
    inputs = [t.requires_grad_(training) for t in _qkv()] if cpu else _fake_cuda(training)
    options = {"cuda_target_on_cpu_tensors": {"target": "cuda"}, "option_off": {"cuda_library_attention": False},
               "option_off_training": {"cuda_library_attention": False},
               "cpu_tensors_library_off": {"library_matmul": False}}
    assert not keeps_fused_attention(_sdpa_graph(), inputs, resolve(options.get(why, {})))


@pytest.mark.parametrize("why", ["requires_grad", "grad_enabled_inside"])
def test_training_graph_on_cuda_calls_the_attention_op_whose_backward_is_one_op(why):
    """A training graph on CUDA tensors keeps SDPA whole as dynamo_mlir::attention, and
    AOTAutograd differentiates it into one dynamo_mlir::attention_grad; grouped-query attention
    and dropout, which the op does not take, are traced in the math form."""
    graph = _sdpa_graph(set_grad=why == "grad_enabled_inside")
    inputs = _fake_cuda(requires_grad=why == "requires_grad")
    assert keeps_fused_attention(graph, inputs, resolve({}))
    prepare_attention(graph, inputs, resolve({}))
    q, k, v = (t.requires_grad_() for t in _qkv())
    traced = make_fx(lambda q, k, v: torch.autograd.grad(graph(q, k, v).sum(), (q, k, v)), tracing_mode="fake")(q, k, v)
    targets = [n.target for n in traced.graph.nodes]
    assert targets.count(torch.ops.dynamo_mlir.attention.default) == 1, traced.code
    assert targets.count(torch.ops.dynamo_mlir.attention_grad.default) == 1, traced.code
    assert aten.bmm.default not in targets, traced.code
    gqa = torch.fx.symbolic_trace(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
    prepare_attention(gqa, _fake_cuda(requires_grad=True), resolve({}))
    kv = [t[:, :2].detach().requires_grad_() for t in (k, v)]
    traced = make_fx(lambda q, k, v: torch.autograd.grad(gqa(q, k, v).sum(), (q, k, v)), tracing_mode="fake")(q, *kv)
    targets = [n.target for n in traced.graph.nodes]
    assert torch.ops.dynamo_mlir.attention.default not in targets and aten.bmm.default in targets, traced.code


@pytest.mark.parametrize("case", ["plain", "causal", "mask", "bool_mask", "scale"])
def test_attention_op_gradients_are_sdpas(case):
    """The op's backward (attention_grad's own implementation: torch's backward of SDPA, what an
    eager node and the cuda target's runner run) against autograd through SDPA, in float64."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, L, E, dtype=torch.float64, requires_grad=True) for _ in range(3))
    kwargs = {"causal": {"is_causal": True}, "mask": {"attn_mask": torch.randn(B, 1, L, L, dtype=torch.float64)},
              "bool_mask": {"attn_mask": _bool_mask()}, "scale": {"scale": 0.3}}.get(case, {})
    grad = torch.randn(B, H, L, E, dtype=torch.float64)
    got = torch.autograd.grad(attention_call(q, k, v, **kwargs), (q, k, v), grad)
    want = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, **kwargs), (q, k, v), grad)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def _attention_grad(bias=None, causal=False, scale=None):
    return lambda g, q, k, v, *mask: torch.ops.dynamo_mlir.attention_grad(
        g, q, k, v, bias(mask[0], q.dtype) if bias else None, causal, scale)


GRAD_CASES = {  # case -> (attention_grad's call on (grad, q, k, v[, mask]), the mask or None)
    "plain": (_attention_grad(), None),
    "causal": (_attention_grad(causal=True), None),
    "bool_mask": (_attention_grad(bias=lambda m, dt: torch.where(m, 0.0, float("-inf")).to(dt)), _bool_mask),
    "float_mask_scale": (_attention_grad(bias=lambda m, dt: m, scale=0.3), lambda: torch.randn(B, 1, L, L)),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_generic_attention_grad_rule_matches_eager_on_cpu(case):
    """dynamo.attention_grad's generic rule (the math form's backward, probabilities recomputed),
    compiled for the cpu target, against the op's eager implementation."""
    fn, make_mask = GRAD_CASES[case]
    torch.manual_seed(0)
    inputs = [torch.randn(B, H, L, E) for _ in range(4)] + ([make_mask()] if make_mask else [])
    got = torch.compile(fn, backend="mlir", options={"strict": True})(*inputs)
    for a, b in zip(got, fn(*inputs)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {"dynamo_mlir.attention_grad.default": 1}, \
        dynamo_mlir.explain()  # its batched matmuls are BLAS calls (library_matmul)


def test_attention_grad_for_cuda_is_one_torch_call_reading_the_heads_as_views(tmp_path):
    """On the cuda target the backward is one torch call writing dq, dk and dv; q, k, v and the
    output's gradient, moved from [B, L, H, E] to [B, H, L, E], are read as transposed views."""
    def backward(qkv, grad):
        q, k, v = (t.view(B, L, H, E).transpose(1, 2) for t in qkv.split(H * E, dim=2))
        return torch.ops.dynamo_mlir.attention_grad(grad.view(B, L, H, E).transpose(1, 2), q, k, v, None, True, None)

    gm, fake = _traced(backward, (torch.randn(B, L, 3 * H * E), torch.randn(B, L, H * E)))
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "backward", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {"dynamo_mlir.attention_grad.default": 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    call = next(line for line in host.splitlines() if "torch torch.attention_grad(" in line)
    # the gradient in [B, L, H, E] layout: strides (L*H*E, E, H*E, 1); q, k and v views of the
    # [B, L, 3*H*E] input at offsets 0, H*E, 2*H*E; dq, dk, dv fresh
    assert call.count(f"[{B}x{H}x{L}x{E}|{L * H * E},{E},{H * E},1+0]") == 1, call
    for offset in (0, H * E, 2 * H * E):
        assert f"[{B}x{H}x{L}x{E}|{3 * L * H * E},{E},{3 * H * E},1+{offset}]" in call, call
    assert call.count(f"[{B}x{H}x{L}x{E}|{L * H * E},{L * E},{E},1+0]") == 3, call
    # no copy out of the split (codegen/sliced_reshapes.py), none for the transposes
    assert host.count("torch torch.attention_grad(") == 1 and host.count("launch ") == 0, host


# ----------------------------------------------------------------------------- on a GPU


@pytest.fixture
def exact_f32_matmuls():
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = saved


def _fused_library_ops() -> dict:
    return {op: n for op, n in dynamo_mlir.stats()["library_ops"].items() if op in FUSED}


def _assert_attention_calls(expected: int):
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["partitions_failed"] == 0 and s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
    fused = _fused_library_ops()
    assert len(fused) == 1 and sum(fused.values()) == expected, dynamo_mlir.explain()


GPU_CASES = {  # case -> SDPA's keyword arguments on cuda tensors
    "plain": lambda: {},
    "causal": lambda: {"is_causal": True},
    "float_mask": lambda: {"attn_mask": torch.randn(2, 1, 64, 64, device="cuda")},
    "bool_mask": lambda: {"attn_mask": (torch.rand(2, 1, 64, 64, device="cuda") > 0.3).index_fill_(3, torch.tensor([0], device="cuda"), True)},
    "scale": lambda: {"scale": 0.3, "is_causal": True},
}


@on_gpu
@pytest.mark.parametrize("case", sorted(GPU_CASES))
def test_sdpa_inference_on_cuda_is_one_library_call(case):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda") for _ in range(3))
    kwargs = GPU_CASES[case]()
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
    compiled = torch.compile(fn, backend="mlir", options={"strict": True})
    with torch.no_grad():
        for _ in range(2):  # the second call runs the compiled schedule again
            got = compiled(q, k, v)
        want = fn(q, k, v)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    cpu = {name: (t.cpu().double() if t.is_floating_point() else t.cpu()) if isinstance(t, torch.Tensor) else t
           for name, t in kwargs.items()}
    exact = F.scaled_dot_product_attention(q.cpu().double(), k.cpu().double(), v.cpu().double(), **cpu)
    torch.testing.assert_close(got.cpu().double(), exact, rtol=1e-3, atol=1e-4)  # semantics, whatever the kernel
    _assert_attention_calls(1)


@on_gpu
def test_half_sdpa_inference_on_cuda_is_one_library_call():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", dtype=torch.float16) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    with torch.no_grad():
        got = torch.compile(fn, backend="mlir", options={"strict": True})(q, k, v)
        want = fn(q, k, v)
    torch.testing.assert_close(got, want)  # the same fused kernel on the same values
    # and the semantics: torch's half kernel (not ours) rounds its probabilities to the half type
    assert_close_to_float32(got, fn(q.float(), k.float(), v.float()), magnitude_rtol=1e-2)
    _assert_attention_calls(1)


@on_gpu
def test_option_off_runs_the_math_form_on_cuda(exact_f32_matmuls):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda") for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    with torch.no_grad():
        got = torch.compile(fn, backend="mlir", options={"strict": True, "cuda_library_attention": False})(q, k, v)
        want = fn(q, k, v)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert not _fused_library_ops() and s["library_ops"].get("aten.bmm.default") == 2 and s["ops_fallback"] == 0, \
        dynamo_mlir.explain()


@on_gpu
@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_transformer_inference_on_cuda_runs_attention_as_library_calls(name, exact_f32_matmuls):
    from real_models import CASES as MODELS

    case = MODELS[name]
    torch.manual_seed(0)
    model = case.build(None).cuda().eval()  # transformers' default attention: SDPA
    inputs, _ = case.batch(torch.Generator().manual_seed(0))
    inputs = {key: value.cuda() for key, value in inputs.items()}
    compiled = torch.compile(model, backend="mlir", options={"strict": True})
    with torch.no_grad():
        for _ in range(2):  # the second call replays the schedule (a CUDA graph)
            got = getattr(compiled(**inputs), case.output)
        want = getattr(model(**inputs), case.output)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    _assert_attention_calls(2)  # one per layer (tools/models.py builds two)
    assert dynamo_mlir.stats()["graphs_by_kind"] == {"inference": 1}, dynamo_mlir.explain()


TRAINING_CASES = {  # case -> (SDPA's keyword arguments on cuda tensors, dtype)
    "bool_mask_fp32": (GPU_CASES["bool_mask"], torch.float32),
    "causal_fp32": (GPU_CASES["causal"], torch.float32),
    "causal_bf16": (GPU_CASES["causal"], torch.bfloat16),
    "plain_fp16": (GPU_CASES["plain"], torch.float16),
}


@on_gpu
@pytest.mark.parametrize("case", sorted(TRAINING_CASES))
def test_training_on_cuda_runs_attention_and_its_backward_as_torch_calls(case, exact_f32_matmuls):
    """A training graph's attention is one call of the fused kernel forward and one of its
    backward (no batched matmul, no softmax of ours); the output and the three gradients as
    accurate as eager's against float64 (3x rule), in the graphs' second call too (a replay)."""
    make_kwargs, dtype = TRAINING_CASES[case]
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    kwargs = make_kwargs()
    grad_out = torch.randn(2, 4, 64, 32, device="cuda", dtype=dtype)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
    compiled = torch.compile(fn, backend="mlir", options={"strict": True})

    def run(f, inputs, g):
        out = f(*inputs)
        return (out, *torch.autograd.grad(out, inputs, g))

    for _ in range(2):
        got = run(compiled, (q, k, v), grad_out)
    eager = run(fn, (q, k, v), grad_out)
    wide = [t.detach().double().requires_grad_() for t in (q, k, v)]
    kwargs = {name: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t
              for name, t in kwargs.items()}
    reference = run(fn, wide, grad_out.double())
    for a, b, ref in zip(got, eager, reference):
        assert a.dtype == dtype
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(a) <= 3 * error(b) + 1e-7, (error(a), error(b))
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1} and s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
    assert {"dynamo_mlir.attention.default": 1, "dynamo_mlir.attention_grad.default": 1}.items() \
        <= s["library_ops"].items(), dynamo_mlir.explain()
    assert "aten.bmm.default" not in s["library_ops"], dynamo_mlir.explain()


@on_gpu
def test_training_with_the_option_off_takes_the_math_form(exact_f32_matmuls):
    """cuda_library_attention off: a graph that needs gradients differentiates the math form, its
    forward and backward matmuls and softmax, and matches eager's gradients."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", requires_grad=True) for _ in range(3))
    mask = (torch.rand(2, 1, 64, 64, device="cuda") > 0.3).index_fill_(3, torch.tensor([0], device="cuda"), True)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # noqa: E731
    got = torch.compile(fn, backend="mlir", options={"strict": True, "cuda_library_attention": False})(q, k, v)
    grads = torch.autograd.grad(got.square().sum(), (q, k, v))
    want = fn(q, k, v)
    want_grads = torch.autograd.grad(want.square().sum(), (q, k, v))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1} and s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert "dynamo_mlir.attention.default" not in s["library_ops"], dynamo_mlir.explain()
    assert not _fused_library_ops() and "aten.bmm.default" in s["library_ops"], dynamo_mlir.explain()


def test_two_attention_layers_fold_their_transposes_and_the_ir_stays_valid(tmp_path):
    """GPT-2's two layers: bufferization hands both layers' merged-heads buffers one alloc, made
    before the first layer; writing each call's result through a view of it must not move that
    alloc down to the second call (the first layer's uses would then come before it)."""
    def two_layers(x, w_qkv, w_out):
        return _attention_block(_attention_block(x, w_qkv, w_out).tanh(), w_qkv, w_out)

    inputs = (torch.randn(B, L, H * E), torch.randn(H * E, 3 * H * E), torch.randn(H * E, H * E))
    gm, fake = _traced(two_layers, inputs)
    with zeros_runtime("cuda"):
        compile_graph(gm, fake, "inference", resolve({**CUDA, "dump_dir": str(tmp_path)}))
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert s["library_ops"] == {"aten._scaled_dot_product_efficient_attention.default": 2,
                                "aten.mm.default": 4}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    calls = [line for line in host.splitlines() if "torch torch.attention(" in line]
    assert len(calls) == 2, host
    assert "memref.transpose" in read_stage(str(tmp_path), "gpu")  # the folds took place


# ----------------------------------------------------------------------------- half training


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", ["plain", "causal", "mask"])
def test_half_math_attention_as_accurate_as_torch_sdpa(dtype, case):
    """The half math form of training graphs (frontend/half_attention.py), its output and the
    three gradients, against float64: each error at most 3x that of torch's own SDPA in the
    same dtype (PyTorch's benchmark rule)."""
    torch.manual_seed(0)
    q, k, v = (2 * torch.randn(2, 4, 48, 32, dtype=torch.float64) for _ in range(3))
    mask = torch.randn(2, 1, 48, 48, dtype=torch.float64) if case == "mask" else None
    grad_out = torch.randn(2, 4, 48, 32, dtype=torch.float64)

    def run(fn, t):
        inputs = [x.to(t).requires_grad_() for x in (q, k, v)]
        out = fn(*inputs, attn_mask=None if mask is None else mask.to(t), is_causal=case == "causal")
        return (out, *torch.autograd.grad(out, inputs, grad_out.to(t)))

    mine, torch_half = run(half_math_attention, dtype), run(F.scaled_dot_product_attention, dtype)
    reference = run(F.scaled_dot_product_attention, torch.float64)
    for a, b, ref in zip(mine, torch_half, reference):
        assert a.dtype == dtype
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(a) <= 3 * error(b), (error(a), error(b))


def test_half_math_attention_applies_to_half_cuda_tensors_only():
    with FakeTensorMode():
        half = [torch.empty(B, H, L, E, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        single = [torch.empty(B, H, L, E, device="cuda") for _ in range(3)]
        gqa_kv = torch.empty(B, 2, L, E, device="cuda", dtype=torch.bfloat16)
    assert half_attention.applies(*half, None, 0.0, False)
    assert not half_attention.applies(*single, None, 0.0, False)  # float32: torch's math form
    assert not half_attention.applies(*half, None, 0.1, False)  # dropout
    assert not half_attention.applies(half[0], gqa_kv, gqa_kv, None, 0.0, True)  # grouped-query broadcast
    assert not half_attention.applies(*(t.to(torch.bfloat16) for t in _qkv()), None, 0.0, False)  # CPU tensors


def _slot_dtypes(host: str) -> dict[str, str]:
    """Host schedule slot (%n) -> its element type, from the header and the `empty` lines."""
    header = host[host.index("(") + 1:host.index(")")]
    slots = {name.strip(): spec.split("x")[-1] for name, spec in (p.split(":") for p in header.split(","))}
    for line in host.splitlines():
        if " = empty(" in line:
            name, rest = line.strip().split(" = empty(")
            slots[name] = rest.split(",")[1].strip(" )")
    return slots


@on_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_training_attention_runs_its_matmuls_on_half_operands(dtype, tmp_path):
    """A half training graph's attention in the math form (cuda_library_attention off) takes the
    half one: its gradients as accurate as eager's against float64 (3x rule), and every batched
    matmul of the forward and backward schedules reads half buffers (tensor cores; the scores in
    float32 from widened ones)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    grad_out = torch.randn(2, 4, 64, 32, device="cuda", dtype=dtype)
    compiled = torch.compile(fn, backend="mlir", options={"strict": True, "dump_dir": str(tmp_path),
                                                          "cuda_library_attention": False})
    got = torch.autograd.grad(compiled(q, k, v), (q, k, v), grad_out)
    eager = torch.autograd.grad(fn(q, k, v), (q, k, v), grad_out)
    wide = [t.detach().double().requires_grad_() for t in (q, k, v)]
    reference = torch.autograd.grad(fn(*wide), wide, grad_out.double())
    for a, b, ref in zip(got, eager, reference):
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(a) <= 3 * error(b), (error(a), error(b))
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1} and s["ops_fallback"] == 0, dynamo_mlir.explain()
    name = str(dtype).split(".")[1]
    matmuls = 0
    for host in read_stage(str(tmp_path), "host").split("host main(")[1:]:
        slots = _slot_dtypes("host main(" + host)
        for line in host.splitlines():
            if "torch linalg.batch_matmul(" in line:
                operands = [a.split("[")[0].strip() for a in line.split("(", 1)[1].split("]")[:2]]
                assert [slots[o.lstrip(", ")] for o in operands] == [name, name], (line, slots)
                matmuls += 1
    # 2 forward, 4 backward, and the scores recomputed in the backward unless AOTAutograd's
    # CSE and partitioner save them from the forward instead
    assert matmuls in (6, 7), matmuls


def test_attention_takes_torchs_result_as_its_buffer_instead_of_copying_it():
    """codegen/cuda/library.py's attention step, run on CPU tensors (the runner is torch's SDPA
    on whatever device the views are): where its output is the whole of an allocated buffer,
    laid out as torch's result, the result becomes that buffer (no copy kernel); into a view of
    part of a buffer, or into an output slot, it is copied. Values as eager's either way."""
    from dynamo_mlir.codegen.cuda import library
    from dynamo_mlir.codegen.cuda.schedule import Library, View

    q, k, v = (torch.randn(B * H * L * E) for _ in range(3))
    heads = lambda slot, offset=0: View(slot, (B, H, L, E), (H * L * E, L * E, E, 1), offset)  # noqa: E731
    want = F.scaled_dot_product_attention(*(t.view(B, H, L, E) for t in (q, k, v)), is_causal=True, scale=0.25)
    attrs = (("is_causal", 1), ("scale", 0.25))
    for out_slot, numel, offset, adopted in ((3, B * H * L * E, 0, True), (3, 2 * B * H * L * E, 0, False),
                                            (3, 2 * B * H * L * E, B * H * L * E, False), (4, B * H * L * E, 0, False)):
        bufs = [q, k, v, torch.zeros(numel), torch.zeros(B * H * L * E)]
        before = bufs[out_slot]
        call = Library("torch.attention", (heads(0), heads(1), heads(2), heads(out_slot, offset)), True, attrs)
        library.step(call, intermediates=frozenset({3}))(bufs, None)
        got = bufs[out_slot][offset:offset + B * H * L * E].view(B, H, L, E)
        torch.testing.assert_close(got, want)
        assert (bufs[out_slot] is not before) == adopted, (out_slot, numel, offset)
