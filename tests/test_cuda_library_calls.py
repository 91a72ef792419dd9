"""index_put and scatter on the cuda target: torch calls inside a region (codegen/cuda/library_calls.py),
so the backward of an embedding is one region with no eager op; cross-entropy's backward, a
scatter of one value per row, is a select fused into our kernels (frontend/aten/scatter.py).

Without a GPU the training step is compiled through every cuda stage on CPU tensors (a
placeholder runtime returns zeros, so the backward graph is compiled too) and the host schedule
is checked; with a GPU the results are compared with eager."""


import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import read_stage, zeros_runtime, on_gpu

TARGET = get_target("cuda")



class EmbedThenClassify(nn.Module):
    """Token and position embeddings, a linear head, cross-entropy: the index_put (x2, the
    embeddings' backward) and one-hot scatter (cross-entropy's backward) of a GPT-2 training step."""

    def __init__(self, vocab=50, ctx=8, d=16):
        super().__init__()
        self.tok, self.pos, self.head = nn.Embedding(vocab, d), nn.Embedding(ctx, d), nn.Linear(d, vocab)

    def forward(self, x, y):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))
        return F.cross_entropy(self.head(h).flatten(0, 1), y.flatten())


# the head's bias add runs in its matmul's epilogue (torch.addmm, codegen/cuda/matmul_bias.py)
TRAINING_LIBRARY = {"aten.mm.default": 3, "aten.add.Tensor": 1, "aten.index_put.default": 2}


def test_training_step_for_cuda_is_one_region_per_graph_with_torch_calls(tmp_path):
    torch.manual_seed(0)
    model = EmbedThenClassify()
    x, y = torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8))
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(model, backend="mlir", options=options)(x, y).backward()
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1}, dynamo_mlir.explain()
    assert s["ops_fallback"] == 0 and s["partitions"] == 2 and s["partitions_failed"] == 0, dynamo_mlir.explain()
    assert s["library_ops"] == TRAINING_LIBRARY, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    assert host.count("torch torch.index_put(") == 2 and "{'accumulate': 1} for index_put" in host, host
    # cross-entropy's one-hot scatter compiled as a select in a kernel: no scatter call, and no
    # zero fill of the logits' size for one
    assert "torch torch.scatter(" not in host and s["compiled_ops"].get("aten.scatter.value") == 1, host
    # the zeros index_put updates are filled in place: no dense constant of the table's size to copy
    assert not re.search(r"= constant \(\d+, \d+\)", host), host


SCATTERS = {  # case -> (fn(x, index, src), its ATen op, the step's attributes in the host schedule)
    "assign": (lambda x, i, s: x.scatter(1, i, s) * 3, "aten.scatter.src", "{'dim': 1, 'reduce': 'assign', 'include_self': 1}"),
    "value": (lambda x, i, s: x.scatter(1, i, -1.0) * 3, "aten.scatter.value", "'reduce': 'assign'"),
    "add": (lambda x, i, s: x.scatter_add(1, i, s) * 3, "aten.scatter_add.default", "'reduce': 'sum', 'include_self': 1"),
    "amax": (lambda x, i, s: x.scatter_reduce(1, i, s, "amax") * 3, "aten.scatter_reduce.two", "'reduce': 'amax'"),
    "mean_without_self": (lambda x, i, s: x.scatter_reduce(1, i, s, "mean", include_self=False) * 3,
                          "aten.scatter_reduce.two", "'reduce': 'mean', 'include_self': 0"),
}


@pytest.mark.parametrize("case", sorted(SCATTERS))
def test_scatter_kinds_for_cuda_are_torch_calls(case, tmp_path):
    fn, aten_op, attrs = SCATTERS[case]
    x, index, src = torch.randn(4, 10), torch.randint(0, 10, (4, 6)), torch.randn(4, 6)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(fn, backend="mlir", options=options)(x, index, src)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {aten_op: 1} and s["ops_compiled"] >= 1, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    assert host.count("torch torch.scatter(") == 1 and attrs in host, host


