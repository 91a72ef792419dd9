"""How the polynomial coefficients of lowering/math/approx.py were obtained (a development-time
tool: nothing imports it at compile time).

    python -m dynamo_mlir.lowering.math.approx_fit [name ...]

For each entry of FITS: the target function, evaluated with mpmath at 40 digits on 3000 Chebyshev
points of the reduced interval, is fitted by a polynomial q with Lawson's algorithm (iteratively
reweighted least squares, which converges to the weighted minimax fit on the points), in float64.
The coefficients are then rounded to float32 one at a time from the lowest degree up, the
remaining ones refitted after each rounding, so the rounding of one coefficient is absorbed by the
others. The printout gives the coefficients as hex floats and the max error of the rounded
polynomial, in units of 2^-24 (relative to the function's value, or absolute where so marked);
the error of the float32 code built from them is measured in tests/test_cpu_math.py.

Each fit approximates q in `g(t) = lead(t) + factor(t) * q(t - centre)`, the form the code
evaluates: the leading terms (1 + r for exp, f for log1p, ...) are exact in float32 and only the
small correction goes through q, which keeps the result accurate near t = 0.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import mpmath as mp
import numpy as np

mp.mp.dps = 40


@dataclass(frozen=True)
class Fit:
    g: Callable  # the function, on mpmath numbers
    lo: float  # the reduced interval
    hi: float
    degree: int
    lead: Callable = lambda t: 0  # g = lead + factor * q
    factor: Callable = lambda t: 1
    relative: bool = True  # error relative to g, else absolute
    centre: float = 0.0  # q is a polynomial in t - centre


LN2_HALF = float(mp.log(2) / 2)
SQRT_HALF_M1, SQRT2_M1 = float(mp.sqrt(0.5) - 1), float(mp.sqrt(2) - 1)
TANH_SMALL = 0.625  # approx.TANH_SMALL: below it tanh is a polynomial
ERF_SMALL, ERF_ONE = 1.25, float.fromhex("0x1.f5a88ap+1")  # approx.ERF_SMALL, approx.ERF_ONE
ERF_CENTRE = float(np.float32((ERF_SMALL + ERF_ONE) / 2))  # approx.ERF_CENTRE


def _sqrt_of(fn):
    """fn of a = sqrt(z): the even/odd functions are polynomials in z = a^2."""
    return lambda z: fn(mp.sqrt(z))


FITS = {
    # exp(r) = 1 + r + r^2 q(r), |r| <= ln2/2 (the Cody-Waite remainder)
    "exp": Fit(mp.exp, -LN2_HALF, LN2_HALF, 4, lead=lambda r: 1 + r, factor=lambda r: r * r),
    # expm1(r) = r + r^2 q(r), same interval
    "expm1": Fit(mp.expm1, -LN2_HALF, LN2_HALF, 5, lead=lambda r: r, factor=lambda r: r * r),
    # log1p(f) = f + f^2 q(f), f = m - 1 with the mantissa m in [sqrt(1/2), sqrt(2))
    "log1p": Fit(mp.log1p, SQRT_HALF_M1, SQRT2_M1, 8, lead=lambda f: f, factor=lambda f: f * f),
    # tanh(a) = a + a z q(z), z = a^2 < TANH_SMALL^2
    "tanh": Fit(_sqrt_of(mp.tanh), 0.0, TANH_SMALL ** 2, 5, lead=mp.sqrt, factor=lambda z: mp.sqrt(z) * z),
    # erf(a) = a + a q(z), z = a^2 < ERF_SMALL^2
    "erf_small": Fit(_sqrt_of(mp.erf), 0.0, ERF_SMALL ** 2, 7, lead=mp.sqrt, factor=mp.sqrt),
    # erf(a) = 1 - q(a - centre) on [ERF_SMALL, ERF_ONE], absolute error (erf is in [0.92, 1)
    # there); q approximates erfc, small, so its float32 coefficients round to little
    "erf_large": Fit(mp.erf, ERF_SMALL, ERF_ONE, 14, lead=lambda a: 1, factor=lambda a: -1, relative=False,
                     centre=ERF_CENTRE),
}


def chebyshev_points(lo: float, hi: float, n: int = 3000) -> np.ndarray:
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def lawson(t: np.ndarray, y: np.ndarray, w: np.ndarray, degree: int, fixed: dict[int, float],
           iterations: int = 300) -> np.ndarray:
    """Coefficients c minimising max |w (y - sum c_j t^j)| over the points, with c_j = fixed[j]
    for the fixed ones (Lawson: least squares reweighted by each point's error)."""
    free = [j for j in range(degree + 1) if j not in fixed]
    rest = y - sum(c * t ** j for j, c in fixed.items())
    a = np.stack([t ** j for j in free], 1) * w[:, None]
    b = rest * w
    u = np.full(len(t), 1.0 / len(t))
    for _ in range(iterations):
        s = np.sqrt(u)
        c = np.linalg.lstsq(a * s[:, None], b * s, rcond=None)[0]
        u = u * np.abs(b - a @ c)
        u /= u.sum()
    coeffs = dict(fixed) | dict(zip(free, c))
    return np.array([coeffs[j] for j in range(degree + 1)])


def fit(spec: Fit) -> tuple[list[float], float]:
    """float32 coefficients of q (lowest degree first) and their max error in units of 2^-24."""
    span = spec.hi - spec.lo
    pts = chebyshev_points(spec.lo - 1e-3 * span, spec.hi + 1e-3 * span)  # rounding may step just outside
    pts = pts[pts > 0] if spec.lo == 0.0 else pts  # z = a^2 >= 0, and the forms divide by t at 0
    pts = pts[pts != 0]
    g = [spec.g(mp.mpf(p)) for p in pts]
    y = np.array([float((gi - spec.lead(mp.mpf(p))) / spec.factor(mp.mpf(p))) for gi, p in zip(g, pts)])
    w = np.array([float(abs(spec.factor(mp.mpf(p)) / (gi if spec.relative else 1))) for gi, p in zip(g, pts)])
    t = pts - spec.centre
    fixed: dict[int, float] = {}
    for j in range(spec.degree + 1):
        fixed[j] = float(np.float32(lawson(t, y, w, spec.degree, fixed)[j]))
    coeffs = [fixed[j] for j in range(spec.degree + 1)]
    err = np.max(np.abs(w * (y - sum(c * t ** j for j, c in enumerate(coeffs)))))
    return coeffs, float(err / 2.0 ** -24)


def main(names: list[str]) -> None:
    for name in names or FITS:
        coeffs, err = fit(FITS[name])
        kind = "relative" if FITS[name].relative else "absolute"
        print(f"{name}: max {kind} error {err:.3f} x 2^-24")
        print("    (" + ", ".join(_hex(c) for c in coeffs) + ")")


def _hex(c: float) -> str:
    """A float32 value as a short hex float (float.fromhex reads it back exactly)."""
    mantissa, exponent = c.hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}"


if __name__ == "__main__":
    main(sys.argv[1:])
