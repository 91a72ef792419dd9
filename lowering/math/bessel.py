"""Bessel functions and Airy Ai: scalar bodies in f64 (the rule widens the operand and rounds the
result to its type; the import rule keeps f64 eager), computed from their mathematics with loops
(scf.while) over series:

a power series for small |x|, the Hankel/asymptotic expansion for large |x| (its smallest term is
about e^(-2|x|), so beyond the switch point SWITCH it is below 1e-15), and for K0/K1 between 0
and SWITCH the trapezoid rule on K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt, which
converges geometrically in 1/h. Airy Ai combines the same pieces (Maclaurin series, K_1/3, an
asymptotic expansion). Where eager's f32 kernel is dominated by rounding the phase of an
oscillating expansion to f32 (J, Y, Ai for large |x|), that one rounding is repeated, so results
follow eager rather than the mathematics.
"""

import math as pymath

import numpy as np

from torch_mlir import ir
from torch_mlir.dialects import arith

from ..loops import while_loop
from ..scalar import (Scalar, copysign, cos, cosh, exp, f64, fabs, floor, i64, isnan, log, select, sin, sinh, sqrt,
                      to_float)

SWITCH = 20.0     # I, K: series / quadrature below, asymptotic expansion above (error ~ e^-40)
SWITCH_J = 18.0   # J, Y: the alternating series loses ~log10(I0(x)) digits, so switch earlier
EPS = 1e-17       # a series stops when its term is this small relative to its sum
EULER = 0.57721566490153286061
H = 0.1           # trapezoid step for K: error ~ e^(-2 pi d / h) e^(x (1 - cos d)), d = pi/3
MAX_STEPS = 4000  # trapezoid points; reached only for subnormal-sized x (t up to acosh(42/x))


def _small(t: Scalar, s: Scalar) -> Scalar:
    return fabs(t) <= fabs(s) * EPS


def power_series(t0: Scalar, ratio, limit: int = 200) -> Scalar:
    """sum_k t_k with t_{k+1} = t_k * ratio(k), k from 0, until a term is negligible."""
    def cond(k, t, s):
        return ~_small(t, s) & (k < limit)
    def body(k, t, s):
        nxt = t * ratio(to_float(k, f64()))
        return [k + 1, nxt, s + nxt]
    return while_loop([Scalar.of(0, i64()), t0, t0], cond, body)[2]


def split_alternating(ratio, kmax: Scalar) -> tuple[Scalar, Scalar]:
    """(P, Q) = (c_0 - c_2 + c_4 - ..., c_1 - c_3 + c_5 - ...) for c_0 = 1, c_k = c_{k-1} ratio(k)
    (k as f64): the shape of the Hankel expansions of J/Y and of Airy's for x < 0. Stops at a
    negligible term or at k = kmax, where an asymptotic series starts to diverge."""
    def cond(k, c, p, q):
        return ~(fabs(c) <= EPS) & (to_float(k, f64()) < kmax)
    def body(k, c, p, q):
        kf = to_float(k + 1, f64())
        odd = kf - 2.0 * floor(kf / 2.0) > 0.5  # k + 1 odd
        flip = select(odd, 1.0, Scalar.of(-1.0))                   # the (-1)^k of P and Q
        nxt = c * ratio(kf) * flip
        return [k + 1, nxt, select(odd, p, p + nxt), select(odd, q + nxt, q)]
    _, _, p, q = while_loop([Scalar.of(0, i64()), Scalar.of(1.0), Scalar.of(1.0), Scalar.of(0.0)], cond, body)
    return p, q


def hankel(nu: int, ax: Scalar) -> tuple[Scalar, Scalar]:
    """(P, Q) of the Hankel expansion of J_nu/Y_nu: c_k = c_{k-1} (4 nu^2 - (2k-1)^2) / (8 k x)."""
    mu = 4.0 * nu * nu
    return split_alternating(lambda k: (mu - (k + k - 1.0) * (k + k - 1.0)) / (8.0 * k * ax), ax + ax)


