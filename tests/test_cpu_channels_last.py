"""cpu target: chained convolutions and the ops between them kept channels-last (NHWC)
(codegen/channels_last.py, option channels_last, with library_matmul).

Each model runs with the option on and off: both must match eager with the same ops compiled
and the same library calls, and the linalg stage must show which layout ran. There, before
bufferization, the only allocations are the convolutions' results (library_conv.py): NHWC
shapes with the option on, NCHW off; the transposes (4-d linalg.transpose) are where a layout
is converted: none off, and on only where NCHW is really needed (graph inputs and outputs, a
flatten)."""

import copy
import glob
import os
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dynamo_mlir.tools.models import cnn, randomize_batchnorm
from helpers import assert_all_compiled, compile_and_run

ON_OFF = pytest.mark.parametrize("on", [True, False], ids=["nhwc", "nchw"])
ALLOC = re.compile(r"memref\.alloc\(\) : memref<(\d+)x(\d+)x(\d+)x(\d+)x(?:f32|f64)>")
TRANSPOSE = re.compile(r"linalg\.transpose ins\(%\S+ : tensor<\d+x\d+x\d+x\d+x")
# An NHWC pooling: one generic over (n, oh, ow, kh, kw, c) (lowering/rules/pool.py).
NHWC_POOL = 'iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]'


def _layout(dump_dir, graph="") -> tuple[list, int, str]:
    """(the convolutions' result shapes, the 4-d transposes, the text) of the linalg stage of
    the graphs whose name contains `graph`."""
    paths = sorted(glob.glob(os.path.join(str(dump_dir), f"*{graph}*.linalg.mlir")))
    assert paths, os.listdir(dump_dir)
    text = "\n".join(open(p).read() for p in paths)
    return [tuple(map(int, m)) for m in ALLOC.findall(text)], len(TRANSPOSE.findall(text)), text


def _nhwc(shape):
    n, c, h, w = shape
    return n, h, w, c


def _run(fn, *inputs, on, tmp_path, library, rtol=1e-4, atol=1e-5):
    """fn compiled (channels_last on or off) against eager; the stats; the linalg stage's layout."""
    got = compile_and_run(fn, *inputs, options={"channels_last": on, "dump_dir": str(tmp_path)})
    want = fn(*inputs)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    return assert_all_compiled(library=library), _layout(tmp_path)


def _check_layout(layout, on, conv_outputs, transposes):
    """conv_outputs: the NCHW result shapes of the convolutions, in order; transposes: how many
    the NHWC version needs (the NCHW one needs none)."""
    shapes, found, _ = layout
    assert shapes == ([_nhwc(s) for s in conv_outputs] if on else list(conv_outputs))
    assert found == (transposes if on else 0)


def _convs(n):
    return {"aten.convolution.default": n}


@ON_OFF
def test_benchmark_cnn(tmp_path, on):
    """The benchmark CNN: 3x conv-bn-relu-maxpool, flatten, linear. One transpose in (the
    image), one out (before the flatten), none between the convolutions; pools NHWC."""
    torch.manual_seed(0)
    model = randomize_batchnorm(cnn(stages=3, image=64)).eval()
    with torch.no_grad():
        s, layout = _run(model, torch.randn(8, 3, 64, 64), on=on, tmp_path=tmp_path,
                         library={**_convs(3), "aten.mm.default": 1})
    assert s["ops_fallback"] == 0 and s["ops_library"] == 4
    assert s["compiled_ops"]["aten.max_pool2d_with_indices.default"] == 3
    _check_layout(layout, on, [(8, 16, 64, 64), (8, 32, 32, 32), (8, 64, 16, 16)], transposes=2)
    pools = layout[2].count(NHWC_POOL), layout[2].count("linalg.pooling_nchw_max")
    assert pools == ((3, 0) if on else (0, 3))


