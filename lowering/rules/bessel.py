"""Orthogonal polynomials and Bessel functions -> one linalg.generic each, whose scalar body runs
a loop (scf.while) over a recurrence or a series.

Polynomials follow PyTorch's scalar kernels step for step, in f32 (the import rule keeps f64
eager): the same special cases (n < 0, |x| == 1, the trigonometric forms for large n), then the
three-term recurrence in the same operation order, its fused multiply-add emulated in f64, so
results agree with eager to the last bit.

Bessel functions are computed in f64 from their mathematics and rounded to the operand's type
(f32, bf16, f16 only; the import rule keeps f64 eager): a power series for small |x|, the
Hankel/asymptotic expansion for large |x| (its smallest term is about e^(-2|x|), so beyond the
switch point SWITCH it is below 1e-15), and for K0/K1 between 0 and SWITCH the trapezoid rule on
K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt, which converges geometrically in 1/h.
Airy Ai combines the same pieces (Maclaurin series, K_1/3, an asymptotic expansion). Where eager's
f32 kernel is dominated by rounding the phase of an oscillating expansion to f32 (J, Y, Ai for
large |x|), that one rounding is repeated, so results follow eager rather than the mathematics.

The loops live inside the generic's body; the CUDA pipeline is not taught them, so every rule
requires the "scalar_math" capability (CUDA keeps these ops eager).
"""

import math as pymath

import numpy as np

from torch_mlir import ir
from torch_mlir.dialects import arith, math, scf

from ...dialects import bessel as bz
from ..registry import register_lowering
from ..scalar import const
from .common import elementwise, ranked

def _f64():
    return ir.F64Type.get()


def _i64():
    return ir.IntegerType.get_signless(64)


# ----------------------------------------------------------------------------- scalar algebra


class S:
    """A scalar SSA value with Python operators, so formulas read like the mathematics.
    Python numbers mix in as constants of the other operand's type."""

    def __init__(self, value: ir.Value):
        self.v = value

    @property
    def type(self):
        return self.v.type

    @property
    def is_float(self):
        return isinstance(self.type, ir.FloatType)

    def _lift(self, other) -> ir.Value:
        return other.v if isinstance(other, S) else const(self.type, other)

    def _bin(self, other, fop, iop, swap=False):
        a, b = self.v, self._lift(other)
        if swap:
            a, b = b, a
        return S((fop if self.is_float else iop)(a, b))

    def __add__(self, o): return self._bin(o, arith.addf, arith.addi)
    def __radd__(self, o): return self._bin(o, arith.addf, arith.addi, swap=True)
    def __sub__(self, o): return self._bin(o, arith.subf, arith.subi)
    def __rsub__(self, o): return self._bin(o, arith.subf, arith.subi, swap=True)
    def __mul__(self, o): return self._bin(o, arith.mulf, arith.muli)
    def __rmul__(self, o): return self._bin(o, arith.mulf, arith.muli, swap=True)
    def __truediv__(self, o): return self._bin(o, arith.divf, arith.divsi)
    def __rtruediv__(self, o): return self._bin(o, arith.divf, arith.divsi, swap=True)
    def __neg__(self): return S(arith.negf(self.v)) if self.is_float else 0 - self

    def _cmp(self, o, fpred, ipred):
        if self.is_float:
            return S(arith.cmpf(getattr(arith.CmpFPredicate, fpred), self.v, self._lift(o)))
        return S(arith.cmpi(getattr(arith.CmpIPredicate, ipred), self.v, self._lift(o)))

    # Ordered float predicates: NaN compares false, as in C.
    def __lt__(self, o): return self._cmp(o, "OLT", "slt")
    def __le__(self, o): return self._cmp(o, "OLE", "sle")
    def __gt__(self, o): return self._cmp(o, "OGT", "sgt")
    def __ge__(self, o): return self._cmp(o, "OGE", "sge")
    def eq(self, o): return self._cmp(o, "OEQ", "eq")
    def ne(self, o): return self._cmp(o, "UNE", "ne")

    def __and__(self, o): return S(arith.andi(self.v, o.v))
    def __or__(self, o): return S(arith.ori(self.v, o.v))
    def __invert__(self): return S(arith.xori(self.v, const(self.type, 1)))


def lift(fn):
    """A math-dialect function on S values."""
    return lambda *xs: S(fn(*[x.v for x in xs]))


