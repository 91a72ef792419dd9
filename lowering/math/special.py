"""Scalar bodies of the special functions, in f64 (the rules in lowering/rules/special.py widen
the operands and round the result back).

The import rules hand these ops float32/bfloat16/float16 values only: in f64, short textbook
algorithms are far more accurate than those types need, so each body is plain mathematics:

  lgamma   Stirling's series at z >= 10, the recurrence Gamma(x+1) = x Gamma(x) to get there,
           reflection Gamma(x) Gamma(1-x) = pi / sin(pi x) for x < 0
  digamma  the asymptotic series at z >= 10, psi(x+1) = psi(x) + 1/x, reflection
           psi(1-x) - psi(x) = pi cot(pi x)
  zeta     Hurwitz zeta by direct summation, then Euler-Maclaurin (scf.while: the number of
           direct terms depends on the operands)
  erfinv, ndtri   Newton's method on erf (centre) or on ln erfc (tails)
  erfcx    e^(x^2) erfc(x), the asymptotic series where e^(x^2) would overflow
  igamma(c)  the power series of P or Lentz's continued fraction of Q (scf.while), and Temme's
           uniform asymptotic form (leading term) for very large a
  nextafter  +-1 on the bit pattern, in the operands' own type

Bernoulli numbers come from their defining recurrence at import time. Special values (poles,
infinities, NaN, signed zeros) follow eager PyTorch's kernels; each function lists them.
"""

import math as pymath
from fractions import Fraction

from torch_mlir import ir
from torch_mlir.dialects import arith

from ..loops import if_else, while_loop
from ..scalar import (Scalar, both, choose, const, convert, copysign, either, erf, erfc, exp, f64, fabs, floor,
                      isinf, isnan, log, log1p, maximumf, poly, roundeven, select, sin, sqrt, tan)


def is_integer(x: Scalar) -> Scalar:
    return floor(x).eq(x)


# ----------------------------------------------------------------------------- constants


def _bernoulli(n: int) -> list[Fraction]:
    """B_0..B_n from sum_{k<=m} C(m+1, k) B_k = 0 (B_1 = -1/2)."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(pymath.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


B = _bernoulli(30)
PI = pymath.pi
HALF_LOG_2PI = 0.5 * pymath.log(2 * pymath.pi)
SQRT_PI = pymath.sqrt(pymath.pi)
SQRT2 = pymath.sqrt(2.0)
INF, NAN = pymath.inf, pymath.nan
EPS = 2.0 ** -53

# Stirling: ln Gamma(z) ~ (z - 1/2) ln z - z + ln(2 pi)/2 + sum_k B_2k / (2k (2k-1) z^(2k-1)),
# and psi(z) ~ ln z - 1/(2z) - sum_k B_2k / (2k z^2k). With z >= 10, 10 terms are below f64 eps.
ASYMPTOTIC_FROM = 10.0
STIRLING = [float(B[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, 11)]
DIGAMMA_SERIES = [float(B[2 * k] / (2 * k)) for k in range(1, 11)]


def _shift_up(x: Scalar, acc, step):
    """Step z = x, x+1, ... up to ASYMPTOTIC_FROM (x >= 0 needs at most 10 steps, unrolled):
    returns the final z and acc folded as step(acc, z) over the z's below the threshold."""
    z = x
    for _ in range(int(ASYMPTOTIC_FROM)):
        small = z < ASYMPTOTIC_FROM
        acc = select(small, step(acc, z), acc)
        z = select(small, z + 1.0, z)
    return z, acc


def _reduced(x: Scalar) -> Scalar:
    """x - round(x), exact: sin(pi x) and tan(pi x) from it are exactly 0 at integers."""
    return x - roundeven(x)


# ----------------------------------------------------------------------------- gamma family


def lgamma(x: Scalar) -> Scalar:
    """ln|Gamma(x)|. +inf at 0, -0, negative integers and +-inf; NaN stays NaN."""
    neg = x < 0.0
    y = select(neg, 1.0 - x, x)
    z, prod = _shift_up(y, Scalar.of(1.0), lambda acc, z: acc * z)
    zi = 1.0 / z
    series = zi * poly(zi * zi, STIRLING)
    positive = (z - 0.5) * log(z) - z + HALF_LOG_2PI + series - log(fabs(prod))
    reflected = log(PI / fabs(sin(PI * _reduced(x)))) - positive
    return choose(select(neg, reflected, positive), (isinf(x), INF))