def asymptotic_ik(nu: float, ax: Scalar, sign: float) -> Scalar:
    """sum_k c_k with c_k = c_{k-1} * sign * ((2k-1)^2 - 4 nu^2) / (8 k x): sign +1 for
    e^-x sqrt(2 pi x) I_nu(x), -1 for e^x sqrt(2 x / pi) K_nu(x)."""
    mu = 4.0 * nu * nu
    def cond(k, c, s):
        return ~_small(c, s) & (to_float(k, f64()) < ax + ax)
    def body(k, c, s):
        kf = to_float(k + 1, f64())
        nxt = c * (((kf + kf - 1.0) * (kf + kf - 1.0) - mu) * sign) / (8.0 * kf * ax)
        return [k + 1, nxt, s + nxt]
    return while_loop([Scalar.of(0, i64()), Scalar.of(1.0), Scalar.of(1.0)], cond, body)[2]


def bessel_i_scaled(nu: int, x: Scalar) -> Scalar:
    """e^-|x| I_nu(x): the power series (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!) (positive terms)
    up to SWITCH, the asymptotic expansion beyond."""
    ax = fabs(x)
    q = x * x / 4.0
    t0 = Scalar.of(1.0) if nu == 0 else x / 2.0
    series = power_series(t0, lambda k: q / ((k + 1.0) * (k + 1.0 + nu))) * exp(-ax)
    large = asymptotic_ik(nu, select(ax > SWITCH, ax, Scalar.of(SWITCH)), 1.0) / sqrt(2.0 * pymath.pi * ax)
    if nu == 1:
        large = copysign(large, x)
    return select(ax > SWITCH, large, series)


def bessel_k_scaled(nu: float, x: Scalar) -> Scalar:
    """e^x K_nu(x) for x > 0: the trapezoid rule on int_0^inf e^(-x (cosh t - 1)) cosh(nu t) dt
    up to SWITCH (where the sum is positive and converges geometrically), the asymptotic
    expansion beyond. 0 -> inf, negative or NaN -> NaN, inf -> 0."""
    active = (x > 0.0) & (x <= SWITCH)
    xs = select(active, x, Scalar.of(1.0))
    def f(t):
        sh = sinh(t / 2.0)
        return exp(-(xs * 2.0 * sh * sh)) * (cosh(t * float(nu)) if nu else Scalar.of(1.0))
    def cond(j, s, term):
        past_peak = xs * cosh(to_float(j, f64()) * H) > 1.0
        return active & ~(_small(term, s) & past_peak) & (j < MAX_STEPS)
    def body(j, s, term):
        nxt = f(to_float(j + 1, f64()) * H)
        return [j + 1, s + nxt, nxt]
    _, s, _ = while_loop([Scalar.of(0, i64()), Scalar.of(0.5), Scalar.of(1.0)], cond, body)
    quad = s * H
    xl = select(x > SWITCH, x, Scalar.of(SWITCH))
    large = asymptotic_ik(nu, xl, -1.0) * sqrt(pymath.pi / (2.0 * xl))
    value = select(x > SWITCH, large, quad)
    value = select(x.eq(pymath.inf), Scalar.of(0.0), value)
    value = select(x.eq(0.0), Scalar.of(pymath.inf), value)
    return select((x < 0.0) | isnan(x), Scalar.of(pymath.nan), value)


def _phase(nu: int, ax: Scalar) -> tuple[Scalar, Scalar]:
    """(cos chi, sin chi), chi = x - (2 nu + 1) pi / 4 rounded to f32 as eager's f32 kernel
    rounds it: for large x that rounding (not the expansion) dominates eager's result, e.g.
    J0(1e6) is off by 6% there, and we follow it."""
    c32 = float(np.float32((2 * nu + 1) * pymath.pi / 4))
    chi = Scalar(arith.extf(f64(), arith.truncf(ir.F32Type.get(), (ax - c32).v)))
    return cos(chi), sin(chi)


