"""Mutation, views and odd inputs: in-place updates of inputs and buffers, aliasing outputs,
non-contiguous and channels-last inputs, 0-d and zero-size tensors, Python scalars."""

import copy

import torch

import dynamo_mlir
from helpers import assert_all_compiled


def _check(fn, *args, **kwargs):
    eager_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    got = torch.compile(fn, backend="mlir")(*args, **kwargs)
    want = fn(*eager_args, **kwargs)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for a, e in zip(args, eager_args):  # in-place effects on inputs are the same too
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, e)
    assert_all_compiled()
    return got


def test_in_place_update_of_an_input():
    def f(x, y):
        x.mul_(2).add_(y)
        return x.sum()

    _check(f, torch.randn(4, 4), torch.randn(4, 4))
    assert dynamo_mlir.stats()["ops_compiled"] > 0


def test_batch_norm_running_stats_in_train_mode():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(4)
    ref = copy.deepcopy(bn)
    x = torch.randn(3, 4, 5, 5)
    torch.testing.assert_close(torch.compile(bn, backend="mlir")(x), ref(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)
    assert_all_compiled()


def test_views_and_aliasing_outputs():
    def f(x):
        y = x.t()
        return y, y[1:], (y * 2).reshape(-1)

    _check(f, torch.randn(3, 4))


def test_non_contiguous_and_channels_last_inputs():
    x = torch.randn(6, 8)[:, ::2]
    _check(lambda a: torch.exp(a) + 1, x)
    c = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last)
    _check(lambda a: torch.relu(a).sum(dim=(2, 3)), c)


def test_zero_dim_zero_size_and_python_scalars():
    _check(lambda a, s: a * s + 1.5, torch.tensor(3.0), 2)
    _check(lambda a: (a + 1).sum(dim=0), torch.randn(0, 4))
    _check(lambda a, b: a + b, torch.randn(3), torch.tensor(2.0))


def test_copies_are_fresh_tensors():
    """clone/_to_copy import as their source value; the output is still a tensor of its own,
    as in eager (one returned as its input made an in-place update of the copy write the input).
    Views (detach, view) still share the input's storage."""
    x = torch.randn(4)
    saved = x.clone()
    copies = torch.compile(lambda x: (x.clone(), x.to(torch.float32, copy=True)), backend="mlir")(x)
    for c in copies:
        assert c.data_ptr() != x.data_ptr()
        c.add_(1)
    assert torch.equal(x, saved)
    torch._dynamo.reset()
    e, c = torch.compile(lambda x: (lambda e: (e, e.clone()))(torch.exp(x)), backend="mlir")(x)
    assert e.data_ptr() != c.data_ptr() and torch.equal(e, c)
    torch._dynamo.reset()
    d, v = torch.compile(lambda x: (x.detach(), x.view(2, 2)), backend="mlir")(x)
    assert d.data_ptr() == x.data_ptr() and v.data_ptr() == x.data_ptr()
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["compiled_ops"].get("aten.exp.default") == 1, dynamo_mlir.explain()
