"""float32 exp, expm1, log, log1p, tanh and erf as branch-free arith: range reduction, a
polynomial, and selects for the special values, so that LLVM's loop vectorizer can run a loop
that computes them in SIMD registers (a libm call in the loop body keeps the loop scalar).

EXPANSIONS maps each math op's name to its builder (a float32 Scalar in, one out). The methods:

  exp    x = k ln2 + r (Cody-Waite: ln2 as a float32 pair, the product taken by fma, exact), with
         k rounded by adding 1.5 * 2^23; exp(r) = 1 + r + r^2 q(r); 2^k applied as two halves, so
         results near overflow (k = 128) and in the subnormals (k down to -150) round once
  expm1  the same reduction; 2^k (expm1(r) + 1) - 1 as fma(2^k, expm1(r), 2^k - 1)
  log    x = 2^e m with m in [sqrt(1/2), sqrt(2)) from the bits (subnormals scaled by 2^23 first);
         e ln2 + log1p(m - 1), log1p(f) = f + f^2 q(f)
  log1p  u = 1 + x and its rounding error c (Fast2Sum, exact), then log(u) + c / u as above
  tanh   odd; |x| < 0.625: x + x^3 q(x^2); beyond: 1 - 2 / (exp(2|x|) + 1)
  erf    odd; |x| < 1.25: x + x q(x^2); up to 3.92: 1 - a polynomial in |x| - 2.58; beyond: 1

The polynomials' coefficients come from lowering/math/approx_fit.py (weighted minimax fits in
float64 against mpmath, rounded to float32 one at a time); each table below gives the fit's max
error. Measured against the float64 function rounded to float32 over every 7th float32 bit pattern
(613M values; tests/test_cpu_math.py sweeps a sparser set and enforces these bounds): exp, expm1,
log, log1p and tanh are within 1 ulp (99.4% or more correctly rounded), erf within 2 ulp (2 values
at 2 ulp, near |x| = 1.225). The fused multiply-adds are math.fma (one rounding, which the
exactness of the reductions relies on): x86-64 since 2013 and every AArch64 core have the
instruction; without it LLVM calls libm's fmaf, still exact but one element at a time.
"""

from __future__ import annotations

import math as pymath
import struct

from torch_mlir import ir
from torch_mlir.dialects import arith, math

from ..scalar import Scalar, choose, copysign, fabs, select


