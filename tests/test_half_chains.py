"""Half-precision chains: float ops on bf16/f16 tensors compute in float32 and round once, where
the chain's result is stored (ImportContext.rounded), as a fused kernel (and eager's CUDA
kernels, one op at a time) does; ops that one rounding can move by a whole unit read the rounded
value, as eager does."""

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, read_stage

HALF = [torch.bfloat16, torch.float16]
ULP = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}


def _compiled(fn, *inputs, **options):
    torch._dynamo.reset()
    dynamo_mlir.reset()
    out = torch.compile(fn, backend="mlir", options=options or None)(*inputs)
    assert_all_compiled()
    return out


def _rounded_once(fn, *inputs):
    return fn(*[t.float() for t in inputs]).to(inputs[0].dtype)


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "f16"])
def test_addcdiv_rounds_once(dtype):
    """Dynamo hands us addcdiv(value=v) as a + v * (b / c): eager's kernel rounds once, and so must
    we (rounding b / c and the product first was 0.06 off in bf16)."""
    torch.manual_seed(0)
    a, b, c = (torch.randn(64, 64).to(dtype) for _ in range(3))
    c = c.abs() + 0.5
    fn = lambda a, b, c: torch.addcdiv(a, b, c, value=0.37)  # noqa: E731
    got = _compiled(fn, a, b, c)
    # the same float32 operations in the same order, rounded once: equal to the bit
    torch.testing.assert_close(got, _rounded_once(fn, a, b, c), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "f16"])
def test_softmax_backward_chain_rounds_once(dtype):
    """y * (g - sum(g * y)): torch's decomposition computes it in float32 explicitly; the result,
    which cancels near zero, is the float32 computation rounded once (eager's CUDA kernel's)."""
    torch.manual_seed(0)
    y = torch.softmax(torch.randn(8, 33), -1).to(dtype)
    g = torch.randn(8, 33).to(dtype)
    fn = lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, y.dtype)  # noqa: E731
    got = _compiled(fn, g, y)
    want = _rounded_once(fn, g, y).float()
    scale = want.abs().max().item()
    torch.testing.assert_close(got.float(), want, rtol=ULP[dtype], atol=1e-5 * scale)


@pytest.mark.parametrize("dtype", HALF, ids=["bf16", "f16"])
def test_rounding_ops_read_the_rounded_value(dtype):
    """floor(a * b) floors eager's rounded product: a float32 product just below an integer that
    rounds up to it must floor to that integer, as in eager."""
    a = torch.tensor([3.0, 7.0, 0.1, 2.5, 255.0]).to(dtype)
    b = (torch.tensor([1.0, 3.0, 10.0, 0.4, 1.0]) - 1e-3).to(dtype)
    fn = lambda a, b: torch.floor(a * b) + (a * b == torch.round(a * b)).to(a.dtype)  # noqa: E731
    got = _compiled(fn, a, b)
    torch.testing.assert_close(got, fn(a, b), rtol=0, atol=0)


def test_explicit_casts_still_round(tmp_path):
    """A user's own .to(bfloat16) is a rounding the program asks for: kept, not elided."""
    x = torch.tensor([1.0 + 2.0**-9, 3.14159, -2.71828, 1e-3])
    fn = lambda x: (x * 3).to(torch.bfloat16).float() * 3  # noqa: E731
    got = _compiled(fn, x, dump_dir=str(tmp_path))
    torch.testing.assert_close(got, fn(x), rtol=0, atol=0)


def test_a_chain_has_one_rounding_in_the_ir(tmp_path):
    """The IR of a three-op bf16 chain truncates to bf16 once (the stored result) and extends
    each input once: no round trip between the ops."""
    torch.manual_seed(0)
    a, b = torch.randn(16).bfloat16(), torch.randn(16).bfloat16()
    fn = lambda a, b: torch.exp(a * b) - a  # noqa: E731
    got = _compiled(fn, a, b, dump_dir=str(tmp_path))
    torch.testing.assert_close(got, _rounded_once(fn, a, b), rtol=0, atol=0)
    linalg = read_stage(str(tmp_path), "linalg")
    assert linalg.count("arith.truncf") == 1, linalg
