"""The cpu target reads a torch convolution's result in place instead of copying it into a buffer
of its own, where the result is laid out as that buffer would be (codegen/cpu/adopted_results.py)."""

import copy

import pytest
import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

import dynamo_mlir
from dynamo_mlir.codegen.cpu import adopted_results
from real_models import randomize_batchnorm


class Chain(nn.Module):
    """Three convolutions with batch norm and relu between them, and a head: no convolution's
    result is the graph's."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 4, 1), nn.ReLU())

    def forward(self, x):
        return self.body(x).mean((2, 3))


def _copies_per_call(f, x, calls=3) -> float:
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(calls):
            f(x)
    return sum(e.count for e in p.key_averages() if e.key == "aten::copy_") / calls


def _compiled_chain(channels_last: bool):
    """A fresh compile of Chain, checked against eager over several calls (each reads its own
    results, which are freed at its return); (aten::copy_ calls a call, the model, its input)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    m, x = randomize_batchnorm(Chain()).eval(), torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        f = torch.compile(m, backend="mlir", options={"cache": False, "channels_last": channels_last})
        for _ in range(3):
            torch.testing.assert_close(f(x), m(x), rtol=1e-4, atol=1e-5)
        return _copies_per_call(f, x)


def _never_adopted(monkeypatch):
    monkeypatch.setattr(adopted_results, "may_be_returned", lambda value: True)


@pytest.mark.parametrize("channels_last", [False, True])
def test_convolution_results_are_read_in_place(channels_last, monkeypatch):
    """Against the same graph compiled to copy every result: one aten::copy_ fewer a call per
    convolution (whatever torch copies itself, a weight made channels-last, is in both)."""
    read_in_place = _compiled_chain(channels_last)
    assert dynamo_mlir.stats()["library_ops"] == {"aten.convolution.default": 3}
    _never_adopted(monkeypatch)
    copied = _compiled_chain(channels_last)
    assert copied - read_in_place == 3, (copied, read_in_place)


def test_a_result_laid_out_otherwise_is_copied(monkeypatch):
    """The run-time check: a result whose strides are not our buffer's goes through the copy (the
    check is made to fail here by expecting other strides)."""
    monkeypatch.setattr(adopted_results, "dense_strides", lambda shape: [7] * len(shape))
    checked = _compiled_chain(False)
    _never_adopted(monkeypatch)
    assert checked == _compiled_chain(False)


def test_a_returned_result_is_copied_into_the_callers_buffer():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        f = torch.compile(lambda t: (conv(t), conv(t).relu()), backend="mlir", options={"cache": False})
        for _ in range(2):
            got = f(x)
            torch.testing.assert_close(got[0], conv(x))
            torch.testing.assert_close(got[1], conv(x).relu())


def test_training_step_input_gradients_read_in_place(monkeypatch):
    """The backward's input gradients (intermediates: each feeds the next convolution's
    gradient) are read in place too; the weight gradients are the graph's results, copied. The
    gradients match eager's, and there are fewer copies than with every result copied."""

    def step_copies():
        torch._dynamo.reset()
        torch.manual_seed(0)
        m, x = randomize_batchnorm(Chain()).train(), torch.randn(2, 3, 16, 16)
        ref = copy.deepcopy(m)
        f = torch.compile(m, backend="mlir", options={"cache": False})
        for _ in range(2):
            m.zero_grad(), ref.zero_grad()
            f(x).sum().backward()
            ref(x).sum().backward()
            for p, q in zip(m.parameters(), ref.parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4)
        with profile(activities=[ProfilerActivity.CPU]) as p:
            f(x).sum().backward()
        return sum(e.count for e in p.key_averages() if e.key == "aten::copy_")

    read_in_place = step_copies()
    _never_adopted(monkeypatch)
    assert step_copies() > read_in_place