def _f32(value: float) -> float:
    """value rounded to the nearest float32."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _bits_of(value: float) -> int:
    return struct.unpack("i", struct.pack("f", value))[0]


INF, NAN = pymath.inf, pymath.nan
LN2_HI = _f32(pymath.log(2))  # ln2 = LN2_HI + LN2_LO to ~2^-49 (products by fma are exact)
LN2_LO = _f32(pymath.log(2) - LN2_HI)
LOG2E = _f32(1 / pymath.log(2))
ROUND_SHIFT = 1.5 * 2 ** 23  # x + this rounds x (|x| < 2^22) to an integer, held in the low bits
FLT_MIN = 2.0 ** -126  # the smallest normal float32
SQRT_HALF_BITS = _bits_of(pymath.sqrt(0.5))  # the mantissa interval [sqrt(1/2), sqrt(2)) starts here

EXP_LOW, EXP_HIGH = -104.0, 89.0  # exp rounds to 0 below (< 2^-150) and overflows above (> 2^128)
EXPM1_LOW = -30.0  # expm1 is -1 in float32 below -17.4; beyond -30 2^k would leave the normals
TANH_SMALL = 0.625
ERF_SMALL = 1.25
ERF_ONE = float.fromhex("0x1.f5a88ap+1")  # 3.9192059, the least float32 whose erf rounds to 1
ERF_CENTRE = _f32((ERF_SMALL + ERF_ONE) / 2)

# exp(r) = 1 + r + r^2 q(r), |r| <= ln2/2: max relative error 0.053 x 2^-24.
EXP_Q = tuple(map(float.fromhex, (
    "0x1.fffffcp-2", "0x1.555492p-3", "0x1.5558bcp-5", "0x1.1239c6p-7", "0x1.6a4154p-10")))
# expm1(r) = r + r^2 q(r), |r| <= ln2/2: max relative error 0.007 x 2^-24.
EXPM1_Q = tuple(map(float.fromhex, (
    "0x1p-1", "0x1.555554p-3", "0x1.5554f8p-5", "0x1.1112d4p-7", "0x1.6d3a86p-10", "0x1.9e7d14p-13")))
# log1p(f) = f + f^2 q(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]: max relative error 0.070 x 2^-24.
LOG1P_Q = tuple(map(float.fromhex, (
    "-0x1.fffff8p-2", "0x1.55555p-2", "-0x1.000438p-2", "0x1.99a42ep-3", "-0x1.54240ep-3", "0x1.226a5ap-3",
    "-0x1.0f4d5cp-3", "0x1.0884e8p-3", "-0x1.385c3cp-4")))
# tanh(a) = a + a z q(z), z = a^2 < TANH_SMALL^2: max relative error 0.003 x 2^-24.
TANH_Q = tuple(map(float.fromhex, (
    "-0x1.555554p-2", "0x1.11107ap-3", "-0x1.b9f188p-5", "0x1.63a55p-6", "-0x1.0c5ecep-7", "0x1.1a27fep-9")))
# erf(a) = a + a q(z), z = a^2 < ERF_SMALL^2: max relative error 0.022 x 2^-24.
ERF_SMALL_Q = tuple(map(float.fromhex, (
    "0x1.06eba8p-3", "-0x1.81274p-2", "0x1.ce2dbcp-4", "-0x1.b810e6p-6", "0x1.55474ap-8", "-0x1.b46d5cp-11",
    "0x1.b0c454p-14", "-0x1.f27344p-18")))
# erf(a) = 1 - q(a - ERF_CENTRE), ERF_SMALL <= a < ERF_ONE (q is erfc, small: its coefficients
# round to little): max absolute error 0.029 x 2^-24.
ERF_LARGE_Q = tuple(map(float.fromhex, (
    "0x1.0d7c5cp-12", "-0x1.73634p-10", "0x1.dff284p-9", "-0x1.7e9224p-8", "0x1.9e646ep-8", "-0x1.3978fep-8",
    "0x1.3f3c3ap-9", "-0x1.5d8224p-11", "-0x1.857866p-14", "0x1.93683ap-13", "-0x1.53f83cp-14", "-0x1.ee7a5p-23",
    "0x1.78dbf4p-17", "-0x1.fcb0bep-20", "-0x1.bb478ep-22")))


# ----------------------------------------------------------------------------- building blocks


def _f32_type() -> ir.Type:
    return ir.F32Type.get()


def _i32_type() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _fma(a, b, c) -> Scalar:
    """a * b + c rounded once (numbers become float32 constants)."""
    a, b, c = (Scalar.of(v, _f32_type()).v for v in (a, b, c))
    return Scalar(math.fma(a, b, c))


def _horner(t: Scalar, coeffs) -> Scalar:
    """sum_j coeffs[j] t^j, one fma a step."""
    acc = Scalar.of(coeffs[-1], t.type)
    for c in reversed(coeffs[:-1]):
        acc = _fma(acc, t, c)
    return acc


def _bits(x: Scalar) -> Scalar:
    return Scalar(arith.bitcast(_i32_type(), x.v))


def _from_bits(i: Scalar) -> Scalar:
    return Scalar(arith.bitcast(_f32_type(), i.v))


def _shr(i: Scalar, n: int) -> Scalar:
    """Arithmetic (sign-keeping) shift right."""
    return Scalar(arith.shrsi(i.v, Scalar.of(n, i.type).v))


def _pow2(k: Scalar) -> Scalar:
    """2^k for an integer k in [-126, 127], built as the float's exponent bits."""
    return _from_bits(Scalar(arith.shli((k + 127).v, Scalar.of(23, k.type).v)))


def _clamp(x: Scalar, lo: float, hi: float) -> Scalar:
    """x limited to [lo, hi]; NaN stays NaN (its comparisons are false)."""
    return select(x > hi, hi, select(x < lo, lo, x))