sin, cos, acos, exp, log, sqrt, absf, cosh = map(
    lift, (math.sin, math.cos, math.acos, math.exp, math.log, math.sqrt, math.absf, math.cosh))


def fma(a: S, b: S, c: S) -> S:
    """a * b + c rounded once: PyTorch's CPU kernels are built with FMA contraction, so its
    `a * b - c` in a recurrence is one fused operation. (math.fma itself is expanded to a
    multiply and an add by the CPU pipeline.) For f32 the f64 product is exact, so the f64 sum
    rounded to f32 is the fused result (up to a double rounding that needs a tie: rare)."""
    if ir.FloatType(a.type).width != 32:
        raise NotImplementedError("fused multiply-add is exact only for f32 operands")
    wide = [S(arith.extf(_f64(), v.v)) for v in (a, b, c)]
    return S(arith.truncf(a.type, (wide[0] * wide[1] + wide[2]).v))


def isnan(x: S) -> S:
    return S(arith.cmpf(arith.CmpFPredicate.UNO, x.v, x.v))


def select(cond: S, a, b) -> S:
    a = a if isinstance(a, S) else S(const(b.type, a))
    b = b if isinstance(b, S) else S(const(a.type, b))
    return S(arith.select(cond.v, a.v, b.v))


def to_float(n: S, t: ir.Type) -> S:
    """C's int64 -> float conversion."""
    return S(arith.sitofp(t, n.v))


def first(cases, otherwise: S) -> S:
    """The value of the first (condition, value) pair whose condition holds, else `otherwise`."""
    result = otherwise
    for cond, value in reversed(cases):
        result = select(cond, value, result)
    return result


def while_loop(inits: list[S], cond, body) -> list[S]:
    """scf.while: `cond(*state) -> S(i1)` checked before each `body(*state) -> new state`."""
    types = [s.type for s in inits]
    loop = scf.WhileOp(types, [s.v for s in inits])
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        state = [S(a) for a in before.arguments]
        scf.ConditionOp(cond(*state).v, [s.v for s in state])
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        scf.YieldOp([s.v for s in body(*[S(a) for a in after.arguments])])
    return [S(r) for r in loop.results]


# ----------------------------------------------------------------------------- polynomials
# Each polynomial is PyTorch's kernel as data: `cases(x, n, nf)` lists (condition, value) checked
# in order (n is the int64 degree, nf = float(n)), then the recurrence
#   r = step(x, k, p, q); p, q = q, r   for k = k0 while k < end(n) (and q is not NaN if nan_stop),
# from (p, q) = (1, q0(x)); the result is q.


def _even(n: S) -> S:
    return S(arith.andi(n.v, const(n.type, 1))).eq(0)


def _odd_sign(n: S, value: S) -> S:
    """value for even n, -value for odd n."""
    return select(_even(n), value, -value)


def _trig_t(z: S, nf: S) -> S:
    return cos(nf * acos(z))


def _trig_u(z: S, nf: S) -> S:
    t = acos(z)
    m = nf + 1.0
    return select(sin(t).ne(0.0), sin(m * t) / sin(t), m * cos(m * t) / z)


def _trig_v(z: S, nf: S, n: S) -> S:
    t = acos(z)
    return select(sin(t / 2.0).ne(1.0), cos((nf + 0.5) * t) / cos(t / 2.0), _odd_sign(n, _f(n + n + 1, z)))


def _trig_w(z: S, nf: S, at_one: S) -> S:
    t = acos(z)
    return select(cos(t / 2.0).ne(1.0), sin((nf + 0.5) * t) / sin(t / 2.0), at_one)


def _f(n: S, like: S) -> S:
    return to_float(n, like.type)