class BasicBlock(nn.Module):
    """ResNet's: conv-bn-relu-conv-bn, plus the input, relu."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


@ON_OFF
def test_resnet_basic_block(tmp_path, on):
    """The residual add reads the input's NHWC copy made for conv1: the only transposes are the
    input's and the output's."""
    torch.manual_seed(0)
    block = randomize_batchnorm(BasicBlock(16)).eval()
    with torch.no_grad():
        _, layout = _run(block, torch.randn(2, 16, 12, 12), on=on, tmp_path=tmp_path, library=_convs(2))
    _check_layout(layout, on, [(2, 16, 12, 12)] * 2, transposes=2)


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 conv-bn-relu down to `mid` channels, 3x3 conv-bn-relu, 1x1 conv-bn
    up to `cout`, plus the input (or, where the width changes, its 1x1 conv-bn projection), relu."""

    def __init__(self, cin, mid, cout):
        super().__init__()
        conv_bn = lambda i, o, k: nn.Sequential(nn.Conv2d(i, o, k, padding=k // 2, bias=False), nn.BatchNorm2d(o))
        self.body = nn.Sequential(conv_bn(cin, mid, 1), nn.ReLU(), conv_bn(mid, mid, 3), nn.ReLU(), conv_bn(mid, cout, 1))
        self.skip = nn.Identity() if cin == cout else conv_bn(cin, cout, 1)

    def forward(self, x):
        return torch.relu(self.body(x) + self.skip(x))


@ON_OFF
def test_two_resnet_bottlenecks(tmp_path, on):
    """The first stage of ResNet-50, in small (issue 22). The first block's input is read by two
    convolutions, the main path's first and the projection, with the main path's relu (its
    result as wide as that input) in between. CSE merges the two convolutions' to_buffer reads
    of that input; unless they are split again before bufferization (codegen/buffer_reads.py),
    the projection's read is invisible to it, and it wrote that relu's result over the block's
    input (1.28 off)."""
    torch.manual_seed(0)
    model = randomize_batchnorm(nn.Sequential(nn.ReLU(), Bottleneck(8, 8, 32), Bottleneck(32, 8, 32))).eval()
    with torch.no_grad():
        _run(model, torch.randn(2, 8, 6, 6), on=on, tmp_path=tmp_path, library=_convs(7))


@ON_OFF
def test_strided_convolutions(tmp_path, on):
    def f(x, w1, w2):
        y = torch.relu(F.conv2d(x, w1, stride=2, padding=1))
        return F.conv2d(y, w2, stride=(2, 1), padding=(0, 1), dilation=(1, 2))

    torch.manual_seed(0)
    args = torch.randn(2, 4, 17, 15), torch.randn(8, 4, 3, 3), torch.randn(6, 8, 3, 3)
    _, layout = _run(f, *args, on=on, tmp_path=tmp_path, library=_convs(2))
    _check_layout(layout, on, [(2, 8, 9, 8), (2, 6, 4, 6)], transposes=2)


@ON_OFF
def test_grouped_and_depthwise_convolutions(tmp_path, on):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(6, 12, 3, padding=1), nn.BatchNorm2d(12), nn.ReLU(),
                          nn.Conv2d(12, 12, 3, padding=1, groups=12), nn.ReLU(),  # depthwise
                          nn.Conv2d(12, 8, 1, groups=4))
    model = randomize_batchnorm(model).eval()
    with torch.no_grad():
        _, layout = _run(model, torch.randn(3, 6, 10, 10), on=on, tmp_path=tmp_path, library=_convs(3))
    _check_layout(layout, on, [(3, 12, 10, 10), (3, 12, 10, 10), (3, 8, 10, 10)], transposes=2)


@ON_OFF
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_max_and_avg_pooling_with_padding(tmp_path, on, count_include_pad):
    """Padded max pooling, padded average pooling (ceil_mode: a pad, then a sum pool divided by a
    table of window sizes), both between convolutions: all NHWC."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1),
                          nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                          nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=count_include_pad),
                          nn.Conv2d(8, 4, 1))
    with torch.no_grad():
        _, layout = _run(model, torch.randn(2, 3, 20, 20), on=on, tmp_path=tmp_path, library=_convs(3))
    _check_layout(layout, on, [(2, 8, 18, 18), (2, 8, 9, 9), (2, 4, 5, 5)], transposes=2)
    pools = layout[2].count(NHWC_POOL), layout[2].count("linalg.pooling_nchw_max"), layout[2].count("linalg.pooling_nchw_sum")
    assert pools == ((2, 0, 0) if on else (0, 1, 1))


@ON_OFF
def test_convolutions_then_flatten_and_linear(tmp_path, on):
    """The flatten reads NCHW order: the last pool's result is transposed back before it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, stride=2),
                          nn.Flatten(), nn.Linear(4 * 7 * 7, 5))
    with torch.no_grad():
        _, layout = _run(model, torch.randn(2, 3, 16, 16), on=on, tmp_path=tmp_path,
                         library={**_convs(2), "aten.mm.default": 1})
    _check_layout(layout, on, [(2, 8, 16, 16), (2, 4, 7, 7)], transposes=2)