def digamma(x: Scalar) -> Scalar:
    """psi(x). -inf at +0, +inf at -0 (the sign of 1/x), NaN at negative integers and -inf."""
    neg = x < 0.0
    y = select(neg, 1.0 - x, x)
    z, acc = _shift_up(y, Scalar.of(0.0), lambda acc, z: acc - 1.0 / z)
    zi2 = 1.0 / (z * z)
    positive = log(z) - 0.5 / z - zi2 * poly(zi2, DIGAMMA_SERIES) + acc
    r = _reduced(x)
    reflected = positive - PI / tan(PI * r)
    return choose(select(neg, reflected, positive), (both(neg, r.eq(0.0)), NAN))


def _pow_neg(a: Scalar, s: Scalar, s_odd) -> Scalar:
    """a^-s for any a != 0 where s is an integer when a < 0 (|a|^-s with the sign of a^-s)."""
    mag = exp(-s * log(fabs(a)))
    return select(both(a < 0.0, s_odd), -mag, mag)


EULER_MACLAURIN = [float(B[2 * j] / pymath.factorial(2 * j)) for j in range(1, 13)]


def zeta(s: Scalar, q: Scalar) -> Scalar:
    """Hurwitz zeta(s, q) = sum_{k>=0} (q+k)^-s for s > 1.

    Terms are summed directly until a = q + k >= max(10, s) (or until they stop mattering: large
    s), then the rest is Euler-Maclaurin: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! (s)_(2j-1)
    a^(-s-2j+1), whose terms shrink like ((s+2j)/(2 pi a))^2 there. Eager's special values: inf
    at s = 1 and at q a non-positive integer, NaN for s < 1, for q < 0 with s not an integer, and
    for s or q = +inf; q < 0 with an integer s sums the (signed) terms as the series says."""
    q_nonpos = q <= 0.0
    specials = [(s.eq(1.0), INF), (s < 1.0, NAN), (both(q_nonpos, is_integer(q)), INF),
                (both(q_nonpos, ~is_integer(s)), NAN), (either(s.eq(INF), q.eq(INF)), NAN)]
    q = select(either(*[c for c, _ in specials]), INF, q)  # no loop for those (q = -inf would not end)
    s_odd = (s - 2.0 * floor(s * 0.5)).eq(1.0)
    limit = maximumf(s, ASYMPTOTIC_FROM)

    def keep_going(a, total, last):
        settled = both(a > 0.0, fabs(last) < EPS * 0.25 * fabs(total))
        return both(a < limit, ~settled)

    def step(a, total, last):
        term = _pow_neg(a, s, s_odd)
        return a + 1.0, total + term, term

    a, total, last = while_loop([q, 0.0, 1.0], keep_going, step)
    settled = both(a > 0.0, fabs(last) < EPS * 0.25 * fabs(total), a < limit)
    p = exp(-s * log(a))  # a > 0 here
    tail = p * a / (s - 1.0) + 0.5 * p
    ainv = 1.0 / a
    factor, poch = p * ainv, s  # a^(-s-2j+1) and (s)_(2j-1) for j = 1
    for j, c in enumerate(EULER_MACLAURIN, start=1):
        tail = tail + c * poch * factor
        poch = poch * (s + (2 * j - 1)) * (s + 2 * j)
        factor = factor * ainv * ainv
    return choose(select(settled, total, total + tail), *specials)


# ----------------------------------------------------------------------------- error-function family

NEWTON_STEPS = 8
TWO_OVER_SQRT_PI = 2.0 / SQRT_PI


def _erf_solve(y: Scalar) -> Scalar:
    """x with erf(x) = y for |y| <= 1/2: Newton from y sqrt(pi)/2 (erf is concave for x > 0,
    so the iterates climb monotonically to the root)."""
    x = y * (SQRT_PI / 2.0)
    for _ in range(NEWTON_STEPS):
        x = x - (erf(x) - y) / (TWO_OVER_SQRT_PI * exp(-(x * x)))
    return x


def _erfc_solve(q: Scalar) -> Scalar:
    """x > 0 with erfc(x) = q for 0 < q <= 1/2: Newton on ln erfc(x) - ln q (concave, so after
    the start sqrt(-ln q) >= root the iterates fall monotonically to the root)."""
    x = sqrt(-log(q))
    lq = log(q)
    for _ in range(NEWTON_STEPS):
        c = erfc(x)
        x = x + (log(c) - lq) * c * exp(x * x) / TWO_OVER_SQRT_PI
    return x


