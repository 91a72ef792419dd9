"""What makes the transformer models' forward fast on the cpu target, each checked against eager
and by what was compiled: small integer powers as multiplies (GPT-2's gelu_new), ..."""

import pytest
import torch

from helpers import assert_all_compiled, assert_close_to_float32, read_stage


@pytest.mark.parametrize("exponent", [2, 3, 3.0])
def test_small_integer_powers_are_multiplies_not_powf(tmp_path, exponent):
    """x**3 is (x*x)*x, as eager's cpu pow computes it: a vectorizable loop, no libm powf call."""
    x = torch.randn(4, 64) * 3
    fn = lambda t: 0.5 * t * (1 + torch.tanh(0.79788456 * (t + 0.044715 * torch.pow(t, exponent))))
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    torch.testing.assert_close(got, fn(x), rtol=1e-6, atol=1e-6)
    assert_all_compiled(min_ops=5)
    linalg = read_stage(str(tmp_path), "linalg")
    assert "math.powf" not in linalg
    assert linalg.count("arith.mulf") >= 4 + int(exponent) - 1


def test_cube_of_a_half_tensor_is_rounded_once():
    x = (torch.randn(256) * 4).to(torch.bfloat16)
    got = torch.compile(lambda t: torch.pow(t, 3), backend="mlir")(x)
    assert_close_to_float32(got, x.float() * x.float() * x.float(), magnitude_rtol=1e-5)
    assert_all_compiled()


def test_non_integer_power_stays_powf(tmp_path):
    x = torch.rand(64) + 0.1
    got = torch.compile(lambda t: torch.pow(t, 2.5), backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    torch.testing.assert_close(got, torch.pow(x, 2.5))
    assert "math.powf" in read_stage(str(tmp_path), "linalg")
