"""Orthogonal polynomials and Bessel functions (dialects/special.py): compiled with no eager
fallback and equal to eager PyTorch, special values included."""

import math

import mpmath
import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, assert_fallbacks, compile_and_run

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
    assert_fallbacks({"aten.special_chebyshev_polynomial_t.n_scalar": 1}, min_ops=0)


S = torch.special
BESSEL = {
    "i0": torch.i0, "i0e": S.i0e, "i1e": S.i1e, "modified_bessel_i0": S.modified_bessel_i0,
    "modified_bessel_i1": S.modified_bessel_i1, "modified_bessel_k0": S.modified_bessel_k0,
    "modified_bessel_k1": S.modified_bessel_k1, "scaled_modified_bessel_k0": S.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": S.scaled_modified_bessel_k1, "bessel_j0": S.bessel_j0, "bessel_j1": S.bessel_j1,
    "bessel_y0": S.bessel_y0, "bessel_y1": S.bessel_y1, "spherical_bessel_j0": S.spherical_bessel_j0,
    "airy_ai": S.airy_ai,
}
# Zeros, the domain edge (K, Y: nan below 0), tiny normal numbers, the method switch points (18, 20),
# f32 exp overflow of I (88.72), underflow of K, huge arguments (J, Y: eager's f32 phase rounding).
BESSEL_X = [0.0, -0.0, 1e-37, 1e-30, -1e-30, 1e-5, 0.5, -1.0, 1.0, 2.0, -2.0, 17.99, 18.01, 19.99, 20.01,
            25.0, -25.0, 50.0, 88.7, 88.8, -88.8, 100.0, 103.8, 104.0, 120.0, 1e4, 1e6, -1e4, -1e6,
            math.inf, -math.inf, math.nan]


def _bessel_x(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.tensor(BESSEL_X), torch.rand(400, generator=g) * 60 - 30]).to(dtype)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_matches_eager(name):
    fn, x = BESSEL[name], _bessel_x()
    got = compile_and_run(lambda a: fn(a), x)
    assert_all_compiled()
    torch.testing.assert_close(got, fn(x), equal_nan=True)


MPMATH = {  # name -> the function in mpmath (torch's own f64 kernels err by 2e-6 near x = 5)
    "i0": lambda v: mpmath.besseli(0, v), "i0e": lambda v: mpmath.besseli(0, v) * mpmath.exp(-abs(v)),
    "i1e": lambda v: mpmath.besseli(1, v) * mpmath.exp(-abs(v)),
    "modified_bessel_i0": lambda v: mpmath.besseli(0, v), "modified_bessel_i1": lambda v: mpmath.besseli(1, v),
    "modified_bessel_k0": lambda v: mpmath.besselk(0, v), "modified_bessel_k1": lambda v: mpmath.besselk(1, v),
    "scaled_modified_bessel_k0": lambda v: mpmath.besselk(0, v) * mpmath.exp(v),
    "scaled_modified_bessel_k1": lambda v: mpmath.besselk(1, v) * mpmath.exp(v),
    "bessel_j0": lambda v: mpmath.besselj(0, v), "bessel_j1": lambda v: mpmath.besselj(1, v),
    "bessel_y0": lambda v: mpmath.bessely(0, v), "bessel_y1": lambda v: mpmath.bessely(1, v),
    "spherical_bessel_j0": lambda v: mpmath.sin(v) / v, "airy_ai": mpmath.airyai,
}


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_is_f32_accurate(name):
    """Against mpmath, for |x| up to 18 (beyond it J/Y follow eager's f32 phase rounding, as Ai
    does below -7.6, and I/K's asymptotic expansion is checked by test_bessel_matches_eager):
    correctly rounded up to the f64 series' own error (~1e-9 absolute where J/Y's alternating
    series is longest)."""
    fn = BESSEL[name]
    x = torch.linspace(-7.5 if name == "airy_ai" else -17.95, 17.95, 60)  # (no 0: mpmath has no sin(0) / 0)
    if name[-2] in "ky":  # defined for x > 0 only
        x = x[x > 0]
    got = compile_and_run(lambda a: fn(a), x).double()
    want = torch.tensor([float(MPMATH[name](mpmath.mpf(v))) for v in x.double().tolist()], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1.2e-7, atol=2e-9)
    assert_all_compiled()  # eager's own f32 kernel must not be what met the reference


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["i0", "i0e", "i1e"])
def test_bessel_half_precision(name, dtype):
    fn, x = BESSEL[name], _bessel_x(dtype)
    got = compile_and_run(lambda a: fn(a), x)
    assert_all_compiled()
    torch.testing.assert_close(got, fn(x), equal_nan=True)


@pytest.mark.parametrize("fn, dtype", [(S.bessel_j0, torch.float64), (S.i1, torch.float32)])
def test_bessel_stays_eager(fn, dtype):
    """f64 (our f64 arithmetic is not f64-exact) and f32 special.i1 (eager's kernel is less
    accurate than its OpInfo tolerance, so we cannot match it) run eagerly."""
    x = torch.linspace(-8, 8, 17, dtype=dtype)
    torch.testing.assert_close(compile_and_run(lambda a: fn(a), x), fn(x))
    assert_fallbacks({f"aten.{fn.__name__}.default": 1}, min_ops=0)
