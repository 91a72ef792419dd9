"""options={"freeze": True}: an inference graph's parameters and buffers as constants, a
convolution's batch norm folded into it, ops of constants run at compile time (frontend/freezing.py)."""

import copy

import pytest
import torch
import torch.nn as nn

import dynamo_mlir
from helpers import assert_as_accurate_as_eager, assert_fallbacks, read_stage
from real_models import randomize_batchnorm, resnet50

FREEZE = {"freeze": True, "cache": False}


class ConvBlock(nn.Module):
    """conv-bn-relu, then conv(with bias)-bn plus the first result, relu: ResNet's block."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + y)


def _block():
    torch.manual_seed(0)
    return randomize_batchnorm(ConvBlock()).eval()


def test_conv_batch_norm_folds_into_the_convolution(tmp_path):
    m, x = _block(), torch.randn(2, 3, 16, 16)
    x0 = x.clone()
    with torch.no_grad():
        got = torch.compile(m, backend="mlir", options={**FREEZE, "dump_dir": str(tmp_path)})(x)
        want = m(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert torch.equal(x, x0)
    s = assert_fallbacks({}, library={"aten.convolution.default": 2})
    assert s["inputs_frozen"] == 2 + 1 + 2 * 4  # two conv weights, a conv bias, two batch norms' four
    assert s["frozen_folds"] == {"convolution + batch norm": 2}
    assert "batch_norm" not in str(s["compiled_ops"])
    aten = read_stage(str(tmp_path), "aten")
    assert "batch_norm" not in aten and aten.count("aten.convolution.default(") == 2
    # Each convolution's folded weight and bias, then x: the graph's only input of its own.
    assert "frozen_3" in aten and "frozen_4" not in aten
    assert "parameter(s) and buffer(s) frozen as constants (2 convolution + batch norm folded)" in dynamo_mlir.explain()


def test_without_freeze_the_batch_norm_is_compiled_and_reads_the_weights(tmp_path):
    m, x = _block(), torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options={"cache": False, "dump_dir": str(tmp_path)})
        f(x)
        m.b2.running_var.mul_(4)  # not frozen: the next call reads the new statistics
        torch.testing.assert_close(f(x), m(x), rtol=1e-4, atol=1e-4)
    assert dynamo_mlir.stats()["inputs_frozen"] == 0
    assert "_native_batch_norm_legit_no_training" in read_stage(str(tmp_path), "aten")


def test_a_frozen_graph_keeps_the_weights_it_compiled_with_until_reset():
    """What docs/architecture.md says: a weight changed after compiling is not seen."""
    m, x = _block(), torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        before = m(x)
        f = torch.compile(m, backend="mlir", options=FREEZE)
        f(x)
        m.c1.weight.mul_(2)
        m.b2.running_mean.add_(1)
        torch.testing.assert_close(f(x), before, rtol=1e-4, atol=1e-4)
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(m, backend="mlir", options=FREEZE)(x), m(x), rtol=1e-4, atol=1e-4)
    assert not torch.allclose(before, m(x))


def test_a_call_with_other_weight_tensors_runs_eagerly_not_with_the_frozen_ones():
    """Dynamo does not guard an inlined module's parameter identity: a replaced parameter, or a
    function compiled once and called with another model, reaches the frozen graph. Each such
    call runs the unfrozen graph eagerly with the call's tensors, said in stats()."""
    a, b, x = _block(), _block(), torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        b.c1.weight.mul_(-1)
        f = torch.compile(lambda m, x: m(x), backend="mlir", options=FREEZE)
        torch.testing.assert_close(f(a, x), a(x), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(f(b, x), b(x), rtol=1e-4, atol=1e-4)
        a.c2.weight = nn.Parameter(a.c2.weight * 2)
        torch.testing.assert_close(f(a, x), a(x), rtol=1e-4, atol=1e-4)
    s = dynamo_mlir.stats()
    frozen_graphs = sum(1 for g in dynamo_mlir.frontend.stats.REGISTRY.graphs if g.frozen)
    # Each of the two calls with other tensors either met a graph Dynamo compiled for them, or
    # the frozen graph's check, which ran it eagerly.
    assert frozen_graphs + s["runtime_fallback_calls"] == 3, dynamo_mlir.explain()
    assert s["runtime_fallback_calls"] >= 1, dynamo_mlir.explain()
    assert "called with other parameter or buffer tensors" in dynamo_mlir.explain()


class Counting(nn.Module):
    """A buffer the forward mutates (stays an input), a view of one it returns (stays an input),
    a weight repeated (an op whose result outgrows its input: left to the compiled code), and a
    bias scaled (an op of constants alone: run at compile time)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 8))
        self.b = nn.Parameter(torch.randn(8))
        self.register_buffer("calls", torch.zeros(()))
        self.register_buffer("scale", torch.tensor(3.0))

    def forward(self, x):
        self.calls.add_(1)
        y = x @ self.w.repeat(1, 2).t() + self.b[:2].repeat(2) * 2
        return y, self.scale.view(1)


def test_mutated_and_returned_buffers_stay_inputs_and_growing_ops_stay_in_the_graph():
    torch.manual_seed(0)
    m, x = Counting(), torch.randn(3, 16)
    ref = copy.deepcopy(m)
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options=FREEZE)
        for _ in range(2):
            (got, scale), (want, want_scale) = f(x), ref(x)
            torch.testing.assert_close(got, want)
    assert m.calls.item() == 2 == ref.calls.item()
    assert scale.data_ptr() == m.scale.data_ptr() and torch.equal(scale, want_scale)  # a view of it, as eager's
    s = dynamo_mlir.stats()
    assert s["inputs_frozen"] == 2  # w and b
    graph = dynamo_mlir.frontend.stats.REGISTRY.graphs[-1]
    assert graph.frozen.kept == {"mutated by the graph": 1, "returned or aliased by an output": 1}
    # b[:2] * 2 ran at compile time (a slice and a multiply of one constant); both repeats stay.
    assert s["frozen_folds"]["constant ops"] >= 1
    assert s["compiled_ops"].get("aten.repeat.default", 0) + s["compiled_ops"].get("aten.expand.default", 0) \
        + s["compiled_ops"].get("aten.clone.default", 0) >= 1, dynamo_mlir.explain()


def test_training_graphs_are_not_frozen():
    m, x = _block().train(), torch.randn(2, 3, 16, 16)
    ref = copy.deepcopy(m)
    torch.compile(m, backend="mlir", options=FREEZE)(x).sum().backward()
    ref(x).sum().backward()
    assert dynamo_mlir.stats()["inputs_frozen"] == 0
    for (name, p), q in zip(m.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-3, msg=name)
    torch.testing.assert_close(m.b1.running_mean, ref.b1.running_mean)


def test_autocast_weight_casts_run_at_compile_time(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 16)).eval()
    x = torch.randn(8, 32)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        got = torch.compile(m, backend="mlir", options={**FREEZE, "dump_dir": str(tmp_path)})(x)
        want = m(x)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
    s = dynamo_mlir.stats()
    assert s["inputs_frozen"] == 4 and s["frozen_folds"]["constant ops"] >= 4  # four casts to bfloat16
    aten = read_stage(str(tmp_path), "aten")
    assert aten.count("frozen_") > 4 and "_to_copy.default(frozen_" not in aten, aten  # no weight cast is left


def test_symbolic_sizes_with_frozen_weights():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 4)).eval()
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options=FREEZE, dynamic=True)
        for rows in (3, 5, 9):
            x = torch.randn(rows, 16)
            torch.testing.assert_close(f(x), m(x), rtol=1e-5, atol=1e-5)
    s = assert_fallbacks({}, min_ops=4, library={"aten.mm.default": 2})
    assert s["graphs"] == 1 and s["inputs_frozen"] == 6


def test_resnet50_frozen_is_as_accurate_as_eager():
    """ResNet-50's layout (53 convolutions, each followed by a batch norm with random statistics),
    judged against a float64 copy of the model as PyTorch's benchmark suite does."""
    torch.manual_seed(0)
    m = resnet50().eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        got = torch.compile(m, backend="mlir", options=FREEZE)(pixel_values=x).logits
        eager = m(pixel_values=x).logits
        float64 = copy.deepcopy(m).double()(pixel_values=x.double()).logits
    assert_as_accurate_as_eager(got, eager, float64)
    s = dynamo_mlir.stats()
    assert s["frozen_folds"]["convolution + batch norm"] == 53 and s["ops_fallback"] == 0
    assert "aten._native_batch_norm_legit_no_training.default" not in s["compiled_ops"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_frozen_conv_block_on_cuda():
    m, x = _block().cuda(), torch.randn(4, 3, 32, 32, device="cuda")
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options=FREEZE)
        got = [f(x).clone() for _ in range(3)]  # the first call, then replays
        want = m(x)
    for g in got:
        torch.testing.assert_close(g, want, rtol=1e-2, atol=1e-2)  # cuDNN may use TF32, as eager may
    s = assert_fallbacks({}, library={"aten.convolution.default": 2})
    assert s["frozen_folds"] == {"convolution + batch norm": 2}