def _chebyshev(kind: str):
    """Chebyshev T/U/V/W: cases at |x| == 1, trig forms for |x| < 1 beyond a degree, then the
    recurrence r = 2x q - p from q0 = x, 2x, 2x - 1, 2x + 1."""
    def cases(x, n, nf):
        at1 = (absf(x).eq(1.0))
        pos = x > 0.0
        k2 = _f(n + n + 1, x)
        inside = absf(x) < 1.0
        value_at_1 = {
            "t": select(pos | _even(n), S(const(x.type, 1.0)), -1.0),
            "u": select(pos | _even(n), _f(n + 1, x), -_f(n + 1, x)),
            "v": select(pos, 1.0, _odd_sign(n, k2)),
            "w": select(pos, k2, _odd_sign(n, S(const(x.type, 1.0)))),
        }[kind]
        trig = {
            "t": (6, lambda: _trig_t(x, nf)), "u": (8, lambda: _trig_u(x, nf)),
            "v": (8, lambda: _trig_v(x, nf, n)),
            "w": (8, lambda: _trig_w(x, nf, select(pos, k2, _odd_sign(n, S(const(x.type, 1.0)))))),
        }[kind]
        q1 = {"t": x, "u": x + x, "v": x + x - 1.0, "w": x + x + 1.0}[kind]
        return [(n < 0, 0.0), (at1, value_at_1), ((n > trig[0]) & inside, trig[1]()),
                (n.eq(0), 1.0), (n.eq(1), q1)]
    q0 = {"t": lambda x: x, "u": lambda x: x + x, "v": lambda x: x + x - 1.0, "w": lambda x: x + x + 1.0}[kind]
    return dict(cases=cases, q0=q0, k0=2, end=lambda n: n + 1, nan_stop=True,
                step=lambda x, k, p, q: fma(x + x, q, -p))


def _shifted(kind: str):
    """Shifted Chebyshev: the same in y = 2x - 1, with cases at x == 1 and x == 0."""
    def cases(x, n, nf):
        y = x + x - 1.0
        one = S(const(x.type, 1.0))
        k2 = _f(n + n + 1, x)
        inside = absf(y) < 1.0
        at_x1 = {"t": one, "u": _f(n + 1, x), "v": one, "w": k2}[kind]
        at_x0 = {"t": _odd_sign(n, one), "u": _odd_sign(n, _f(n + 1, x)), "v": _odd_sign(n, k2),
                 "w": _odd_sign(n, one)}[kind]
        trig = {"t": (6, lambda: _trig_t(y, nf)), "u": (6, lambda: _trig_u(y, nf)),
                "v": (6, lambda: _trig_v(y, nf, n)), "w": (4, lambda: _trig_w(y, nf, _odd_sign(n, one)))}[kind]
        q1 = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
        return [(n < 0, 0.0), (x.eq(1.0), at_x1), (x.eq(0.0), at_x0), ((n > trig[0]) & inside, trig[1]()),
                (n.eq(0), 1.0), (n.eq(1), q1)]
    q0 = {"t": lambda y: y, "u": lambda y: y + y, "v": lambda y: y + y - 1.0, "w": lambda y: y + y + 1.0}[kind]
    return dict(cases=cases, q0=lambda x: q0(x + x - 1.0), k0=2, end=lambda n: n + 1, nan_stop=True,
                step=lambda x, k, p, q: fma((x + x - 1.0) + (x + x - 1.0), q, -p))


def _hermite_limit(x: S) -> int:
    """Above this degree PyTorch returns NaN (its kernel's cut-off per type)."""
    return 128 if ir.FloatType(x.type).width == 32 else 512


def _hermite(physicists: bool):
    def cases(x, n, nf):
        nan = S(const(x.type, pymath.nan))
        return [(n < 0, 0.0), (n.eq(0), 1.0), (n.eq(1), x + x if physicists else x),
                (n > _hermite_limit(x), nan)]
    if physicists:  # r = 2x q - 2j p, j = 1 .. n-1 (PyTorch's k = 2j)
        step = lambda x, j, p, q: fma(x + x, q, -(_f(j + j, x) * p))
        return dict(cases=cases, q0=lambda x: x + x, k0=1, end=lambda n: n, nan_stop=False, step=step)
    return dict(cases=cases, q0=lambda x: x, k0=1, end=lambda n: n, nan_stop=False,
                step=lambda x, k, p, q: fma(x, q, -(_f(k, x) * p)))


def _laguerre_step(x, k, p, q):
    return fma(_f(k + k, x) + (1.0 - x), q, -(_f(k, x) * p)) / _f(k + 1, x)


def _legendre_step(x, k, p, q):
    return fma(_f(k + k + 1, x) * x, q, -(_f(k, x) * p)) / _f(k + 1, x)


