"""Results in the layout eager gives them (frontend/output_layouts.py): a result eager returns
dense but permuted (channels-last, transposed) comes back with eager's strides, computed in that
order by our code, not contiguous."""

import pytest
import torch
import torch.nn as nn

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import assert_all_compiled

on_gpu = pytest.mark.skipif(not get_target("cuda").available(), reason="needs a CUDA GPU and cuda-bindings")


def permuted_results(x, y):
    a = (x * 2).contiguous(memory_format=torch.channels_last)
    b = (x + 1).transpose(1, 2)
    c = torch.relu(x).permute(0, 2, 3, 1)
    y.add_(1)
    return a, b, c, a.sum()


def _assert_like_eager(got, want):
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride(), (g.stride(), w.stride())


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[on_gpu, pytest.mark.cuda])])
def test_permuted_results_come_back_with_eager_strides(device):
    dynamo_mlir.reset()
    torch._dynamo.reset()
    x, y = torch.randn(2, 3, 4, 5, device=device), torch.randn(3, device=device)
    y_eager, y_ours = y.clone(), y.clone()
    want = permuted_results(x, y_eager)
    got = torch.compile(permuted_results, backend="mlir")(x, y_ours)
    _assert_like_eager(got, want)
    torch.testing.assert_close(y_ours, y_eager)  # the mutated input too
    s = assert_all_compiled(min_ops=6)
    assert s["outputs_in_eager_layout"] == 3, dynamo_mlir.explain()
    assert "3 result(s) computed in eager's layout" in dynamo_mlir.explain()


def test_a_contiguous_or_sliced_result_is_left_as_it_was():
    """Only dense permuted results change: a contiguous one, and a slice of an intermediate
    (eager: a view into a larger buffer, which no region returns), stay contiguous."""
    dynamo_mlir.reset()
    torch._dynamo.reset()
    f = lambda x: ((x * 2)[:, 1:], x.exp())  # noqa: E731
    x = torch.randn(4, 6)
    got = torch.compile(f, backend="mlir")(x)
    for g, w in zip(got, f(x)):
        torch.testing.assert_close(g, w)
        assert g.is_contiguous()
    assert dynamo_mlir.stats()["outputs_in_eager_layout"] == 0


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_a_channels_last_model_returns_channels_last_feature_maps(train):
    """A model and input made channels-last (the usual recipe for CNN speed): eager's feature
    map is channels-last, so is ours; in training the gradients match eager's too."""
    dynamo_mlir.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = ConvBlock().to(memory_format=torch.channels_last).train(train)
    ours_model = ConvBlock().to(memory_format=torch.channels_last).train(train)
    ours_model.load_state_dict(model.state_dict())
    x = torch.randn(2, 8, 10, 10).contiguous(memory_format=torch.channels_last)
    with torch.set_grad_enabled(train):
        want = model(x)
        got = torch.compile(ours_model, backend="mlir")(x)
    assert want.is_contiguous(memory_format=torch.channels_last)
    _assert_like_eager([got], [want])
    if train:
        want.square().sum().backward()
        got.square().sum().backward()
        for p, q in zip(model.parameters(), ours_model.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-4)
    assert dynamo_mlir.stats()["outputs_in_eager_layout"] >= 1, dynamo_mlir.explain()
    assert dynamo_mlir.stats()["ops_compiled"] > 0


ALIASES = {
    # (function, input): results that are views of an input the function mutates
    "flatten_of_channels_last_multiplied_in_place": (lambda x: torch.flatten(x, 2, 3).mul_(3),
                                                     lambda: torch.randn(2, 7, 1, 5).to(memory_format=torch.channels_last)),
    "transpose_after_add_": (lambda x: x.add_(1).t(), lambda: torch.randn(4, 6)),
    "slice_after_mul_": (lambda x: (x.mul_(2), x[1:])[1], lambda: torch.randn(4, 6, 2, 3)),
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", ALIASES)
def test_a_view_of_a_mutated_input_is_eagers_view(name, dynamic):
    """AOTAutograd regenerates a result that is a view of an input from the input after the
    call; with symbolic sizes it cannot replay the views and takes the size and strides of the
    tensor the graph returned, which must then be eager's (a contiguous one read the NHWC input
    as NCHW: tests/fuzz regression test_a_view_of_a_mutated_channels_last_input_with_dynamic_dims)."""
    fn, make = ALIASES[name]
    dynamo_mlir.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    x_eager = make()
    x_ours = x_eager.clone(memory_format=torch.preserve_format)
    want = fn(x_eager)
    got = torch.compile(fn, backend="mlir", dynamic=dynamic)(x_ours)
    _assert_like_eager([got, x_ours], [want, x_eager])
    assert got.data_ptr() - x_ours.data_ptr() == want.data_ptr() - x_eager.data_ptr()  # a view, as eager's
    assert_all_compiled(min_ops=1)


def test_a_permuted_result_of_symbolic_sizes_keeps_eagers_strides():
    dynamo_mlir.reset()
    torch._dynamo.reset()
    f = lambda x: torch.sigmoid(x) * 2  # noqa: E731  (eager keeps a channels-last input's layout)
    compiled = torch.compile(f, backend="mlir", dynamic=True)
    for n in (3, 5, 8):
        x = torch.randn(2, 4, n, n + 1).contiguous(memory_format=torch.channels_last)
        _assert_like_eager([compiled(x)], [f(x)])
    s = assert_all_compiled(min_ops=2)
    assert s["graphs"] <= 2 and s["outputs_in_eager_layout"] == s["graphs"], dynamo_mlir.explain()
