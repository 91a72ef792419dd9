"""Scalar bodies of the elementwise ops that are no single MLIR op, by the names the elementwise
spec (dialects/elementwise.py, ELEMENTWISE) gives them. Each takes and returns ir.Values of the
operands' type (i1 for predicates). Bodies that are one arith/math op are named there directly.
"""

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith, math

from .. import scalar
from ..scalar import const, is_bool


# ----------------------------------------------------------------------------- float


def gelu(x):
    # x * 0.5 * (1 + erf(x / sqrt(2)))
    t = x.type
    inner = math.erf(arith.mulf(x, const(t, 1 / pymath.sqrt(2))))
    return arith.mulf(arith.mulf(x, const(t, 0.5)), arith.addf(inner, const(t, 1.0)))


def gelu_tanh(x):
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    t = x.type
    x3 = arith.mulf(arith.mulf(x, x), x)
    inner = arith.mulf(const(t, pymath.sqrt(2 / pymath.pi)), arith.addf(x, arith.mulf(const(t, 0.044715), x3)))
    return arith.mulf(arith.mulf(x, const(t, 0.5)), arith.addf(math.tanh(inner), const(t, 1.0)))


def sigmoid(x):
    one = const(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def _sign_of(x):
    zero = const(x.type, 0.0)
    pos = arith.uitofp(x.type, arith.cmpf(arith.CmpFPredicate.OGT, x, zero))
    neg = arith.uitofp(x.type, arith.cmpf(arith.CmpFPredicate.OLT, x, zero))
    return arith.subf(pos, neg)


def sign(x):
    # torch.sign(NaN) is 0 on CPU and CUDA alike: (0 < x) - (x < 0), both false for NaN
    # (c10::signum), which is _sign_of's formula.
    return _sign_of(x)


def expm1(x):
    """Kahan's expm1: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u.
    LLVM's lowering of math.expm1 is exp(x) - 1, which returns 0 for |x| below one ulp of 1."""
    t = x.type
    u = math.exp(x)
    um1 = arith.subf(u, const(t, 1.0))
    general = arith.mulf(um1, arith.divf(x, math.log(u)))  # (u - 1) x would overflow for x above ~84
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, um1, const(t, -1.0)), um1, general)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, u, const(t, pymath.inf)), u, result)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, u, const(t, 1.0)), x, result)


def reciprocal(x):
    return arith.divf(const(x.type, 1.0), x)


def relu(x):
    """x < 0 ? 0 : x, as eager's kernels: -0.0 and NaN pass through (maximumf(x, 0) would make
    -0.0 into +0.0, and 1 / relu(-0.0) +inf where eager gives -inf)."""
    zero = const(x.type, 0.0)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, zero), zero, x)


def isnan(x):
    return scalar.isnan(x).v


def isinf(x):
    return scalar.isinf(x).v


def floordiv(a, b):
    return math.floor(arith.divf(a, b))


def truncdiv(a, b):
    return math.trunc(arith.divf(a, b))


def rem(a, b):
    # Python remainder: the result takes b's sign.
    r = arith.remf(a, b)
    zero = const(a.type, 0.0)
    fix = arith.andi(arith.cmpf(arith.CmpFPredicate.ONE, r, zero),
                     arith.xori(arith.cmpf(arith.CmpFPredicate.OLT, r, zero), arith.cmpf(arith.CmpFPredicate.OLT, b, zero)))
    return arith.select(fix, arith.addf(r, b), r)


def logaddexp2(a, b):
    """log2(2^a + 2^b) as max(a, b) + log2(1 + 2^-|a - b|), as eager's CPU kernel: no overflow, and
    the log1p step is Kahan's (log(u) * y / (u - 1) with u = 1 + y), exact where y is below one ulp
    of 1 (LLVM lowers math.log1p to log(1 + y)). A NaN operand gives NaN (maximumf and |a - b|
    propagate it); equal infinities give themselves (a - b would be NaN)."""
    t = a.type
    one = const(t, 1.0)
    m = arith.maximumf(a, b)
    y = math.exp2(arith.negf(math.absf(arith.subf(a, b))))  # in [0, 1]
    u = arith.addf(one, y)
    um1 = arith.subf(u, one)
    log1p = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, um1, const(t, 0.0)), y,
                         arith.divf(arith.mulf(math.log(u), y), um1))
    result = arith.addf(m, arith.mulf(log1p, const(t, 1 / pymath.log(2))))
    same_inf = arith.andi(arith.cmpf(arith.CmpFPredicate.OEQ, a, b), isinf(a))
    return arith.select(same_inf, a, result)


# ----------------------------------------------------------------------------- integer (and i1)


def neg_int(x):
    return arith.subi(const(x.type, 0), x)


def relu_int(x):
    return arith.maxsi(x, const(x.type, 0))


def bitwise_not(x):
    return arith.xori(x, const(x.type, 1 if is_bool(x.type) else -1))


def sign_int(x):
    positive = arith.extui(x.type, arith.cmpi(arith.CmpIPredicate.sgt, x, const(x.type, 0)))
    negative = arith.extui(x.type, arith.cmpi(arith.CmpIPredicate.slt, x, const(x.type, 0)))
    return arith.subi(positive, negative)


def same(x):
    """Rounding an integer (floor, ceil, round, trunc) leaves it as it is."""
    return x


def never(x):
    """An integer is never NaN nor infinite."""
    return const(ir.IntegerType.get_signless(1), 0)


def rem_int(a, b):
    # Python remainder: the result takes b's sign.
    r = arith.remsi(a, b)
    zero = const(a.type, 0)
    fix = arith.andi(arith.cmpi(arith.CmpIPredicate.ne, r, zero),
                     arith.xori(arith.cmpi(arith.CmpIPredicate.slt, r, zero), arith.cmpi(arith.CmpIPredicate.slt, b, zero)))
    return arith.select(fix, arith.addi(r, b), r)