LAGUERRE = dict(cases=lambda x, n, nf: [(n < 0, 0.0), (absf(x).eq(0.0), 1.0), (n.eq(0), 1.0), (n.eq(1), 1.0 - x)],
                q0=lambda x: 1.0 - x, k0=1, end=lambda n: n, nan_stop=True, step=_laguerre_step)
LEGENDRE = dict(cases=lambda x, n, nf: [(n < 0, 0.0),
                                        (absf(x).eq(1.0), select((x > 0.0) | _even(n), S(const(x.type, 1.0)), -1.0)),
                                        (n.eq(0), 1.0), (n.eq(1), x)],
                q0=lambda x: x, k0=1, end=lambda n: n, nan_stop=True, step=_legendre_step)

POLYNOMIALS = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _shifted(k) for k in "tuvw"},
    "hermite_polynomial_h": _hermite(True), "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": LAGUERRE, "legendre_polynomial_p": LEGENDRE,
}


def degree(nf: S) -> S:
    """static_cast<int64_t>(n) as x86 does it: NaN, +-inf and out-of-range give INT64_MIN."""
    in_range = absf(nf) < 2.0 ** 63
    safe = select(in_range, nf, 0.0)
    return select(in_range, S(arith.fptosi(_i64(), safe.v)), S(const(_i64(), -(1 << 63))))


def polynomial(spec, xv: ir.Value, nv: ir.Value) -> ir.Value:
    x, nf = S(xv), S(nv)
    n = degree(nf)
    cases = [(c, v if isinstance(v, S) else S(const(x.type, v))) for c, v in spec["cases"](x, n, _f(n, x))]
    settled = cases[0][0]
    for c, _ in cases[1:]:
        settled = settled | c
    # The loop runs only where no case applies (a case's degree may be huge).
    def go_on(k, p, q):
        more = (~settled) & (k < spec["end"](n))
        return more & ~isnan(q) if spec["nan_stop"] else more
    def step(k, p, q):
        return [k + 1, q, spec["step"](x, k, p, q)]
    _, _, q = while_loop([S(const(_i64(), spec["k0"])), S(const(x.type, 1.0)), spec["q0"](x)], go_on, step)
    return first(cases, q).v


def _lower_polynomial(op):
    spec = POLYNOMIALS[op.name.split(".", 1)[1]]
    return elementwise([op.lhs, op.rhs], ranked(op.out), lambda x, n: polynomial(spec, x, n))


for _name, _cls in bz.POLYNOMIAL_CLASSES.items():
    register_lowering(_cls, _lower_polynomial, requires={"scalar_math"})


# ----------------------------------------------------------------------------- Bessel functions
# Everything below works on f64 scalars (S values); `_lower_bessel` widens and rounds back.

SWITCH = 20.0     # I, K: series / quadrature below, asymptotic expansion above (error ~ e^-40)
SWITCH_J = 18.0   # J, Y: the alternating series loses ~log10(I0(x)) digits, so switch earlier
EPS = 1e-17       # a series stops when its term is this small relative to its sum
EULER = 0.57721566490153286061
H = 0.1           # trapezoid step for K: error ~ e^(-2 pi d / h) e^(x (1 - cos d)), d = pi/3
MAX_STEPS = 4000  # trapezoid points; reached only for subnormal-sized x (t up to acosh(42/x))


def c64(value) -> S:
    return S(const(_f64(), value))


def _small(t: S, s: S) -> S:
    return absf(t) <= absf(s) * EPS


def power_series(t0: S, ratio, limit: int = 200) -> S:
    """sum_k t_k with t_{k+1} = t_k * ratio(k), k from 0, until a term is negligible."""
    def cond(k, t, s):
        return ~_small(t, s) & (k < limit)
    def body(k, t, s):
        nxt = t * ratio(to_float(k, _f64()))
        return [k + 1, nxt, s + nxt]
    return while_loop([S(const(_i64(), 0)), t0, t0], cond, body)[2]


