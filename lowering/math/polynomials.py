"""Orthogonal polynomials (Chebyshev, shifted Chebyshev, Hermite, Laguerre, Legendre): scalar
bodies that follow PyTorch's scalar kernels step for step, in the operand's type (f32: the import
rule keeps f64 eager). The same special cases (n < 0, |x| == 1, the trigonometric forms for
large n), then the three-term recurrence in a scf.while, in the same operation order, its fused
multiply-add emulated in f64, so results agree with eager to the last bit.
"""

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith

from ..loops import while_loop
from ..scalar import Scalar, acos, choose, cos, f64, fabs, i64, isnan, select, sin, to_float


def fma(a: Scalar, b: Scalar, c: Scalar) -> Scalar:
    """a * b + c rounded once: PyTorch's CPU kernels are built with FMA contraction, so its
    `a * b - c` in a recurrence is one fused operation. (math.fma itself is expanded to a
    multiply and an add by the CPU pipeline.) For f32 the f64 product is exact, so the f64 sum
    rounded to f32 is the fused result (up to a double rounding that needs a tie: rare)."""
    if ir.FloatType(a.type).width != 32:
        raise NotImplementedError("fused multiply-add is exact only for f32 operands")
    wide = [Scalar(arith.extf(f64(), v.v)) for v in (a, b, c)]
    return Scalar(arith.truncf(a.type, (wide[0] * wide[1] + wide[2]).v))


# Each polynomial is PyTorch's kernel as data: `cases(x, n, nf)` lists (condition, value) checked
# in order (n is the int64 degree, nf = float(n)), then the recurrence
#   r = step(x, k, p, q); p, q = q, r   for k = k0 while k < end(n) (and q is not NaN if nan_stop),
# from (p, q) = (1, q0(x)); the result is q.


def _even(n: Scalar) -> Scalar:
    return (n & 1).eq(0)


def _odd_sign(n: Scalar, value: Scalar) -> Scalar:
    """value for even n, -value for odd n."""
    return select(_even(n), value, -value)


def _trig_t(z: Scalar, nf: Scalar) -> Scalar:
    return cos(nf * acos(z))


def _trig_u(z: Scalar, nf: Scalar) -> Scalar:
    t = acos(z)
    m = nf + 1.0
    return select(sin(t).ne(0.0), sin(m * t) / sin(t), m * cos(m * t) / z)


def _trig_v(z: Scalar, nf: Scalar, n: Scalar) -> Scalar:
    t = acos(z)
    return select(sin(t / 2.0).ne(1.0), cos((nf + 0.5) * t) / cos(t / 2.0), _odd_sign(n, _f(n + n + 1, z)))


def _trig_w(z: Scalar, nf: Scalar, at_one: Scalar) -> Scalar:
    t = acos(z)
    return select(cos(t / 2.0).ne(1.0), sin((nf + 0.5) * t) / sin(t / 2.0), at_one)


def _f(n: Scalar, like: Scalar) -> Scalar:
    return to_float(n, like.type)


def _chebyshev(kind: str):
    """Chebyshev T/U/V/W: cases at |x| == 1, trig forms for |x| < 1 beyond a degree, then the
    recurrence r = 2x q - p from q0 = x, 2x, 2x - 1, 2x + 1."""
    def cases(x, n, nf):
        at1 = (fabs(x).eq(1.0))
        pos = x > 0.0
        k2 = _f(n + n + 1, x)
        inside = fabs(x) < 1.0
        value_at_1 = {
            "t": select(pos | _even(n), Scalar.of(1.0, x.type), -1.0),
            "u": select(pos | _even(n), _f(n + 1, x), -_f(n + 1, x)),
            "v": select(pos, 1.0, _odd_sign(n, k2)),
            "w": select(pos, k2, _odd_sign(n, Scalar.of(1.0, x.type))),
        }[kind]
        trig = {
            "t": (6, lambda: _trig_t(x, nf)), "u": (8, lambda: _trig_u(x, nf)),
            "v": (8, lambda: _trig_v(x, nf, n)),
            "w": (8, lambda: _trig_w(x, nf, select(pos, k2, _odd_sign(n, Scalar.of(1.0, x.type))))),
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
        one = Scalar.of(1.0, x.type)
        k2 = _f(n + n + 1, x)
        inside = fabs(y) < 1.0
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


def _hermite_limit(x: Scalar) -> int:
    """Above this degree PyTorch returns NaN (its kernel's cut-off per type)."""
    return 128 if ir.FloatType(x.type).width == 32 else 512


def _hermite(physicists: bool):
    def cases(x, n, nf):
        nan = Scalar.of(pymath.nan, x.type)
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


LAGUERRE = dict(cases=lambda x, n, nf: [(n < 0, 0.0), (fabs(x).eq(0.0), 1.0), (n.eq(0), 1.0), (n.eq(1), 1.0 - x)],
                q0=lambda x: 1.0 - x, k0=1, end=lambda n: n, nan_stop=True, step=_laguerre_step)
LEGENDRE = dict(cases=lambda x, n, nf: [(n < 0, 0.0),
                                        (fabs(x).eq(1.0), select((x > 0.0) | _even(n), Scalar.of(1.0, x.type), -1.0)),
                                        (n.eq(0), 1.0), (n.eq(1), x)],
                q0=lambda x: x, k0=1, end=lambda n: n, nan_stop=True, step=_legendre_step)

POLYNOMIALS = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _shifted(k) for k in "tuvw"},
    "hermite_polynomial_h": _hermite(True), "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": LAGUERRE, "legendre_polynomial_p": LEGENDRE,
}


def degree(nf: Scalar) -> Scalar:
    """static_cast<int64_t>(n) as x86 does it: NaN, +-inf and out-of-range give INT64_MIN."""
    in_range = fabs(nf) < 2.0 ** 63
    safe = select(in_range, nf, 0.0)
    return select(in_range, Scalar(arith.fptosi(i64(), safe.v)), Scalar.of(-(1 << 63), i64()))


def polynomial(spec, xv: ir.Value, nv: ir.Value) -> ir.Value:
    x, nf = Scalar(xv), Scalar(nv)
    n = degree(nf)
    cases = [(c, Scalar.of(v, x.type)) for c, v in spec["cases"](x, n, _f(n, x))]
    settled = cases[0][0]
    for c, _ in cases[1:]:
        settled = settled | c
    # The loop runs only where no case applies (a case's degree may be huge).
    def go_on(k, p, q):
        more = (~settled) & (k < spec["end"](n))
        return more & ~isnan(q) if spec["nan_stop"] else more
    def step(k, p, q):
        return [k + 1, q, spec["step"](x, k, p, q)]
    _, _, q = while_loop([Scalar.of(spec["k0"], i64()), Scalar.of(1.0, x.type), spec["q0"](x)], go_on, step)
    return choose(q, *cases).v
