"""NaN semantics of elementwise ops: torch.fmax/fmin ignore a NaN operand (C's fmax/fmin, IEEE
maxNum/minNum) where maximum/minimum propagate it. fmax/fmin once shared max/min's lowering."""

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled

NAN, INF = float("nan"), float("inf")
# every pairing of NaN, +-inf, signed zeros, ties and ordinary values
A = [1.0, NAN, NAN, -2.0, 3.0, 0.5, INF, -INF, NAN, 7.0, -0.0]
B = [NAN, 2.0, NAN, -1.0, 3.0, -0.5, NAN, NAN, -INF, INF, 4.0]


@pytest.mark.parametrize("fn", [torch.fmax, torch.fmin, torch.maximum, torch.minimum], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_values_and_gradients(fn, dtype):
    a = torch.tensor(A, dtype=dtype).repeat(3).requires_grad_()
    b = torch.tensor(B, dtype=dtype).repeat(3).requires_grad_()
    weight = torch.arange(a.numel(), dtype=dtype)
    out = torch.compile(fn, backend="mlir")(a, b)
    want = fn(a, b)
    torch.testing.assert_close(out, want, rtol=0, atol=0, equal_nan=True)
    # a NaN-free loss, so that the gradients are the ones fmax/fmin route (not NaN everywhere)
    got_grads = torch.autograd.grad(torch.where(out.isnan(), 0, out * weight).sum(), (a, b))
    want_grads = torch.autograd.grad(torch.where(want.isnan(), 0, want * weight).sum(), (a, b))
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    assert_all_compiled(min_ops=3)
    assert dynamo_mlir.stats()["compiled_ops"][f"aten.{fn.__name__}.default"] == 1


@pytest.mark.parametrize("fn", [torch.fmax, torch.fmin], ids=lambda f: f.__name__)
def test_integer_and_broadcast_operands(fn):
    a, b = torch.randint(-5, 5, (4, 6)), torch.randint(-5, 5, (6,))
    torch.testing.assert_close(torch.compile(fn, backend="mlir", dynamic=False)(a, b), fn(a, b))
    x, y = torch.tensor([[NAN], [1.0]]), torch.tensor([NAN, -1.0, 2.0])
    torch.testing.assert_close(torch.compile(fn, backend="mlir", dynamic=False)(x, y), fn(x, y), equal_nan=True)
    assert_all_compiled(min_ops=2)
