"""Max-pool backward with overlapping windows: an input element that is the maximum of several
windows (its index repeats in the saved indices) receives the SUM of their gradients, as eager's
scatter-add gives it; ties (many equal values) make such repeats common."""

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from helpers import assert_all_compiled

CASES = {
    "2d_k3_s1": (F.max_pool2d, [2, 3, 9, 9], dict(kernel_size=3, stride=1)),
    "2d_k3_s2": (F.max_pool2d, [2, 3, 11, 11], dict(kernel_size=3, stride=2)),
    "2d_k3_s2_p1_ceil": (F.max_pool2d, [2, 3, 10, 10], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "2d_k3_s1_dilation2": (F.max_pool2d, [2, 3, 10, 10], dict(kernel_size=3, stride=1, dilation=2)),
    "1d_k4_s1": (F.max_pool1d, [2, 3, 30], dict(kernel_size=4, stride=1)),
    "3d_k3_s2": (F.max_pool3d, [1, 2, 7, 7, 7], dict(kernel_size=3, stride=2)),
}


@pytest.mark.parametrize("values", ["ties", "randn"])
@pytest.mark.parametrize("name", CASES)
def test_gradient_accumulates_over_overlapping_windows(name, values):
    pool, shape, kwargs = CASES[name]
    torch.manual_seed(0)
    x = torch.randint(0, 3, shape).float() if values == "ties" else torch.randn(shape)
    x.requires_grad_()
    fn = lambda t: pool(t, **kwargs)  # noqa: E731
    out = torch.compile(fn, backend="mlir")(x)
    weight = torch.randn(out.shape)
    got, = torch.autograd.grad((out * weight).sum(), x)
    want, = torch.autograd.grad((fn(x) * weight).sum(), x)
    torch.testing.assert_close(out, fn(x), rtol=0, atol=0)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert_all_compiled(min_ops=2)
    spatial = len(shape) - 2 if pool is not F.max_pool1d else 2  # max_pool1d runs as a 2-d pool
    backward = dynamo_mlir.stats()["compiled_ops"].get(f"aten.max_pool{spatial}d_with_indices_backward.default")
    assert backward == 1, dynamo_mlir.stats()["compiled_ops"]
    if values == "ties":  # the case this guards: some input elements are the max of several windows
        _, indices = pool(x.detach(), **kwargs, return_indices=True)
        assert _most_repeated(indices) > 1


def _most_repeated(indices) -> int:
    """The most windows of one plane that name the same input element."""
    return max(int(row.unique(return_counts=True)[1].max()) for row in indices.flatten(2).flatten(0, 1))