@pytest.mark.parametrize("accumulate", [1, 0])
def test_index_put_on_two_dims_for_cuda_is_one_torch_call(accumulate, tmp_path):
    fn = lambda x, i, j, v: (x + 1).index_put((i, j), v, accumulate=bool(accumulate))
    x, v = torch.randn(5, 6, 3), torch.randn(4, 3)
    i, j = torch.tensor([0, -1, 2, 0]), torch.tensor([1, 5, -6, 1])
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(fn, backend="mlir", options=options)(x, i, j, v)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {"aten.index_put.default": 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    # values, then both index tensors, then the output (a copy of x + 1 made by a kernel before it)
    assert f"torch torch.index_put(%3[4x3|3,1+0], %1[4|1+0], %2[4|1+0], %4[5x6x3|18,3,1+0]) overwrite=False " \
           f"{{'accumulate': {accumulate}}} for index_put" in host, host


# ----------------------------------------------------------------------------- on a GPU


def _compile(fn, mode=None):
    # torch.compile takes a mode or options, not both; stats() shows a failed region either way.
    if mode is not None:
        return torch.compile(fn, backend="mlir", mode=mode)
    return torch.compile(fn, backend="mlir", options={"strict": True})


def _assert_library(expected: dict):
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["partitions_failed"] == 0 and s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
    assert s["library_ops"] == expected, dynamo_mlir.explain()
    assert s["ops_compiled"] >= 1, dynamo_mlir.explain()


@on_gpu
@pytest.mark.parametrize("accumulate", [True, False], ids=["accumulate", "assign"])
def test_index_put_with_repeated_and_negative_indices(accumulate):
    torch.manual_seed(0)
    x, v = torch.randn(8, 16, device="cuda"), torch.randn(6, 16, device="cuda")
    # Repeated targets only where accumulating (assigning to one target twice is unordered in eager too).
    idx = torch.tensor([0, -1, 2, 0, -1, 5] if accumulate else [0, -1, 2, 3, -3, 5], device="cuda")
    fn = lambda x, i, v: (x * 2).index_put((i,), v, accumulate=accumulate) + 1
    torch.testing.assert_close(_compile(fn)(x, idx, v), fn(x, idx, v))
    _assert_library({"aten.index_put.default": 1})


@on_gpu
@pytest.mark.parametrize("case", sorted(SCATTERS))
def test_scatter_kinds_match_eager(case):
    torch.manual_seed(0)
    x, src = torch.randn(4, 10, device="cuda"), torch.randn(4, 6, device="cuda")
    if case in ("assign", "value"):  # one write per target: assigning one target twice is unordered in eager too
        index = torch.stack([torch.randperm(10, device="cuda")[:6] for _ in range(4)])
    else:
        index = torch.randint(0, 10, (4, 6), device="cuda")
    fn, aten_op, _ = SCATTERS[case]
    torch.testing.assert_close(_compile(fn)(x, index, src), fn(x, index, src))
    _assert_library({aten_op: 1})


def _train_step(model, x, y):
    model.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    return [loss.detach()] + [p.grad for p in model.parameters()]


@on_gpu
@pytest.mark.parametrize("mode", [None, "reduce-overhead"], ids=["default", "reduce_overhead"])
def test_embedding_and_cross_entropy_backward_match_eager(mode):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = EmbedThenClassify().cuda()
    compiled = _compile(model, mode)
    for step in range(3):  # fresh inputs each step: replays copy them in
        x = torch.randint(0, 50, (2, 8), device="cuda")
        x[0, :4] = 7  # a token repeated: its embedding row accumulates four gradients
        y = torch.randint(0, 50, (2, 8), device="cuda")
        y[1, 0] = -100  # cross-entropy's ignore_index
        want = _train_step(model, x, y)
        want = [t.clone() for t in want]
        got = _train_step(compiled, x, y)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5, msg=f"step {step}")
    _assert_library(TRAINING_LIBRARY)
    assert dynamo_mlir.stats()["partitions"] == 2, dynamo_mlir.explain()


@on_gpu
def test_embedding_backward_alone_matches_eager():
    torch.manual_seed(0)
    emb = nn.Embedding(30, 8).cuda()
    idx = torch.tensor([[1, 1, 4, 29], [0, 1, 4, 4]], device="cuda")
    weights = torch.randn(2, 4, 8, device="cuda")
    loss = lambda m: (m(idx) * weights).sum()
    loss(emb).backward()
    want = emb.weight.grad.clone()
    emb.weight.grad = None
    loss(_compile(emb)).backward()
    torch.testing.assert_close(emb.weight.grad, want)
    _assert_library({"aten.index_put.default": 1})