@ON_OFF
def test_a_convolution_result_that_is_also_a_graph_output(tmp_path, on):
    """conv1's result is returned and feeds conv2: it is transposed once, for the output. (conv2's
    result is reduced over H and W, which keeps it as is: the one NHWC value returned is conv1's.)"""
    def f(x, w1, w2):
        y = F.conv2d(x, w1, padding=1)
        return y, F.conv2d(torch.relu(y), w2, padding=1).sum((2, 3))

    torch.manual_seed(0)
    args = torch.randn(2, 3, 10, 10), torch.randn(8, 3, 3, 3), torch.randn(5, 8, 3, 3)
    _, layout = _run(f, *args, on=on, tmp_path=tmp_path, library=_convs(2))
    _check_layout(layout, on, [(2, 8, 10, 10), (2, 5, 10, 10)], transposes=2)


@pytest.mark.parametrize("on", [True, False], ids=["nhwc", "nchw"])
def test_a_function_returning_several_nhwc_values_stays_nchw(tmp_path, on):
    """Two chained convolutions' results both returned, as many NHWC values as convolutions:
    each would go back through a transpose (a training graph's forward returns its activations
    so), and the function stays NCHW."""
    def f(x, w1, w2):
        y = F.conv2d(x, w1, padding=1)
        return y, F.conv2d(torch.relu(y), w2, padding=1)

    torch.manual_seed(0)
    args = torch.randn(2, 3, 10, 10), torch.randn(8, 3, 3, 3), torch.randn(5, 8, 3, 3)
    _, layout = _run(f, *args, on=on, tmp_path=tmp_path, library=_convs(2))
    _check_layout(layout, False, [(2, 8, 10, 10), (2, 5, 10, 10)], transposes=0)


@ON_OFF
def test_float64(tmp_path, on):
    torch.manual_seed(0)
    model = randomize_batchnorm(cnn(stages=2, image=12)).double().eval()
    with torch.no_grad():
        _, layout = _run(model, torch.randn(2, 3, 12, 12, dtype=torch.float64), on=on, tmp_path=tmp_path,
                         library={**_convs(2), "aten.mm.default": 1}, rtol=1e-10, atol=1e-12)
    _check_layout(layout, on, [(2, 16, 12, 12), (2, 32, 6, 6)], transposes=2)
    assert "xf64>" in layout[2] and "xf32>" not in layout[2]


