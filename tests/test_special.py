"""Special functions (lgamma, digamma, polygamma, zeta, igamma(c), erfinv, ndtri, erfcx, log_ndtr)
and hypot/nextafter/signbit/angle: compiled with no eager fallback, equal to eager on ordinary
values and on the special ones (poles, infinities, NaN, signed zeros), and close to the exact
value (mpmath) where eager's own float kernel is less accurate than its tolerance allows."""

import math

import mpmath
import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, assert_fallbacks, read_stage

inf, nan = math.inf, math.nan
SPECIAL = [0.0, -0.0, -1.0, -2.0, 1.0, 2.0, inf, -inf, nan, 1e-30, -1e-30, 3e38, -2.5, 0.5, 1e-45, -7.5]


def _x():
    torch.manual_seed(0)
    return torch.cat([torch.randn(300) * 9, torch.rand(100) * 100, torch.tensor(SPECIAL)])


def _unit():
    torch.manual_seed(0)
    return torch.cat([torch.rand(300) * 2 - 1, torch.tensor([0.0, -0.0, 1.0, -1.0, 1.5, nan, 1e-30, 0.99999994, -0.9999999])])


def _prob():
    torch.manual_seed(0)
    return torch.cat([torch.rand(300), torch.tensor([0.0, 1.0, 0.5, -0.1, 1.1, nan, 1e-45, 1e-30, 1 - 2 ** -24, 0.25, 0.75])])


def _zeta_args():
    torch.manual_seed(0)
    s = torch.cat([torch.rand(300) * 20 - 5, torch.tensor([1.0, 0.5, 2.0, 2.0, 3.0, 2.5, inf, 2.0, nan, 2.0, 3.0, 60.0])])
    q = torch.cat([torch.randn(300) * 9, torch.tensor([1.0, 1.0, 0.0, -1.0, -1.5, -1.5, 2.0, inf, 1.0, -0.0, -inf, 0.3])])
    return s, q


def _gamma_args():
    torch.manual_seed(0)
    a = torch.cat([torch.rand(300) * 20, torch.rand(30) * 1e6, torch.tensor([0.0, 0.0, 1.0, inf, inf, 1.0, -1.0, 1.0, nan, 2.0, nan])])
    x = torch.cat([torch.rand(300) * 25, torch.rand(30) * 1e6, torch.tensor([0.0, 1.0, 0.0, 1.0, inf, inf, 1.0, -1.0, 1.0, nan, 0.0])])
    return a, x


def _pair():
    x = torch.cat([_x(), torch.tensor([inf, nan, -inf, 0.0, -0.0, 0.0])])
    return x, torch.cat([_x().flip(0), torch.tensor([nan, inf, nan, -0.0, 0.0, -1.0])])


# id, function, inputs, the dynamo op it imports to
CASES = [
    ("lgamma", torch.lgamma, lambda: (_x(),), "dynamo.lgamma"),
    ("mvlgamma", lambda x: torch.mvlgamma(x.abs() + 3, 3), lambda: (_x()[:300],), "dynamo.lgamma"),
    ("digamma", torch.digamma, lambda: (_x(),), "dynamo.digamma"),
    ("polygamma_1", lambda x: torch.polygamma(1, x), lambda: (_x(),), "dynamo.zeta"),
    ("polygamma_4", lambda x: torch.polygamma(4, x), lambda: (_x(),), "dynamo.zeta"),
    ("zeta", torch.special.zeta, _zeta_args, "dynamo.zeta"),
    ("igamma", torch.igamma, _gamma_args, "dynamo.igamma"),
    ("igammac", torch.igammac, _gamma_args, "dynamo.igammac"),
    ("erfinv", torch.erfinv, lambda: (_unit(),), "dynamo.erfinv"),
    ("ndtri", torch.special.ndtri, lambda: (_prob(),), "dynamo.ndtri"),
    ("erfcx", torch.special.erfcx, lambda: (torch.cat([_x(), torch.tensor([30.0, 1e30, -10.0, 26.0, -30.0])]),), "dynamo.erfcx"),
    ("log_ndtr", torch.special.log_ndtr, lambda: (_x(),), "dynamo.erfcx"),
    ("hypot", torch.hypot, _pair, "dynamo.sqrt"),
    ("nextafter", torch.nextafter, _pair, "dynamo.nextafter"),
    ("signbit", torch.signbit, lambda: (torch.cat([_x(), -torch.tensor([nan])]),), "dynamo.copysign"),
    ("angle", torch.angle, lambda: (_x(),), "dynamo.select"),
]


@pytest.mark.parametrize("name,fn,make_inputs,dialect_op", CASES, ids=[c[0] for c in CASES])
def test_compiles_and_matches_eager_float32(tmp_path, name, fn, make_inputs, dialect_op):
    inputs = make_inputs()
    expected = fn(*inputs)
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path), "strict": True})(*inputs)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, equal_nan=True)  # float32: rtol 1.3e-6, atol 1e-5
    assert_all_compiled()
    assert f'"{dialect_op}"' in read_stage(str(tmp_path), "dynamo")