# The resampling backwards: several index_puts reading index tensors that CSE shared between them
# (codegen/buffer_reads.py). They read each other's indices: gradients off by up to 22.5, and
# out-of-range indices (trilinear: three dims of different sizes) tripped torch's device assert.
RESAMPLES = {
    "bilinear_7x3": (lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"), (1, 2, 4, 5)),
    "bilinear_corners": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear", align_corners=True),
                         (2, 3, 5, 6)),
    "trilinear": (lambda x: F.interpolate(x, size=(3, 7, 2), mode="trilinear"), (1, 2, 4, 5, 6)),
    "upsample_bilinear": (lambda x: F.upsample_bilinear(x, scale_factor=2), (1, 2, 3, 4)),
}


def _resample_case_and_grads(case, module):
    fn, shape = RESAMPLES[case]
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", requires_grad=True)
    weights = torch.randn_like(fn(x.detach()))
    (module(x) * weights).sum().backward()
    return x.grad


@on_gpu
@pytest.mark.parametrize("case", sorted(RESAMPLES))
def test_resampling_backward_matches_eager(case):
    fn = RESAMPLES[case][0]
    want = _resample_case_and_grads(case, fn)
    got = _resample_case_and_grads(case, _compile(fn))
    torch.cuda.synchronize()  # a device assert surfaces here, not later in another test
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert dynamo_mlir.stats()["library_ops"].get("aten.index_put.default", 0) >= 2, dynamo_mlir.explain()


# ----------------------------------------------------------------------------- half contractions


def _conv_then_mm(x, w, a, b):
    return F.conv2d(x, w, padding=1).relu(), a @ b


def _half_operands(dtype, device="cpu"):
    g = torch.Generator().manual_seed(0)
    r = lambda *shape: torch.randn(*shape, generator=g).to(device=device, dtype=dtype)  # noqa: E731
    return r(2, 8, 16, 16), r(16, 8, 3, 3) / 8, r(64, 96), r(96, 32) / 10


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_contractions_reach_the_libraries_in_their_dtype(tmp_path, dtype):
    """A half convolution and matmul are library steps on half buffers (cuDNN and cuBLAS on
    tensor cores, float32 accumulation inside): no float32 copy of an operand, no float32
    result buffer; the convolution pads as cuDNN reads (no padded copy)."""
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(_conv_then_mm, backend="mlir", options=options)(*_half_operands(dtype))
    s = dynamo_mlir.stats()
    assert s["library_ops"] == {"aten.convolution.default": 1, "aten.mm.default": 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    name = str(dtype).split(".")[1]
    assert "float32" not in host, host
    conv = next(line for line in host.splitlines() if "torch torch.convolution(" in line)
    assert "'padding': (1, 1)" in conv and "[2x8x16x16|" in conv, host
    assert f"%0: 2x8x16x16x{name}" in host and "torch linalg.matmul(" in host, host


# (stride, padding, dilation, kernel): ResNet-50's stem and its strided 1x1 and 3x3, a dilated one
CONV_BACKWARDS = {"stem": (2, 3, 1, 7), "downsample": (2, 0, 1, 1), "strided": (2, 1, 1, 3), "dilated": (1, 2, 2, 3)}


def _conv_step(window, dtype, device="cpu"):
    """A convolution's training step on `dtype` operands: the function and its inputs (x and w
    requiring gradients)."""
    stride, padding, dilation, k = window
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 8, 15, 15, generator=g).to(device=device, dtype=dtype).requires_grad_()
    w = (torch.randn(16, 8, k, k, generator=g) / (8 * k)).to(device=device, dtype=dtype).requires_grad_()
    fn = lambda x, w: F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation).relu().sum()  # noqa: E731
    return fn, x, w


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv_backward_for_cuda_is_one_cudnn_call_per_gradient(tmp_path, dtype):
    """The input and weight gradients are one torch convolution_backward call each, on buffers of
    the operands' type, writing the gradients' buffers: no kernel of ours computes them (the
    generic rule's forward convolutions of a dilated gradient ran cuDNN's slowest kernels)."""
    fn, x, w = _conv_step(CONV_BACKWARDS["strided"], dtype)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(fn, backend="mlir", options=options)(x, w).backward()
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert s["library_ops"] == {"aten.convolution.default": 1, "aten.convolution_backward.default": 1}, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    backward = host.split("host main(")[2]  # the forward's schedule, then the backward's
    name = str(dtype).split(".")[1]
    grad_input = next(line for line in backward.splitlines() if "torch torch.conv_grad_input(" in line)
    grad_weight = next(line for line in backward.splitlines() if "torch torch.conv_grad_weight(" in line)
    assert "[16x8x3x3|" in grad_input and grad_input.endswith("for convolution_backward"), host
    assert "[2x8x15x15|" in grad_weight and "'stride': (2, 2), 'padding': (1, 1)" in grad_weight, host
    assert f"x{name}" in backward.splitlines()[0] and (name == "float32" or "float32" not in backward), host
    assert backward.count("launch ") == 1, host  # relu's backward, before them