@pytest.mark.parametrize("on", [True, False], ids=["nhwc", "nchw"])
def test_lone_convolution_stays_nchw(tmp_path, on):
    """A convolution in no chain would pay a transpose in and one out: it stays NCHW either way."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 8 * 8, 4)).eval()
    with torch.no_grad():
        _, layout = _run(model, torch.randn(2, 3, 16, 16), on=on, tmp_path=tmp_path,
                         library={**_convs(1), "aten.mm.default": 1})
    _check_layout(layout, False, [(2, 8, 16, 16)], transposes=0)


@ON_OFF
def test_training_step_gradients(tmp_path, on):
    """Forward and backward of the CNN in training mode against eager's gradients and running
    statistics. Its convolutions' activations (3072 elements) are 0.6 times their weights'
    (5040), under the option channels_last_training's 0.7: the forward returns its activations
    for the backward NCHW, so it stays NCHW (see test_a_function_returning_several_nhwc_values_stays_nchw;
    test_training_channels_last forces the other way)."""
    _training_step(tmp_path, {"channels_last": on}, stages=2, image=8)
    shapes, _, text = _layout(tmp_path, graph="forward")
    assert shapes == [(2, 16, 8, 8), (2, 32, 4, 4)] and text.count(NHWC_POOL) == 0


def _training_step(tmp_path, options, stages=3, image=16):
    """The CNN's forward and backward in training mode, compiled with `options`, against eager's
    output, gradients and running statistics; the stats."""
    torch.manual_seed(0)
    model, x = cnn(stages=stages, image=image).train(), torch.randn(2, 3, image, image)
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir", options={**options, "dump_dir": str(tmp_path)})
    out = compiled(x)
    out.square().mean().backward()
    want = ref(x)
    want.square().mean().backward()
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)
    s = assert_all_compiled(library={"aten.mm.default": 3, **_convs(stages), "aten.convolution_backward.default": stages})
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1}
    for (name, p), (_, r) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5, msg=name)
    for (name, b), (_, r) in zip(model.named_buffers(), ref.named_buffers()):
        torch.testing.assert_close(b, r, rtol=1e-4, atol=1e-5, msg=name)  # running statistics
    return s


@pytest.mark.parametrize("ratio", [0.0, float("inf")], ids=["always", "never"])
def test_training_channels_last(tmp_path, ratio):
    """channels_last_training=0: the training forward runs its convolutions NHWC and returns the
    activations it saves NHWC (NCHW tensors with channels-last strides: saved_layouts.py), with
    channels-last copies of the weights the backward reads; the backward takes them as they are
    and runs its convolution gradients NHWC too, no transpose between them. inf: all NCHW."""
    s = _training_step(tmp_path, {"channels_last_training": ratio})
    forward, backward = (_layout(tmp_path, kind)[0] for kind in ("forward", "backward"))
    conv_outputs, grad_inputs = [(2, 16, 16, 16), (2, 32, 8, 8), (2, 64, 4, 4)], [(2, 16, 8, 8), (2, 32, 4, 4)]
    if ratio == 0:
        # saved: activations, and the 2 weights the backward's input gradients read
        assert s["saved_channels_last"] >= len(conv_outputs) + 2
        assert forward[:3] == [_nhwc(t) for t in conv_outputs]
        assert {_nhwc(t) for t in grad_inputs} <= set(backward) and not set(grad_inputs) & set(backward)
    else:
        assert s["saved_channels_last"] == 0
        assert forward[:3] == conv_outputs
        assert set(grad_inputs) <= set(backward) and not {_nhwc(t) for t in grad_inputs} & set(backward)


def test_training_channels_last_copies_no_1x1_weight(tmp_path):
    """A saved 3x3 weight gets its channels-last copy in the forward; a 1x1 weight, whose FCHW
    bytes are channels-last already, none (saved_layouts._conv_weights)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 16, 1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, padding=1)).train()
    ref, x = copy.deepcopy(model), torch.randn(2, 3, 16, 16)
    compiled = torch.compile(model, backend="mlir", options={"channels_last_training": 0.0, "dump_dir": str(tmp_path)})
    compiled(x).square().mean().backward()
    ref(x).square().mean().backward()
    for (name, p), (_, r) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5, msg=name)
    text = "\n".join(open(p).read() for p in glob.glob(os.path.join(str(tmp_path), "*forward*.dynamo.mlir")))
    assert "(tensor<16x16x3x3xf32>) -> tensor<16x3x3x16xf32>" in text  # the 3x3 weight's copy
    assert "-> tensor<16x1x1x8xf32>" not in text


def test_training_channels_last_from_the_compile_cache(tmp_path):
    """A training forward whose saved activations come channels-last, loaded from the compile
    cache the second time (a fresh Dynamo): the cached object still says which results are
    NHWC, so AOTAutograd is told the same strides and the gradients are eager's."""
    import dynamo_mlir

    options = {"channels_last_training": 0.0, "cache_dir": str(tmp_path / "cache")}
    torch.manual_seed(0)
    model, x = cnn(stages=3, image=16).train(), torch.randn(2, 3, 16, 16)
    runs = []
    for _ in range(2):
        torch._dynamo.reset()
        dynamo_mlir.reset()
        m, ref = copy.deepcopy(model), copy.deepcopy(model)
        torch.compile(m, backend="mlir", options=options)(x).square().mean().backward()
        ref(x).square().mean().backward()
        for (name, p), (_, r) in zip(m.named_parameters(), ref.named_parameters()):
            torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5, msg=name)
        runs.append(dynamo_mlir.stats())
    first, second = runs
    assert first["cache"]["misses"] == 2 and second["cache"]["misses"] == 0 and second["cache"]["hits"] == 2
    assert second["saved_channels_last"] == first["saved_channels_last"] >= 5


@ON_OFF
def test_batch_statistics_in_nhwc(tmp_path, on):
    """Training-mode batch norm in an inference graph (no gradients): its per-channel sums over
    N, H, W reduced in NHWC, the running statistics left as eager leaves them."""
    torch.manual_seed(0)
    model, x = cnn(stages=2, image=8).train(), torch.randn(2, 3, 8, 8)
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir", options={"channels_last": on, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), ref(x), rtol=1e-4, atol=1e-5)
    assert_all_compiled(library={**_convs(2), "aten.mm.default": 1})
    for (name, b), (_, r) in zip(model.named_buffers(), ref.named_buffers()):
        torch.testing.assert_close(b, r, rtol=1e-4, atol=1e-5, msg=name)
    _check_layout(_layout(tmp_path), on, [(2, 16, 8, 8), (2, 32, 4, 4)], transposes=2)
    assert _layout(tmp_path)[2].count(NHWC_POOL) == (2 if on else 0)