def _reduce_ln2(x: Scalar) -> tuple[Scalar, Scalar]:
    """(k, r) with x = k ln2 + r, k an i32, |r| <= ln2/2, for |x| < 2^21."""
    shifted = _fma(x, LOG2E, ROUND_SHIFT)  # k in the low bits of the mantissa
    k_float = shifted - ROUND_SHIFT
    k = _bits(shifted) - _bits_of(ROUND_SHIFT)
    r = _fma(k_float, -LN2_HI, x)  # exact: the product is exact in the fma, the difference fits
    return k, _fma(k_float, -LN2_LO, r)


def _split_exponent(x: Scalar) -> tuple[Scalar, Scalar]:
    """(e, m) with x = 2^e m, m in [sqrt(1/2), sqrt(2)), for a positive normal x."""
    shifted = _bits(x) - SQRT_HALF_BITS
    e = _shr(shifted, 23)
    m = _from_bits(Scalar(arith.andi(shifted.v, Scalar.of(0x7FFFFF, shifted.type).v)) + SQRT_HALF_BITS)
    return e, m


def _log_of_split(e: Scalar, f: Scalar, extra) -> Scalar:
    """e ln2 + log1p(f) + extra, extra small; the big terms are added last, each rounded once."""
    e_float = Scalar(arith.sitofp(_f32_type(), e.v))
    tail = _fma(f * f, _horner(f, LOG1P_Q), _fma(e_float, LN2_LO, extra))
    return _fma(e_float, LN2_HI, f + tail)


# ----------------------------------------------------------------------------- the functions


def exp(x: Scalar) -> Scalar:
    k, r = _reduce_ln2(_clamp(x, EXP_LOW, EXP_HIGH))
    p = _fma(r * r, _horner(r, EXP_Q), r) + 1.0
    half = _shr(k, 1)
    return p * _pow2(half) * _pow2(k - half)  # the first product is exact, the second rounds once


def expm1(x: Scalar) -> Scalar:
    k, r = _reduce_ln2(_clamp(x, EXPM1_LOW, EXP_HIGH))
    em = _fma(r * r, _horner(r, EXPM1_Q), r)
    top = Scalar(arith.minsi(k.v, Scalar.of(127, k.type).v))  # k = 128 only where the result overflows
    scale = _pow2(top)
    y = _fma(scale, em, scale - 1.0) * _pow2(k - top)
    return select(x.eq(0.0), x, y)  # -0 stays -0


def log(x: Scalar) -> Scalar:
    subnormal = x < FLT_MIN
    e, m = _split_exponent(select(subnormal, x * 2.0 ** 23, x))
    e = e - select(subnormal, Scalar.of(23, e.type), Scalar.of(0, e.type))
    y = _log_of_split(e, m - 1.0, 0.0)
    return choose(y, (x.eq(0.0), -INF), (x < 0.0, NAN), (~(x < INF), x))  # inf and NaN are themselves


def log1p(x: Scalar) -> Scalar:
    u = x + 1.0
    bigger = x > 1.0
    c = select(bigger, 1.0, x) - (u - select(bigger, x, 1.0))  # Fast2Sum: the rounding error of u
    e, m = _split_exponent(u)
    y = _log_of_split(e, m - 1.0, c / u)
    return choose(y, (x.eq(0.0), x), (x.eq(-1.0), -INF), (x < -1.0, NAN), (~(x < INF), x))


def tanh(x: Scalar) -> Scalar:
    a = fabs(x)
    z = a * a
    small = _fma(a * z, _horner(z, TANH_Q), a)
    large = 1.0 - 2.0 / (exp(a + a) + 1.0)  # exp(2a) = inf gives 1
    return copysign(select(a < TANH_SMALL, small, large), x)


def erf(x: Scalar) -> Scalar:
    a = fabs(x)
    small = _fma(a, _horner(a * a, ERF_SMALL_Q), a)
    large = 1.0 - _horner(select(a > ERF_ONE, ERF_ONE, a) - ERF_CENTRE, ERF_LARGE_Q)
    return copysign(choose(large, (a < ERF_SMALL, small), (a >= ERF_ONE, 1.0)), x)


# math op name -> its float32 expansion
EXPANSIONS = {
    "math.exp": exp,
    "math.expm1": expm1,
    "math.log": log,
    "math.log1p": log1p,
    "math.tanh": tanh,
    "math.erf": erf,
}
