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

    def __init__(self, bias: bool = True):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=bias), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, padding=1, bias=bias), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 4, 1, bias=bias), nn.ReLU())

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
    monkeypatch.setattr(adopted_results, "adoptable", lambda value, handing: False)


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


def _returned_conv(hand_over: bool):
    """A convolution whose result the graph returns itself (and reads: relu), compiled fresh and
    checked against eager over three calls (results of one call kept while the next runs);
    (aten::copy_ calls a call, the last call's results)."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, bias=False)
    x = torch.randn(2, 3, 8, 8)

    def both(t):
        y = conv(t)
        return y, y.relu()

    with torch.no_grad():
        f = torch.compile(both, backend="mlir", options={"cache": False, "hand_over_results": hand_over})
        kept = [f(x) for _ in range(3)]
        for got in kept:
            torch.testing.assert_close(got[0], conv(x))
            torch.testing.assert_close(got[1], conv(x).relu())
        assert kept[0][0].data_ptr() != kept[1][0].data_ptr()
        assert dynamo_mlir.stats()["library_ops"] == {"aten.convolution.default": 1}
        return _copies_per_call(f, x), kept[-1]


def test_a_returned_result_is_handed_over():
    """handed_results.py: the caller takes torch's tensor itself (no copy); without it, it is
    copied into the caller's buffer."""
    handed, (y, _) = _returned_conv(True)
    copied, (z, _) = _returned_conv(False)
    assert (handed, copied) == (0, 1)
    assert y.stride() == z.stride() == (144, 36, 6, 1)


def test_a_handed_result_gets_the_promised_strides(monkeypatch):
    """A handed-over tensor whose strides are not those the caller was told (forced here by
    promising channels-last for it) is copied into a tensor that has them."""
    from dynamo_mlir.codegen.cpu import runtime
    monkeypatch.setattr(runtime, "output_strides", lambda signature, nhwc: [
        (runtime._channels_last_strides if k == 0 else runtime._contiguous_strides)(spec.shape)
        for k, spec in enumerate(signature.outputs)])
    copies, (y, r) = _returned_conv(True)
    assert copies == 1
    assert y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()


def _step_copies(**options) -> int:
    """aten::copy_ calls of one compiled training step of Chain, after two steps whose gradients
    match eager's."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    m, x = randomize_batchnorm(Chain(bias=False)).train(), torch.randn(2, 3, 16, 16)
    ref = copy.deepcopy(m)
    f = torch.compile(m, backend="mlir", options={"cache": False, **options})
    for _ in range(2):
        m.zero_grad(), ref.zero_grad()
        f(x).sum().backward()
        ref(x).sum().backward()
        for p, q in zip(m.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-3, atol=1e-4)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        f(x).sum().backward()
    return sum(e.count for e in p.key_averages() if e.key == "aten::copy_")


def test_training_step_results_read_in_place_and_handed_over(monkeypatch):
    """The backward's input gradients (intermediates: each feeds the next convolution's
    gradient) are read in place; the forward's saved convolution results (no bias: the
    convolution's own) and the weight gradients, the graphs' results, are handed over
    (handed_results.py; 3x3 weight gradients come channels-last from torch, and the runtime
    copies them into the promised layout, so only the 1x1 one saves a copy there). Fewer copies
    each way; gradients as eager's."""
    handed = _step_copies()
    copied = _step_copies(hand_over_results=False)
    _never_adopted(monkeypatch)
    never = _step_copies(hand_over_results=False)
    assert never > copied > handed, (never, copied, handed)
    # the two convolution results batch norm saves, the 1x1 weight gradient (the last
    # convolution's result is not saved: relu's backward reads relu's)
    assert copied - handed == 3, (copied, handed)