@on_gpu
@pytest.mark.parametrize("case", sorted(CONV_BACKWARDS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv_backward_matches_eager(case, dtype):
    """Both gradients against eager's (float32: within TF32-free float tolerance; bf16: error
    against float64 at most 3x eager's, PyTorch's benchmark rule)."""
    fn, x, w = _conv_step(CONV_BACKWARDS[case], dtype, "cuda")
    got = torch.autograd.grad(torch.compile(fn, backend="mlir", options={"strict": True})(x, w), (x, w))
    assert dynamo_mlir.stats()["library_ops"].get("aten.convolution_backward.default") == 1, dynamo_mlir.explain()
    eager = torch.autograd.grad(fn(x, w), (x, w))
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    reference = torch.autograd.grad(fn(x64, w64), (x64, w64))
    for mine, theirs, ref in zip(got, eager, reference):
        assert mine.dtype == dtype
        if dtype == torch.float32:
            torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-4)
        else:
            error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
            assert error(mine) <= 3 * error(theirs) + 1e-6, (error(mine), error(theirs))


@on_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_contractions_as_accurate_as_eager(dtype):
    """Against float64: each result's error at most 3x eager's (PyTorch's benchmark rule)."""
    inputs = _half_operands(dtype, "cuda")
    got = torch.compile(_conv_then_mm, backend="mlir")(*inputs)
    assert dynamo_mlir.stats()["library_ops"] == {"aten.convolution.default": 1, "aten.mm.default": 1}
    eager = _conv_then_mm(*inputs)
    reference = _conv_then_mm(*(t.double() for t in inputs))
    for mine, theirs, ref in zip(got, eager, reference):
        assert mine.dtype == dtype
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(mine) <= 3 * error(theirs), (error(mine), error(theirs))


def _vocab_head_matmuls(dtype, device="cpu"):
    """A 509-token vocabulary, a dim no multiple of 8: the logits' matmul and its two gradients,
    as a training step has them."""
    g = torch.Generator().manual_seed(0)
    h, w, grad = (torch.randn(s, generator=g).to(device=device, dtype=dtype) for s in ((130, 136), (509, 136), (130, 509)))
    return h, w, grad


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("overwrite", [True, False])
def test_half_matmul_step_pads_dims_cublas_would_run_with_align1_kernels(dtype, overwrite):
    """The cuda matmul step runs on any torch tensors: a half matmul with a dim that is not a
    multiple of 8 multiplies operands zero-padded to multiples of 8 (plain and transposed views,
    2-d and batched), and writes or adds the result it cuts out of the padded one."""
    from types import SimpleNamespace

    from dynamo_mlir.codegen.cuda import library

    h, w, grad = _vocab_head_matmuls(dtype)
    padded = library._padded(grad.t(), 512, 136)
    assert padded.shape == (512, 136) and padded.stride() == (1, 512) and not padded[509:].any() and not padded[:, 130:].any()
    for a, b in ((h, w.t()), (grad, w), (grad.t(), h), (grad.expand(2, -1, -1), w.expand(2, -1, -1))):
        c = torch.randn(*a.shape[:-1], b.shape[-1], dtype=dtype)
        want = a.double() @ b.double() + (0 if overwrite else c.double())
        library._matmul(SimpleNamespace(overwrite=overwrite), a, b, c)
        assert (c.double() - want).abs().max() <= 2e-2 * want.abs().max()


@on_gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_misaligned_vocab_matmuls_match_eager(dtype):
    """The logits' matmul of a 509-token vocabulary and its gradients (padded to multiples of 8 in
    half precision): each at most 3x eager's error against float64."""
    h, w, grad = _vocab_head_matmuls(dtype, "cuda")
    fn = lambda h, w, grad: (h @ w.t(), grad @ w, grad.t() @ h)  # noqa: E731
    got = torch.compile(fn, backend="mlir")(h, w, grad)
    assert dynamo_mlir.stats()["library_ops"] == {"aten.mm.default": 3}, dynamo_mlir.explain()
    eager, reference = fn(h, w, grad), fn(h.double(), w.double(), grad.double())
    for mine, theirs, ref in zip(got, eager, reference):
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert mine.dtype == dtype and error(mine) <= 3 * error(theirs) + 1e-6, (error(mine), error(theirs))


@on_gpu
@pytest.mark.parametrize("layout", ["rows", "columns", "every_other_row"])
def test_copy_lines_copies_what_copy_does(layout):
    """codegen/cuda/library.py's pitched copy (a padded matmul's operands and result): the same
    elements as torch's copy_, nothing written between the destination's lines."""
    from dynamo_mlir.codegen.cuda.library import copy_lines

    big = torch.randn(1024, 1032, device="cuda", dtype=torch.bfloat16)
    src = {"rows": big[:, :1029], "columns": big[:, :1029].t(), "every_other_row": big[::2, :1029]}[layout]
    wide = torch.zeros(1032, 1040, device="cuda", dtype=torch.bfloat16)
    dst = wide[:src.shape[0], :src.shape[1]] if src.stride(-1) == 1 else wide.t()[:src.shape[0], :src.shape[1]]
    copy_lines(dst, src)
    assert torch.equal(dst, src)
    outside = torch.ones_like(wide, dtype=torch.bool)  # the padding stays zero (src may hold a zero itself)
    (outside[:src.shape[0], :src.shape[1]] if src.stride(-1) == 1 else outside.t()[:src.shape[0], :src.shape[1]]).fill_(False)
    assert not wide[outside].any()


class ConvChain(nn.Module):
    """conv-bn-relu-maxpool, then a residual block of 64-channel convolutions and one more: every
    convolution chained to another and wide enough for cuda's channels-last
    (codegen/channels_last.py, library_calls.MIN_NHWC_CHANNELS), but a last narrow one (16
    channels out) that stays NCHW."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64)
        self.c2, self.b2 = nn.Conv2d(64, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64)
        self.proj = nn.Conv2d(64, 64, 1, stride=2, bias=False)
        self.c3, self.narrow = nn.Conv2d(64, 64, 3, padding=1), nn.Conv2d(64, 16, 1)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.b1(self.c1(x))), 3, stride=2, padding=1)
        return self.narrow(self.c3(torch.relu(self.b2(self.c2(y)) + self.proj(y))))


@on_gpu
@pytest.mark.parametrize("channels_last", [True, False])
def test_chained_convolutions_run_channels_last_and_match_eager(channels_last, tmp_path):
    torch.manual_seed(0)
    m = ConvChain().cuda().eval()
    for b in (m.b1, m.b2):
        b.running_mean.normal_(0, 0.1), b.running_var.uniform_(0.5, 1.5)
    x = torch.randn(4, 3, 32, 32, device="cuda")
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options={"channels_last": channels_last, "dump_dir": str(tmp_path)})
        got = [f(x).clone() for _ in range(3)]
        want = m(x)
    for g in got:
        torch.testing.assert_close(g, want, rtol=1e-2, atol=1e-2)  # cuDNN may use TF32, as eager may
    host = read_stage(str(tmp_path), "host")
    assert host.count("torch.convolution_nhwc(") == (4 if channels_last else 0), host
    assert host.count("torch.convolution(") == (1 if channels_last else 5), host  # the narrow one
    assert dynamo_mlir.stats()["ops_fallback"] == 0


def _evaluation_loss(logits, target):
    return F.cross_entropy(logits.float(), target)


def test_an_evaluation_loss_gathers_log_probabilities_without_building_them(tmp_path):
    """Inference cross-entropy: the log_softmax is only gathered at each row's target, so it is
    computed there (cuda-compute-gathered-elements); no float32 [rows, vocabulary] buffer is
    allocated. Generated without a GPU (zeros_runtime); the values are checked on one below."""
    dynamo_mlir.reset()
    logits, target = torch.randn(64, 1000).to(torch.bfloat16), torch.randint(0, 1000, (64,))
    with zeros_runtime("cuda"):
        torch.compile(_evaluation_loss, backend="mlir", options={"target": "cuda", "dump_dir": str(tmp_path),
                                                                 "cache": False})(logits, target)
    host = read_stage(str(tmp_path), "host")
    assert "empty(64000, float32)" not in host, host
    assert re.search(r"launch elementwise_gather .*\(.*%0,", host), host  # reads the bf16 logits


@on_gpu
def test_an_evaluation_loss_matches_eager_on_the_gpu():
    dynamo_mlir.reset()
    torch._dynamo.reset()
    logits = torch.randn(512, 50257, device="cuda").to(torch.bfloat16)
    target = torch.randint(0, 50257, (512,), device="cuda")
    got = torch.compile(_evaluation_loss, backend="mlir")(logits, target)
    torch.testing.assert_close(got, _evaluation_loss(logits, target), rtol=1e-5, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {} and s["ops_compiled"] >= 10, dynamo_mlir.explain()


class AutocastMLP(nn.Module):
    """Two linear layers with a tanh GELU between them, run under autocast to bfloat16 (AMP)."""

    def __init__(self, d=64, hidden=128, n=40):
        super().__init__()
        self.up, self.down, self.bad = nn.Linear(d, hidden), nn.Linear(hidden, d), nn.Linear(d, n)

    def forward(self, x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            h = self.down(F.gelu(self.up(x), approximate="tanh"))
            return self.bad(h + x).float().sum(-1) + h.float().mean(-1)


def test_an_autocast_linear_is_one_half_addmm(tmp_path):
    """codegen/cuda/matmul_bias.py, the AMP form: the bf16 product summed in float32 plus the bias
    rounded to bf16, rounded once to the bf16 output, is one torch.addmm writing bf16 (cuBLASLt's
    epilogue), not a GEMM writing float32 and a kernel reading it back. Left as GEMMs: the down
    projection, whose float32 sums feed a residual add in float32 (the bias add is part of that
    kernel), and the 40-wide head (N not a multiple of 8: a padded matmul)."""
    torch.manual_seed(0)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(AutocastMLP(), backend="mlir", options=options)(torch.randn(32, 64)).sum().backward()
    assert dynamo_mlir.stats()["ops_fallback"] == 0, dynamo_mlir.explain()
    forward = "".join(p.read_text() for p in tmp_path.glob("*_forward_*.host.*"))
    calls = [re.findall(r"(%\d+)\[([0-9x]+)\|", line) for line in forward.splitlines() if "torch torch.addmm(" in line]
    assert [call[-1][1] for call in calls] == ["32x128"], forward  # (a, b, bias, out): the output's shape
    types = dict(re.findall(r"(%\d+): [0-9x]+x([a-z0-9]+)", forward.splitlines()[0]))
    types |= dict(re.findall(r"(%\d+) = empty\(\d+, (\w+)\)", forward))
    assert [types[call[-1][0]] for call in calls] == ["bfloat16"], forward
    assert forward.count("linalg.matmul(") == 2, forward


@on_gpu
def test_an_autocast_mlp_matches_eager_on_the_gpu():
    """The AMP MLP's loss and gradients: at most 3x eager's error against a float64 copy, with
    its up projection run as a half addmm."""
    torch.manual_seed(0)
    model, x = AutocastMLP().cuda(), torch.randn(256, 64, device="cuda")
    reference = AutocastMLP().cuda().double()
    reference.load_state_dict(model.state_dict())

    def step(m, x):
        m.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        return [loss] + [p.grad.clone() for p in m.parameters()]

    got = step(torch.compile(model, backend="mlir"), x)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"].get("aten.mm.default", 0) >= 2, dynamo_mlir.explain()
    eager = step(model, x)
    with torch.autocast("cuda", enabled=False):
        want = [t.double() for t in step(reference, x.double())]
    for mine, theirs, ref in zip(got, eager, want):
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(mine) <= 3 * error(theirs) + 1e-6, (error(mine), error(theirs))