def split_alternating(ratio, kmax: S) -> tuple[S, S]:
    """(P, Q) = (c_0 - c_2 + c_4 - ..., c_1 - c_3 + c_5 - ...) for c_0 = 1, c_k = c_{k-1} ratio(k)
    (k as f64): the shape of the Hankel expansions of J/Y and of Airy's for x < 0. Stops at a
    negligible term or at k = kmax, where an asymptotic series starts to diverge."""
    def cond(k, c, p, q):
        return ~(absf(c) <= EPS) & (to_float(k, _f64()) < kmax)
    def body(k, c, p, q):
        kf = to_float(k + 1, _f64())
        odd = kf - 2.0 * S(math.floor((kf / 2.0).v)) > 0.5  # k + 1 odd
        flip = select(odd, 1.0, c64(-1.0))                   # the (-1)^k of P and Q
        nxt = c * ratio(kf) * flip
        return [k + 1, nxt, select(odd, p, p + nxt), select(odd, q + nxt, q)]
    _, _, p, q = while_loop([S(const(_i64(), 0)), c64(1.0), c64(1.0), c64(0.0)], cond, body)
    return p, q


def hankel(nu: int, ax: S) -> tuple[S, S]:
    """(P, Q) of the Hankel expansion of J_nu/Y_nu: c_k = c_{k-1} (4 nu^2 - (2k-1)^2) / (8 k x)."""
    mu = 4.0 * nu * nu
    return split_alternating(lambda k: (mu - (k + k - 1.0) * (k + k - 1.0)) / (8.0 * k * ax), ax + ax)


def asymptotic_ik(nu: float, ax: S, sign: float) -> S:
    """sum_k c_k with c_k = c_{k-1} * sign * ((2k-1)^2 - 4 nu^2) / (8 k x): sign +1 for
    e^-x sqrt(2 pi x) I_nu(x), -1 for e^x sqrt(2 x / pi) K_nu(x)."""
    mu = 4.0 * nu * nu
    def cond(k, c, s):
        return ~_small(c, s) & (to_float(k, _f64()) < ax + ax)
    def body(k, c, s):
        kf = to_float(k + 1, _f64())
        nxt = c * (((kf + kf - 1.0) * (kf + kf - 1.0) - mu) * sign) / (8.0 * kf * ax)
        return [k + 1, nxt, s + nxt]
    return while_loop([S(const(_i64(), 0)), c64(1.0), c64(1.0)], cond, body)[2]


def bessel_i_scaled(nu: int, x: S) -> S:
    """e^-|x| I_nu(x): the power series (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!) (positive terms)
    up to SWITCH, the asymptotic expansion beyond."""
    ax = absf(x)
    q = x * x / 4.0
    t0 = c64(1.0) if nu == 0 else x / 2.0
    series = power_series(t0, lambda k: q / ((k + 1.0) * (k + 1.0 + nu))) * exp(-ax)
    large = asymptotic_ik(nu, select(ax > SWITCH, ax, c64(SWITCH)), 1.0) / sqrt(2.0 * pymath.pi * ax)
    if nu == 1:
        large = S(math.copysign(large.v, x.v))
    return select(ax > SWITCH, large, series)


def bessel_k_scaled(nu: float, x: S) -> S:
    """e^x K_nu(x) for x > 0: the trapezoid rule on int_0^inf e^(-x (cosh t - 1)) cosh(nu t) dt
    up to SWITCH (where the sum is positive and converges geometrically), the asymptotic
    expansion beyond. 0 -> inf, negative or NaN -> NaN, inf -> 0."""
    active = (x > 0.0) & (x <= SWITCH)
    xs = select(active, x, c64(1.0))
    def f(t):
        sh = S(math.sinh((t / 2.0).v))
        return exp(-(xs * 2.0 * sh * sh)) * (cosh(t * float(nu)) if nu else c64(1.0))
    def cond(j, s, term):
        past_peak = xs * cosh(to_float(j, _f64()) * H) > 1.0
        return active & ~(_small(term, s) & past_peak) & (j < MAX_STEPS)
    def body(j, s, term):
        nxt = f(to_float(j + 1, _f64()) * H)
        return [j + 1, s + nxt, nxt]
    _, s, _ = while_loop([S(const(_i64(), 0)), c64(0.5), c64(1.0)], cond, body)
    quad = s * H
    xl = select(x > SWITCH, x, c64(SWITCH))
    large = asymptotic_ik(nu, xl, -1.0) * sqrt(pymath.pi / (2.0 * xl))
    value = select(x > SWITCH, large, quad)
    value = select(x.eq(pymath.inf), c64(0.0), value)
    value = select(x.eq(0.0), c64(pymath.inf), value)
    return select((x < 0.0) | isnan(x), c64(pymath.nan), value)


