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