def erfinv(y: Scalar) -> Scalar:
    """erf^-1(y); +-inf at +-1, NaN outside [-1, 1]; keeps the sign of zero."""
    a = fabs(y)
    tail = _erfc_solve(select(a > 0.5, 1.0 - a, 0.5))
    tail = select(y < 0.0, -tail, tail)
    x = select(a > 0.5, tail, _erf_solve(select(a > 0.5, 0.0, y)))
    return choose(x, (a.eq(1.0), select(y < 0.0, -INF, INF)), (a > 1.0, NAN))


def ndtri(p: Scalar) -> Scalar:
    """Phi^-1(p) = sqrt(2) erfinv(2p - 1), through erfc^-1 in the tails (2p and 2(1-p) are
    exact for float inputs, so no precision is lost near 0 or 1). -inf at 0, inf at 1."""
    low, high = p <= 0.25, p >= 0.75
    q = select(low, 2.0 * p, select(high, 2.0 * (1.0 - p), 0.5))
    tail = _erfc_solve(q) * SQRT2
    mid = _erf_solve(select(either(low, high), 0.0, 2.0 * p - 1.0)) * SQRT2
    x = select(low, -tail, select(high, tail, mid))
    return choose(x, (p.eq(0.0), -INF), (p.eq(1.0), INF), (either(p < 0.0, p > 1.0), NAN))


ERFCX_ASYMPTOTIC_FROM = 25.0  # e^(x^2) erfc(x) is exact enough below; above, erfc underflows


def erfcx(x: Scalar) -> Scalar:
    """e^(x^2) erfc(x); for x >= 25 the asymptotic series 1/(x sqrt(pi)) sum_k (-1)^k
    (2k-1)!! / (2x^2)^k (8 terms: below f64 eps there). inf at -inf, 0 at +inf.

    For x < 0 the value is about 2 e^(x^2), and eager's float kernel squares x in float32 first:
    that rounding (relative 2^-24 x^2 in the result) is larger than its tolerance, so x^2 is
    rounded to float32 there too, to agree with it."""
    square = x * x
    square = select(x < 0.0, Scalar(convert(convert(square.v, ir.F32Type.get()), f64())), square)
    direct = exp(square) * erfc(x)
    t = 1.0 / (2.0 * x * x)
    coeffs = [(-1) ** k * float(pymath.prod(range(1, 2 * k, 2))) for k in range(9)]
    asymptotic = poly(t, coeffs) / (x * SQRT_PI)
    return select(x < ERFCX_ASYMPTOTIC_FROM, direct, asymptotic)


# ----------------------------------------------------------------------------- incomplete gamma

TEMME_FROM = 1e5  # a above which the uniform asymptotic form replaces the series/fraction
MAX_TERMS = 1e6   # a safety cap on the loops (they need about 10 sqrt(a) terms below TEMME_FROM)
# ln(1+m) - m = -2t^2/(1-t) + 2 sum_k t^(2k+1)/(2k+1), t = m/(2+m): no cancellation for small m
LOG1PMX_SERIES = [1.0 / (2 * k + 1) for k in range(1, 20)]


def log1pmx(m: Scalar) -> Scalar:
    """ln(1 + m) - m, accurate also where both terms nearly cancel (|m| small)."""
    t = m / (2.0 + m)
    t2 = t * t
    series = -2.0 * t2 / (1.0 - t) + 2.0 * t * t2 * poly(t2, LOG1PMX_SERIES)
    return select(fabs(m) < 0.5, series, log1p(m) - m)


def _gamma_series(a: Scalar, x: Scalar, log_x: Scalar):
    """P = x^a e^-x / Gamma(a+1) sum_k x^k / ((a+1)...(a+k)), for x < a + 1."""
    def keep_going(k, term, total):
        return both(term > EPS * 0.25 * total, k < MAX_TERMS)

    def step(k, term, total):
        term = term * x / (a + k)
        return k + 1.0, term, total + term

    _, _, total = while_loop([1.0, 1.0, 1.0], keep_going, step)
    p = exp(a * log_x - x - lgamma(a + 1.0)) * total
    return p, 1.0 - p


TINY = 1e-300


def _gamma_fraction(a: Scalar, x: Scalar, log_x: Scalar):
    """Q = x^a e^-x / Gamma(a) / (x+1-a - 1(1-a) / (x+3-a - 2(2-a) / (x+5-a - ...))), for
    x >= a + 1, evaluated forwards by the modified Lentz method."""
    b0 = x + 1.0 - a

    def keep_going(i, b, c, d, h, delta):
        return both(fabs(delta - 1.0) > EPS, i < MAX_TERMS)

    def step(i, b, c, d, h, delta):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = 1.0 / select(fabs(d) < TINY, TINY, d)
        c = b + an / c
        c = select(fabs(c) < TINY, TINY, c)
        delta = d * c
        return i + 1.0, b, c, d, h * delta, delta

    d0 = 1.0 / b0
    h = while_loop([1.0, b0, 1.0 / TINY, d0, d0, 2.0], keep_going, step)[4]
    q = exp(a * log_x - x - lgamma(a)) * h
    return 1.0 - q, q