def test_special_values_match_eager_exactly():
    """Poles, infinities and signed zeros: the same bits as eager (assert_close would let a
    wrong sign of zero or a 1e-6 where eager says 0 through)."""
    x = torch.tensor(SPECIAL)
    for fn in (torch.lgamma, torch.digamma, lambda t: torch.polygamma(1, t), lambda t: torch.polygamma(2, t),
               torch.special.erfcx, torch.signbit, torch.angle):
        torch._dynamo.reset()
        got, want = torch.compile(fn, backend="mlir")(x), fn(x)
        finite = torch.isfinite(want) & (want.abs() < 1e20) if want.is_floating_point() else torch.zeros_like(want)
        special = ~finite
        assert torch.equal(got[special].isnan(), want[special].isnan()), (x, got, want)
        keep = special & ~want.isnan()
        assert torch.equal(got[keep], want[keep]), (x[keep], got[keep], want[keep])
        if want.is_floating_point():
            assert torch.equal(got[want == 0].signbit(), want[want == 0].signbit())
        assert_all_compiled()


@pytest.mark.parametrize("fn", [torch.lgamma, torch.digamma, torch.erfinv, lambda x: torch.polygamma(3, x), torch.angle])
def test_bfloat16_matches_eager(fn):
    x = _unit() if fn is torch.erfinv else _x()
    x = x.to(torch.bfloat16)
    got = torch.compile(fn, backend="mlir", options={"strict": True})(x)
    torch.testing.assert_close(got, fn(x), equal_nan=True)
    assert_all_compiled()


def _exact(f, *args) -> float:
    return float(torch.tensor(float(f(*args)), dtype=torch.float32))


# (fn, inputs, mpmath reference): points where the result is small or near a pole, so that a
# textbook algorithm in float32 would lose digits
EXACT = [
    (torch.lgamma, [1.0001, 2.0001, -2.4570, 0.9999, 30.5], lambda x: mpmath.log(abs(mpmath.gamma(x)))),
    (torch.digamma, [1.4616321, -0.5, -3.25, 1e-3, 700.0], mpmath.digamma),
    (lambda x: torch.polygamma(3, x), [-3.3, 0.1, 25.0], lambda x: mpmath.polygamma(3, x)),
    (torch.erfinv, [1e-20, 0.3, -0.999, 0.9999999], mpmath.erfinv),
    (torch.special.ndtri, [1e-40, 0.3, 0.9999], lambda p: mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(p) - 1)),
    (torch.special.erfcx, [0.5, 20.0, 40.0, 1e10], lambda x: mpmath.exp(mpmath.mpf(x) ** 2) * mpmath.erfc(x)),
]


@pytest.mark.parametrize("fn,points,ref", EXACT)
def test_close_to_the_exact_value(fn, points, ref):
    mpmath.mp.dps = 80  # erfinv(2p - 1) at p = 1e-40 needs more than 40 digits
    x = torch.tensor(points)
    got = torch.compile(fn, backend="mlir")(x)
    want = torch.tensor([_exact(ref, float(p)) for p in x.tolist()])
    torch.testing.assert_close(got, want, rtol=3e-7, atol=0)
    assert_all_compiled()


def test_incomplete_gamma_is_close_to_the_exact_value():
    """Series, continued fraction and (a > 1e5) the uniform asymptotic form, each branch."""
    mpmath.mp.dps = 40
    a = torch.tensor([0.5, 3.0, 50.0, 50.0, 2e5, 2e5, 2e5])
    x = torch.tensor([0.2, 9.0, 45.0, 60.0, 2e5 - 300, 2e5 + 10, 2e5 + 900])
    got = torch.compile(torch.igamma, backend="mlir")(a, x)
    want = torch.tensor([_exact(lambda p, q: mpmath.gammainc(p, 0, q, regularized=True), float(p), float(q))
                         for p, q in zip(a.tolist(), x.tolist())])
    torch.testing.assert_close(got, want, rtol=3e-7, atol=1e-30)
    assert_all_compiled()


def test_loops_are_inside_the_elementwise_body(tmp_path):
    s, q = _zeta_args()
    torch.compile(torch.special.zeta, backend="mlir", options={"dump_dir": str(tmp_path)})(s, q)
    linalg = read_stage(str(tmp_path), "linalg")
    assert "linalg.generic" in linalg and "scf.while" in linalg and "math.erfc" not in linalg


def test_float64_stays_eager():
    x = torch.rand(8, dtype=torch.float64) + 0.5
    torch.testing.assert_close(torch.compile(torch.lgamma, backend="mlir")(x), torch.lgamma(x))
    reasons = [why for _, why in assert_fallbacks({"aten.lgamma.default": 1}, min_ops=0)["fallback_reasons"]]
    assert any("float64" in why for why in reasons), reasons


def test_nextafter_is_bit_exact_in_float64_and_bfloat16():
    for dtype in (torch.float64, torch.bfloat16):
        torch._dynamo.reset()
        a, b = _pair()
        a, b = a.to(dtype), b.to(dtype)
        got = torch.compile(torch.nextafter, backend="mlir", options={"strict": True})(a, b)
        want = torch.nextafter(a, b)
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got[~want.isnan()].view(torch.int16 if dtype == torch.bfloat16 else torch.int64),
                           want[~want.isnan()].view(torch.int16 if dtype == torch.bfloat16 else torch.int64))
        assert_all_compiled()


def test_polygamma_order_4_of_bfloat16_stays_eager():
    """Eager's half-type kernel is off by more than its tolerance at negative half-integers."""
    x = torch.tensor([-10.5, 2.0], dtype=torch.bfloat16)
    torch.testing.assert_close(torch.compile(lambda t: torch.polygamma(4, t), backend="mlir")(x), torch.polygamma(4, x))
    assert_fallbacks({"aten.polygamma.default": 1}, min_ops=0)