# ----------------------------------------------------------------------------- the layout attribute
# dynamo.conv2d / dynamo.pool2d {layout = "nhwc"} written directly, run through the cpu stages:
# the library call (library_matmul on) and the generic lowering rules (off: for conv2d the NCHW
# lowering between transposes, for pool2d linalg's NHWC pooling) against torch.


def _run_ir(text, inputs, out_shape, library_matmul):
    """The function's result, and the external functions its object code calls."""
    from torch_mlir import ir

    from dynamo_mlir.codegen import resolve, run_stages
    from dynamo_mlir.codegen.cpu import runtime
    from dynamo_mlir.codegen.signature import Signature, TensorSpec
    from dynamo_mlir.codegen.target import get_target
    from dynamo_mlir.dialects import new_context

    options = resolve({"target": "cpu", "library_matmul": library_matmul})
    signature = Signature("main", tuple(TensorSpec(tuple(t.shape), t.dtype) for t in inputs),
                          (TensorSpec(out_shape, inputs[0].dtype),), lambda _: [out_shape])
    with new_context(), ir.Location.unknown():
        run = run_stages(ir.Module.parse(text), get_target("cpu"), options, graph_name="main")
        return runtime.load(run.artifact, signature, options)(*inputs)[0], set(run.artifact.calls)


def _nhwc_of(t):
    return t.permute(0, 2, 3, 1).contiguous()


@pytest.mark.parametrize("library_matmul", [True, False], ids=["library", "loops"])
def test_nhwc_conv2d_op(library_matmul):
    torch.manual_seed(0)
    x, w = torch.randn(2, 6, 7, 9), torch.randn(4, 3, 3, 3)
    want = F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    text = """
func.func @main(%x: tensor<2x7x9x6xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x9x4xf32> {
  %0 = "dynamo.conv2d"(%x, %w) {dilation = array<i64: 1, 2>, groups = 2 : i64, layout = "nhwc", padding = array<i64: 1, 2>, stride = array<i64: 2, 1>} : (tensor<2x7x9x6xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x9x4xf32>
  return %0 : tensor<2x4x9x4xf32>
}"""
    got, calls = _run_ir(text, [_nhwc_of(x), w], (2, 4, 9, 4), library_matmul)
    torch.testing.assert_close(got, _nhwc_of(want), rtol=1e-4, atol=1e-5)
    assert ("aoti_torch_cpu_convolution" in calls) == library_matmul


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_nhwc_pool2d_op(kind):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 9, 8)
    avg = F.avg_pool2d(x, 3, 2, 1)
    want = {"max": F.max_pool2d(x, 3, 2, 1), "avg": avg, "sum": avg * 9}[kind]
    text = f"""
func.func @main(%x: tensor<2x9x8x5xf32>) -> tensor<2x5x4x5xf32> {{
  %0 = "dynamo.pool2d"(%x) {{dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, kind = "{kind}", layout = "nhwc", padding = array<i64: 1, 1>, stride = array<i64: 2, 2>}} : (tensor<2x9x8x5xf32>) -> tensor<2x5x4x5xf32>
  return %0 : tensor<2x5x4x5xf32>
}}"""
    got, calls = _run_ir(text, [_nhwc_of(x)], (2, 5, 4, 5), library_matmul=True)
    torch.testing.assert_close(got, _nhwc_of(want), rtol=1e-5, atol=1e-5)
    assert not calls & {"aoti_torch_cpu_convolution", "sgemm_"}  # our loops


def test_nhwc_shapes_are_verified():
    """The verifier reads the shapes in the layout's order: an NCHW-shaped result is refused."""
    from torch_mlir import ir

    from dynamo_mlir.dialects import new_context

    text = """
func.func @main(%x: tensor<2x9x8x5xf32>) -> tensor<2x5x4x4xf32> {
  %0 = "dynamo.pool2d"(%x) {dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, kind = "max", layout = "nhwc", padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x9x8x5xf32>) -> tensor<2x5x4x4xf32>
  return %0 : tensor<2x5x4x4xf32>
}"""
    with new_context(), ir.Location.unknown():
        with pytest.raises(ir.MLIRError, match="'dynamo.pool2d' input and result must have equal N, C"):
            ir.Module.parse(text)
        assert ir.Module.parse(text.replace("2x5x4x4", "2x4x4x5")).operation.verify()  # the NHWC result