def _phase(nu: int, ax: S) -> tuple[S, S]:
    """(cos chi, sin chi), chi = x - (2 nu + 1) pi / 4 rounded to f32 as eager's f32 kernel
    rounds it: for large x that rounding (not the expansion) dominates eager's result, e.g.
    J0(1e6) is off by 6% there, and we follow it."""
    c32 = float(np.float32((2 * nu + 1) * pymath.pi / 4))
    chi = S(arith.extf(_f64(), arith.truncf(ir.F32Type.get(), (ax - c32).v)))
    return cos(chi), sin(chi)


def bessel_jy(nu: int, x: S, want_y: bool) -> S:
    """J_nu or Y_nu. |x| <= SWITCH_J: the power series; J's terms are
    u_k = (x/2)^nu (-x^2/4)^k / (k! (k+nu)!), and
      Y0 = (2/pi) [(ln(x/2) + gamma) J0 - sum H_k u_k],
      Y1 = (2/pi) (ln(x/2) + gamma) J1 - 2/(pi x) - (1/pi) sum (H_k + H_{k+1}) u_k
    (H_k harmonic numbers). Beyond: sqrt(2/(pi x)) (P cos chi - Q sin chi), Y with P sin + Q cos."""
    ax = absf(x)
    xs = select(ax <= SWITCH_J, x, c64(1.0))  # keeps the series loop short where it is unused
    q = xs * xs / 4.0
    t0 = c64(1.0) if nu == 0 else xs / 2.0
    ratio = lambda k: -q / ((k + 1.0) * (k + 1.0 + nu))
    # Y's weights of u_k: H_k (Y0) or H_k + H_{k+1} = 2 H_k + 1/(k+1) (Y1); at k = 0: 0 or 1
    weight = (lambda k, h: h) if nu == 0 else (lambda k, h: h + h + 1.0 / (k + 1.0))
    w0 = c64(0.0) if nu == 0 else t0
    s, _, w = _series_with_harmonics(t0, ratio, weight, w0)
    if not want_y:
        xl = select(ax > SWITCH_J, ax, c64(SWITCH_J))
        p, qq = hankel(nu, xl)
        cchi, schi = _phase(nu, xl)
        large = (p * cchi - qq * schi) * sqrt(2.0 / (pymath.pi * xl))
        if nu == 1:
            large = select(x < 0.0, -large, large)  # J1 is odd
        return select(isnan(x), x, select(ax > SWITCH_J, large, s))
    lg = log(xs / 2.0) + EULER
    small = (2.0 / pymath.pi) * (lg * s - w) if nu == 0 else \
        (2.0 / pymath.pi) * lg * s - 2.0 / (pymath.pi * xs) - (1.0 / pymath.pi) * w
    xl = select(x > SWITCH_J, x, c64(SWITCH_J))
    p, qq = hankel(nu, xl)
    cchi, schi = _phase(nu, xl)
    large = (p * schi + qq * cchi) * sqrt(2.0 / (pymath.pi * xl))
    value = select(x > SWITCH_J, large, small)
    value = select(x.eq(0.0), c64(-pymath.inf), value)
    return select((x < 0.0) | isnan(x), c64(pymath.nan), value)


def _series_with_harmonics(t0: S, ratio, weight, w0: S, limit: int = 200) -> list[S]:
    """(sum t_k, H_k at the end, sum weight(k, H_k) t_k) for the Y series."""
    def cond(k, t, s, h, w):
        return ~_small(t, s) & (k < limit)
    def body(k, t, s, h, w):
        kf = to_float(k, _f64())
        nxt = t * ratio(kf)
        h1 = h + 1.0 / (kf + 1.0)
        return [k + 1, nxt, s + nxt, h1, w + weight(kf + 1.0, h1) * nxt]
    out = while_loop([S(const(_i64(), 0)), t0, t0, c64(0.0), w0], cond, body)
    return out[2], out[3], out[4]


def spherical_j0(x: S) -> S:
    value = select(x.eq(0.0), c64(1.0), sin(x) / x)
    return select(absf(x).eq(pymath.inf), c64(0.0), value)


# ----------------------------------------------------------------------------- Airy Ai

AI0 = 1.0 / (3.0 ** (2.0 / 3.0) * pymath.gamma(2.0 / 3.0))   # Ai(0)
AIP0 = 1.0 / (3.0 ** (1.0 / 3.0) * pymath.gamma(1.0 / 3.0))  # -Ai'(0)
AIRY_ZETA = 15.0  # x < 0: Maclaurin series while zeta = (2/3)|x|^(3/2) <= this, else asymptotic


