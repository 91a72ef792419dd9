"""dtypes through the dialect and lowering: PyTorch's promotion, half types computed in f32,
autocast bf16 around forward + loss in a training step; a dtype change recompiles (guards)."""

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.tools.models import mlp
from helpers import assert_all_compiled

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool]
TOL = {torch.float16: 1e-3, torch.bfloat16: 1e-2}


def mixed(a, b):
    return (a * b + a).sum(dim=1), torch.maximum(a, b), a > b, torch.where(a > b, a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_matches_eager_with_no_fallback(dtype):
    torch.manual_seed(0)
    a, b = (torch.randn(4, 8) * 4).to(dtype), (torch.randn(4, 8) * 4).to(dtype)
    got, want = torch.compile(mixed, backend="mlir")(a, b), mixed(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        tol = TOL.get(dtype, 1e-6)
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)
    assert_all_compiled()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_float_network_in_dtype(dtype):
    def f(x, w):
        return torch.softmax(torch.relu(x @ w.T), dim=-1)

    torch.manual_seed(0)
    x, w = torch.randn(4, 8, dtype=dtype), torch.randn(6, 8, dtype=dtype)
    tol = TOL.get(dtype, 1e-6)
    torch.testing.assert_close(torch.compile(f, backend="mlir")(x, w), f(x, w), rtol=tol, atol=tol)
    # the matmul runs in MKL (half types: on float32 copies, as the frontend computes them)
    assert_all_compiled(library={"aten.mm.default": 1})


def test_int_promotion_to_float():
    f = lambda i, x: i * x + i  # noqa: E731
    i, x = torch.arange(6, dtype=torch.int32).reshape(2, 3), torch.randn(2, 3, dtype=torch.float64)
    got = torch.compile(f, backend="mlir")(i, x)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, f(i, x))
    assert_all_compiled()


def test_dtype_change_recompiles_and_stays_correct():
    f = lambda x: torch.tanh(x) * 3 + 1  # noqa: E731
    compiled = torch.compile(f, backend="mlir")
    x = torch.randn(5, 5)
    torch.testing.assert_close(compiled(x), f(x))
    xb = x.to(torch.bfloat16)
    got = compiled(xb)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, f(xb), rtol=1e-2, atol=1e-2)
    assert dynamo_mlir.stats()["graphs"] == 2
    assert_all_compiled()


def test_autocast_bf16_training_step():
    def setup():
        torch.manual_seed(0)
        model = mlp()
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = setup(), torch.compile(setup(), backend="mlir")
    torch.manual_seed(1)
    for _ in range(5):
        x, y = torch.randn(16, 10), torch.randn(16, 1)
        want, got = eager(x, y).item(), compiled(x, y).item()
        assert abs(got - want) <= 1e-2 * abs(want)
    s = assert_all_compiled(library={"aten.mm.default": 8})  # 3 forward, 5 backward, in MKL
    assert s["graphs_by_kind"]["backward"] == 1


# grad, self, threshold: torch-mlir's ThresholdBackward{1d,2d}MixedModule (an int64 grad with a
# float self is float32 in eager), a half grad, and an integer threshold eager truncates (-0.5 -> 0).
THRESHOLD_BACKWARD = [
    (torch.float32, torch.int64, 1),
    (torch.int64, torch.float32, 0.5),
    (torch.bfloat16, torch.float32, 0.1),
    (torch.int64, torch.int64, -0.5),
]


@pytest.mark.parametrize("grad_dtype,self_dtype,threshold", THRESHOLD_BACKWARD, ids=str)
def test_threshold_backward_promotes_as_eager(grad_dtype, self_dtype, threshold):
    torch.manual_seed(0)
    grad = (torch.randn(4, 5, 6) * 10).to(grad_dtype)
    self = (torch.randn(4, 5, 6) * 2).round().to(self_dtype)  # many exact ties with the threshold
    fn = lambda g, s: torch.ops.aten.threshold_backward(g, s, threshold)  # noqa: E731
    got, want = torch.compile(fn, backend="mlir", dynamic=False)(grad, self), fn(grad, self)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert_all_compiled()
