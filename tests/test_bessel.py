"""Orthogonal polynomials and Bessel functions (dialects/bessel.py): compiled with no eager
fallback and equal to eager PyTorch, special values included."""

import math

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, compile_and_run

POLYNOMIALS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
]
# No NaN x: eager's kernels (all but T and H) then return an uninitialized variable (the previous
# element's result, in practice); we return NaN. test_polynomial_nan_x checks the defined ones.
SPECIAL_X = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-3, 0.9999, math.inf, -math.inf]
# Negative, fractional, NaN/inf and huge degrees, the trig-form threshold and Hermite's NaN cut-off.
SPECIAL_N = [-3.0, -0.5, 0.0, 1.0, 2.0, 2.7, 5.0, 6.0, 7.0, 9.0, 12.0, 50.0, 129.0, math.nan, math.inf, 1e30]


def _grid():
    g = torch.Generator().manual_seed(0)
    xs = torch.cat([torch.tensor(SPECIAL_X), torch.randn(24, generator=g) * 1.5, torch.rand(8, generator=g)])
    x, n = torch.meshgrid(xs, torch.tensor(SPECIAL_N), indexing="ij")
    return x.contiguous(), n.contiguous()


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_matches_eager_bitwise(name):
    """The bodies repeat eager's f32 operations (fused multiply-adds included): equal to the bit."""
    fn = getattr(torch.special, name)
    x, n = _grid()
    got = compile_and_run(lambda a, b: fn(a, b), x, n)
    assert_all_compiled()
    torch.testing.assert_close(got, fn(x, n), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("which", ["n_scalar", "x_scalar"])
def test_polynomial_scalar_overloads(which):
    x, _ = _grid()
    fn = torch.special.legendre_polynomial_p
    call = (lambda a: fn(a, 7)) if which == "n_scalar" else (lambda a: fn(0.3, a))
    arg = x if which == "n_scalar" else torch.arange(-2.0, 12.0)
    torch.testing.assert_close(compile_and_run(call, arg), call(arg), rtol=0, atol=0, equal_nan=True)
    assert_all_compiled()


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_h"])
def test_polynomial_nan_x(name):
    fn = getattr(torch.special, name)
    x, n = torch.full((6,), math.nan), torch.tensor([-1.0, 0.0, 1.0, 2.0, 7.0, 300.0])
    torch.testing.assert_close(compile_and_run(lambda a, b: fn(a, b), x, n), fn(x, n), rtol=0, atol=0, equal_nan=True)
    assert_all_compiled()


def test_polynomial_float64_stays_eager():
    """Eager's f64 kernel fuses multiply-adds we cannot emulate exactly: left to eager."""
    x = torch.linspace(-2, 2, 9, dtype=torch.float64)
    got = compile_and_run(lambda a: torch.special.chebyshev_polynomial_t(a, 5), x)
    torch.testing.assert_close(got, torch.special.chebyshev_polynomial_t(x, 5))
    assert dynamo_mlir.stats()["ops_fallback"] == 1
