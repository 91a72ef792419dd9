"""F.linear_cross_entropy: its chunked custom ops compile as cross_entropy(linear(x))."""

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled

if not hasattr(F, "linear_cross_entropy"):
    pytest.skip("this torch has no F.linear_cross_entropy", allow_module_level=True)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_cross_entropy_compiles_and_matches_eager(reduction, with_bias):
    x, w, t = torch.randn(8, 3), torch.randn(5, 3), torch.randint(0, 5, (8,))
    b = torch.randn(5) if with_bias else None
    fn = lambda x, w, t, b: F.linear_cross_entropy(x, w, t, linear_bias=b, reduction=reduction)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x, w, t, b), fn(x, w, t, b))
    assert_all_compiled(library={"aten.mm.default": 1})  # the linear layer: MKL's sgemm_


def test_linear_cross_entropy_gradients_match_eager():
    x = torch.randn(8, 3, requires_grad=True)
    w, t = torch.randn(5, 3), torch.randint(0, 5, (8,))
    fn = lambda x: F.linear_cross_entropy(x, w, t)
    loss = torch.compile(fn, backend="mlir")(x)
    (grad,) = torch.autograd.grad(loss, x)
    x2 = x.detach().clone().requires_grad_()
    expected = fn(x2)
    expected.backward()
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grad, x2.grad)
    assert_all_compiled(library={"aten.mm.default": 2})  # forward, and the input's gradient