def bessel_jy(nu: int, x: Scalar, want_y: bool) -> Scalar:
    """J_nu or Y_nu. |x| <= SWITCH_J: the power series; J's terms are
    u_k = (x/2)^nu (-x^2/4)^k / (k! (k+nu)!), and
      Y0 = (2/pi) [(ln(x/2) + gamma) J0 - sum H_k u_k],
      Y1 = (2/pi) (ln(x/2) + gamma) J1 - 2/(pi x) - (1/pi) sum (H_k + H_{k+1}) u_k
    (H_k harmonic numbers). Beyond: sqrt(2/(pi x)) (P cos chi - Q sin chi), Y with P sin + Q cos."""
    ax = fabs(x)
    xs = select(ax <= SWITCH_J, x, Scalar.of(1.0))  # keeps the series loop short where it is unused
    q = xs * xs / 4.0
    t0 = Scalar.of(1.0) if nu == 0 else xs / 2.0
    ratio = lambda k: -q / ((k + 1.0) * (k + 1.0 + nu))
    # Y's weights of u_k: H_k (Y0) or H_k + H_{k+1} = 2 H_k + 1/(k+1) (Y1); at k = 0: 0 or 1
    weight = (lambda k, h: h) if nu == 0 else (lambda k, h: h + h + 1.0 / (k + 1.0))
    w0 = Scalar.of(0.0) if nu == 0 else t0
    s, _, w = _series_with_harmonics(t0, ratio, weight, w0)
    if not want_y:
        xl = select(ax > SWITCH_J, ax, Scalar.of(SWITCH_J))
        p, qq = hankel(nu, xl)
        cchi, schi = _phase(nu, xl)
        large = (p * cchi - qq * schi) * sqrt(2.0 / (pymath.pi * xl))
        if nu == 1:
            large = select(x < 0.0, -large, large)  # J1 is odd
        return select(isnan(x), x, select(ax > SWITCH_J, large, s))
    lg = log(xs / 2.0) + EULER
    small = (2.0 / pymath.pi) * (lg * s - w) if nu == 0 else \
        (2.0 / pymath.pi) * lg * s - 2.0 / (pymath.pi * xs) - (1.0 / pymath.pi) * w
    xl = select(x > SWITCH_J, x, Scalar.of(SWITCH_J))
    p, qq = hankel(nu, xl)
    cchi, schi = _phase(nu, xl)
    large = (p * schi + qq * cchi) * sqrt(2.0 / (pymath.pi * xl))
    value = select(x > SWITCH_J, large, small)
    value = select(x.eq(0.0), Scalar.of(-pymath.inf), value)
    return select((x < 0.0) | isnan(x), Scalar.of(pymath.nan), value)


def _series_with_harmonics(t0: Scalar, ratio, weight, w0: Scalar, limit: int = 200) -> list[Scalar]:
    """(sum t_k, H_k at the end, sum weight(k, H_k) t_k) for the Y series."""
    def cond(k, t, s, h, w):
        return ~_small(t, s) & (k < limit)
    def body(k, t, s, h, w):
        kf = to_float(k, f64())
        nxt = t * ratio(kf)
        h1 = h + 1.0 / (kf + 1.0)
        return [k + 1, nxt, s + nxt, h1, w + weight(kf + 1.0, h1) * nxt]
    out = while_loop([Scalar.of(0, i64()), t0, t0, Scalar.of(0.0), w0], cond, body)
    return out[2], out[3], out[4]


def spherical_j0(x: Scalar) -> Scalar:
    value = select(x.eq(0.0), Scalar.of(1.0), sin(x) / x)
    return select(fabs(x).eq(pymath.inf), Scalar.of(0.0), value)


# ----------------------------------------------------------------------------- Airy Ai

AI0 = 1.0 / (3.0 ** (2.0 / 3.0) * pymath.gamma(2.0 / 3.0))   # Ai(0)
AIP0 = 1.0 / (3.0 ** (1.0 / 3.0) * pymath.gamma(1.0 / 3.0))  # -Ai'(0)
AIRY_ZETA = 15.0  # x < 0: Maclaurin series while zeta = (2/3)|x|^(3/2) <= this, else asymptotic