def airy_maclaurin(x: S) -> S:
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f = sum a_k, a_k = a_{k-1} x^3 / ((3k-1) 3k), a_0 = 1,
    g = sum b_k, b_k = b_{k-1} x^3 / (3k (3k+1)), b_0 = x. Used for -8 < x <= 1, where the
    alternating terms grow at most to e^zeta ~ 3e6 (1e-10 absolute error)."""
    z = x * x * x
    def cond(k, a, b, f, g):
        return ~(absf(a) + absf(b) <= (absf(f) + absf(g)) * EPS) & (k < 200)
    def body(k, a, b, f, g):
        k3 = to_float(k + 1, _f64()) * 3.0
        a1, b1 = a * z / ((k3 - 1.0) * k3), b * z / (k3 * (k3 + 1.0))
        return [k + 1, a1, b1, f + a1, g + b1]
    _, _, _, f, g = while_loop([S(const(_i64(), 0)), c64(1.0), x, c64(1.0), x], cond, body)
    return AI0 * f - AIP0 * g


def airy_negative(x: S) -> S:
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
    r32 = lambda v: S(arith.extf(_f64(), arith.truncf(f32, v.v)))  # one f32 rounding
    phi = r32(r32(r32(r32(-2.0 * x) * r32(sqrt(z))) / 3.0) + float(np.float32(pymath.pi / 4)))
    return (sin(phi) * p - cos(phi) * q) / sqrt(sqrt(z)) / pymath.sqrt(pymath.pi)


def airy_ai(x: S) -> S:
    """Ai: the asymptotic expansion for x < -(1.5 AIRY_ZETA)^(2/3), the Maclaurin series up to 1,
    beyond it Ai(x) = sqrt(x/3) K_{1/3}(zeta) / pi. +-inf give NaN (as eager), x > 103.892 gives 0
    (eager's cut-off; Ai is below the f32 range there anyway)."""
    x_neg = -((1.5 * AIRY_ZETA) ** (2.0 / 3.0))
    xn = select(x < x_neg, x, c64(x_neg - 1.0))
    xm = select((x >= x_neg) & (x <= 1.0), x, c64(0.0))
    xp = select(x > 1.0, x, c64(2.0))
    zeta = 2.0 * xp * sqrt(xp) / 3.0
    positive = sqrt(xp / 3.0) * bessel_k_scaled(1.0 / 3.0, zeta) * exp(-zeta) / pymath.pi
    value = select(x < x_neg, airy_negative(xn), select(x <= 1.0, airy_maclaurin(xm), positive))
    value = select(x > 103.892, c64(0.0), value)
    return select(absf(x).eq(pymath.inf) | isnan(x), c64(pymath.nan), value)


EXPF_OVERFLOW = 88.72283911167299960  # ln(FLT_MAX): f32 exp overflows beyond it


def bessel_i(nu: int, x: S) -> S:
    """I_nu as eager's f32 kernel gives it: e^|x| times a bounded factor, so inf (with x's sign for
    I1) once f32 exp(|x|) overflows though I_nu itself is still finite, and NaN at +-inf (inf/inf)."""
    value = bessel_i_scaled(nu, x) * exp(absf(x))
    overflow = c64(pymath.inf) if nu == 0 else S(math.copysign(c64(pymath.inf).v, x.v))
    value = select(absf(x) > EXPF_OVERFLOW, overflow, value)
    return select(absf(x).eq(pymath.inf), c64(pymath.nan), value)


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


def _lower_bessel(op):
    fn = BESSEL[op.name.split(".", 1)[1]]
    out = ranked(op.out)

    def body(x):
        # Through f32 on the way back: bf16/f16 round as eager's f32 kernel result does.
        y = fn(S(arith.extf(_f64(), x) if x.type != _f64() else x)).v
        y = arith.truncf(ir.F32Type.get(), y)
        return y if out.element_type == ir.F32Type.get() else arith.truncf(out.element_type, y)

    return elementwise([op.x], out, body)


for _name in BESSEL:
    register_lowering(bz.BESSEL_CLASSES[_name], _lower_bessel, requires={"scalar_math"})