def _gamma_temme(a: Scalar, x: Scalar):
    """Large a: P = erfc(-eta sqrt(a/2))/2 - R, Q = erfc(eta sqrt(a/2))/2 + R with
    R = e^(-a eta^2/2) / sqrt(2 pi a) (1/(lambda-1) - 1/eta), lambda = x/a and
    eta^2/2 = lambda - 1 - ln lambda (the leading term of Temme's uniform expansion; the next
    is smaller by about 1/(540 a))."""
    m = (x - a) / a
    half_eta2 = -log1pmx(m)
    eta = copysign(sqrt(2.0 * half_eta2), m)
    z = eta * sqrt(0.5 * a)
    c0 = select(fabs(m) < 1e-6, -1.0 / 3.0 + m / 12.0, 1.0 / m - 1.0 / eta)
    r = exp(-a * half_eta2) / sqrt(2.0 * PI * a) * c0
    return 0.5 * erfc(-z) - r, 0.5 * erfc(z) + r


def _igamma_pair(a: Scalar, x: Scalar):
    """(P(a, x), Q(a, x)) with eager's special values: NaN for a < 0 or x < 0 or a = x = 0
    or both infinite; P = 1 at a = 0 < x and at x = inf; P = 0 at x = 0 and at a = inf."""
    special = either(a <= 0.0, x <= 0.0, isinf(a), isinf(x), isnan(a), isnan(x))
    a1, x1 = select(special, 1.0, a), select(special, 1.0, x)  # the loops see harmless values
    log_x = log(x1)
    pair = [f64(), f64()]
    p, q = if_else(a1 > TEMME_FROM, pair, lambda: _gamma_temme(a1, x1),
                   lambda: if_else(x1 < a1 + 1.0, pair, lambda: _gamma_series(a1, x1, log_x),
                                   lambda: _gamma_fraction(a1, x1, log_x)))
    cases = [(either(a < 0.0, x < 0.0), (NAN, NAN)), (a.eq(0.0), (select(x > 0.0, 1.0, NAN), select(x > 0.0, 0.0, NAN))),
             (x.eq(0.0), (0.0, 1.0)), (isinf(a), (select(isinf(x), NAN, 0.0), select(isinf(x), NAN, 1.0))),
             (isinf(x), (1.0, 0.0)), (either(isnan(a), isnan(x)), (NAN, NAN))]
    return (choose(p, *[(c, v[0]) for c, v in cases]), choose(q, *[(c, v[1]) for c, v in cases]))


def igamma(a: Scalar, x: Scalar) -> Scalar:
    return _igamma_pair(a, x)[0]


def igammac(a: Scalar, x: Scalar) -> Scalar:
    return _igamma_pair(a, x)[1]


# ----------------------------------------------------------------------------- nextafter


def nextafter(a: ir.Value, b: ir.Value) -> ir.Value:
    """In a's own float type: b if a == b, NaN if either is NaN, the smallest subnormal with
    b's sign from +-0, else the bit pattern one step away from or towards zero."""
    t = a.type
    it = ir.IntegerType.get_signless(ir.FloatType(t).width)
    cmp = lambda pred, x, y: arith.cmpf(getattr(arith.CmpFPredicate, pred), x, y)
    bits = arith.bitcast(it, a)
    sign = arith.andi(arith.bitcast(it, b), const(it, -(1 << (ir.FloatType(t).width - 1))))  # the sign bit
    tiny = arith.bitcast(t, arith.ori(sign, const(it, 1)))
    away = (~Scalar(arith.xori(cmp("OGT", b, a), cmp("OGT", a, const(t, 0.0))))).v
    stepped = arith.bitcast(t, arith.select(away, arith.addi(bits, const(it, 1)), arith.subi(bits, const(it, 1))))
    out = arith.select(cmp("OEQ", a, const(t, 0.0)), tiny, stepped)
    out = arith.select(cmp("OEQ", a, b), b, out)
    return arith.select(cmp("UNO", a, b), arith.addf(a, b), out)


# op name -> its f64 body (nextafter, which works in its operands' own type, is separate)
UNARY = {"lgamma": lgamma, "digamma": digamma, "erfinv": erfinv, "ndtri": ndtri, "erfcx": erfcx}
BINARY = {"zeta": zeta, "igamma": igamma, "igammac": igammac}