def airy_maclaurin(x: Scalar) -> Scalar:
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum a_k, a_k = a_{k-1} x^3 / ((3k-1) 3k), a_0 = 1,
    g = sum b_k, b_k = b_{k-1} x^3 / (3k (3k+1)), b_0 = x. Used for -8 < x <= 1, where the
    alternating terms grow at most to e^zeta ~ 3e6 (1e-10 absolute error)."""
    z = x * x * x
    def cond(k, a, b, f, g):
        return ~(fabs(a) + fabs(b) <= (fabs(f) + fabs(g)) * EPS) & (k < 200)
    def body(k, a, b, f, g):
        k3 = to_float(k + 1, f64()) * 3.0
        a1, b1 = a * z / ((k3 - 1.0) * k3), b * z / (k3 * (k3 + 1.0))
        return [k + 1, a1, b1, f + a1, g + b1]
    _, _, _, f, g = while_loop([Scalar.of(0, i64()), Scalar.of(1.0), x, Scalar.of(1.0), x], cond, body)
    return AI0 * f - AIP0 * g


def airy_negative(x: Scalar) -> Scalar:
    """Ai(-z) ~ pi^(-1/2) z^(-1/4) (sin(phi) P - cos(phi) Q), phi = zeta + pi/4, with P, Q the
    alternating even/odd sums of u_k zeta^-k, u_k = u_{k-1} (6k-5)(6k-3)(6k-1) / (216 k (2k-1)).
    phi is rounded as eager's f32 kernel computes it (-2x sqrt(-x) / 3 + pi/4, each step in f32),
    which is what its result follows for large |x|."""
    z = -x
    zeta = 2.0 * z * sqrt(z) / 3.0
    p, q = split_alternating(
        lambda k: (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / (216.0 * k * (k + k - 1.0) * zeta),
        zeta + zeta)
    f32 = ir.F32Type.get()
    r32 = lambda v: Scalar(arith.extf(f64(), arith.truncf(f32, v.v)))  # one f32 rounding
    phi = r32(r32(r32(r32(-2.0 * x) * r32(sqrt(z))) / 3.0) + float(np.float32(pymath.pi / 4)))
    return (sin(phi) * p - cos(phi) * q) / sqrt(sqrt(z)) / pymath.sqrt(pymath.pi)


def airy_ai(x: Scalar) -> Scalar:
    """Ai: the asymptotic expansion for x < -(1.5 AIRY_ZETA)^(2/3), the Maclaurin series up to 1,
    beyond it Ai(x) = sqrt(x/3) K_{1/3}(zeta) / pi. +-inf give NaN (as eager), x > 103.892 gives 0
    (eager's cut-off; Ai is below the f32 range there anyway)."""
    x_neg = -((1.5 * AIRY_ZETA) ** (2.0 / 3.0))
    xn = select(x < x_neg, x, Scalar.of(x_neg - 1.0))
    xm = select((x >= x_neg) & (x <= 1.0), x, Scalar.of(0.0))
    xp = select(x > 1.0, x, Scalar.of(2.0))
    zeta = 2.0 * xp * sqrt(xp) / 3.0
    positive = sqrt(xp / 3.0) * bessel_k_scaled(1.0 / 3.0, zeta) * exp(-zeta) / pymath.pi
    value = select(x < x_neg, airy_negative(xn), select(x <= 1.0, airy_maclaurin(xm), positive))
    value = select(x > 103.892, Scalar.of(0.0), value)
    return select(fabs(x).eq(pymath.inf) | isnan(x), Scalar.of(pymath.nan), value)


EXPF_OVERFLOW = 88.72283911167299960  # ln(FLT_MAX): f32 exp overflows beyond it


def bessel_i(nu: int, x: Scalar) -> Scalar:
    """I_nu as eager's f32 kernel gives it: e^|x| times a bounded factor, so inf (with x's sign for
    I1) once f32 exp(|x|) overflows though I_nu itself is still finite, and NaN at +-inf (inf/inf)."""
    value = bessel_i_scaled(nu, x) * exp(fabs(x))
    overflow = Scalar.of(pymath.inf) if nu == 0 else copysign(pymath.inf, x)
    value = select(fabs(x) > EXPF_OVERFLOW, overflow, value)
    return select(fabs(x).eq(pymath.inf), Scalar.of(pymath.nan), value)


BESSEL = {
    "bessel_i0": lambda x: bessel_i(0, x),
    "bessel_i1": lambda x: bessel_i(1, x),
    "bessel_i0e": lambda x: bessel_i_scaled(0, x),
    "bessel_i1e": lambda x: bessel_i_scaled(1, x),
    "bessel_k0": lambda x: bessel_k_scaled(0, x) * exp(-x),
    "bessel_k1": lambda x: bessel_k_scaled(1, x) * exp(-x),
    "bessel_k0e": lambda x: bessel_k_scaled(0, x),
    "bessel_k1e": lambda x: bessel_k_scaled(1, x),
    "bessel_j0": lambda x: bessel_jy(0, x, False),
    "bessel_j1": lambda x: bessel_jy(1, x, False),
    "bessel_y0": lambda x: bessel_jy(0, x, True),
    "bessel_y1": lambda x: bessel_jy(1, x, True),
    "spherical_bessel_j0": spherical_j0,
    "airy_ai": airy_ai,
}
