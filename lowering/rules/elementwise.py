"""Elementwise ops -> one linalg.generic each, the scalar body taken from a table per type class."""

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith, math

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const, convert, is_bool, is_float
from .common import elementwise, op_kind, ranked


def _gelu(x):
    # x * 0.5 * (1 + erf(x / sqrt(2)))
    t = x.type
    inner = math.erf(arith.mulf(x, const(t, 1 / pymath.sqrt(2))))
    return arith.mulf(arith.mulf(x, const(t, 0.5)), arith.addf(inner, const(t, 1.0)))


def _gelu_tanh(x):
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    t = x.type
    x3 = arith.mulf(arith.mulf(x, x), x)
    inner = arith.mulf(const(t, pymath.sqrt(2 / pymath.pi)), arith.addf(x, arith.mulf(const(t, 0.044715), x3)))
    return arith.mulf(arith.mulf(x, const(t, 0.5)), arith.addf(math.tanh(inner), const(t, 1.0)))


def _sigmoid(x):
    one = const(x.type, 1.0)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def _sign(x):
    zero = const(x.type, 0.0)
    pos = arith.uitofp(x.type, arith.cmpf(arith.CmpFPredicate.OGT, x, zero))
    neg = arith.uitofp(x.type, arith.cmpf(arith.CmpFPredicate.OLT, x, zero))
    return arith.subf(pos, neg)


def _sign_nan(x):
    # torch.sign(NaN) is NaN: keep x where it is NaN.
    isnan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    return arith.select(isnan, x, _sign(x))


def _expm1(x):
    """Kahan's expm1: (u - 1) * x / log(u) with u = exp(x) cancels the rounding error of u.
    LLVM's lowering of math.expm1 is exp(x) - 1, which returns 0 for |x| below one ulp of 1."""
    t = x.type
    u = math.exp(x)
    um1 = arith.subf(u, const(t, 1.0))
    general = arith.divf(arith.mulf(um1, x), math.log(u))
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, um1, const(t, -1.0)), um1, general)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, u, const(t, pymath.inf)), u, result)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, u, const(t, 1.0)), x, result)


def _round_even(x):
    return math.roundeven(x)


def _rem_float(a, b):
    # Python remainder: result takes b's sign.
    r = arith.remf(a, b)
    zero = const(a.type, 0.0)
    fix = arith.andi(arith.cmpf(arith.CmpFPredicate.ONE, r, zero),
                     arith.xori(arith.cmpf(arith.CmpFPredicate.OLT, r, zero), arith.cmpf(arith.CmpFPredicate.OLT, b, zero)))
    return arith.select(fix, arith.addf(r, b), r)


def _rem_int(a, b):
    r = arith.remsi(a, b)
    zero = const(a.type, 0)
    fix = arith.andi(arith.cmpi(arith.CmpIPredicate.ne, r, zero),
                     arith.xori(arith.cmpi(arith.CmpIPredicate.slt, r, zero), arith.cmpi(arith.CmpIPredicate.slt, b, zero)))
    return arith.select(fix, arith.addi(r, b), r)


def _copysign(a, b):
    return math.copysign(a, b)


FLOAT_UNARY = {
    "neg": arith.negf, "abs": math.absf, "exp": math.exp, "exp2": math.exp2, "expm1": _expm1,
    "log": math.log, "log2": math.log2, "log1p": math.log1p, "sqrt": math.sqrt, "rsqrt": math.rsqrt,
    "reciprocal": lambda x: arith.divf(const(x.type, 1.0), x),
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "tanh": math.tanh, "atan": math.atan,
    "asin": math.asin, "acos": math.acos, "sinh": math.sinh, "cosh": math.cosh,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh,
    "erf": math.erf, "sigmoid": _sigmoid, "relu": lambda x: arith.maximumf(x, const(x.type, 0.0)),
    "gelu": _gelu, "gelu_tanh": _gelu_tanh, "floor": math.floor, "ceil": math.ceil,
    "round": _round_even, "trunc": math.trunc, "sign": _sign_nan,
    "isnan": lambda x: arith.cmpf(arith.CmpFPredicate.UNO, x, x),
    "isinf": lambda x: arith.cmpf(arith.CmpFPredicate.OEQ, math.absf(x), const(x.type, pymath.inf)),
}
INT_UNARY = {
    "neg": lambda x: arith.subi(const(x.type, 0), x), "abs": math.absi,
    "relu": lambda x: arith.maxsi(x, const(x.type, 0)),
    "not": lambda x: arith.xori(x, const(x.type, 1 if is_bool(x.type) else -1)),
    "sign": lambda x: arith.subi(arith.extui(x.type, arith.cmpi(arith.CmpIPredicate.sgt, x, const(x.type, 0))),
                                 arith.extui(x.type, arith.cmpi(arith.CmpIPredicate.slt, x, const(x.type, 0)))),
    "floor": lambda x: x, "ceil": lambda x: x, "round": lambda x: x, "trunc": lambda x: x,
    "isnan": lambda x: const(ir.IntegerType.get_signless(1), 0),
    "isinf": lambda x: const(ir.IntegerType.get_signless(1), 0),
}
FLOAT_BINARY = {
    "add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf,
    "floordiv": lambda a, b: math.floor(arith.divf(a, b)), "truncdiv": lambda a, b: math.trunc(arith.divf(a, b)),
    "rem": _rem_float, "fmod": arith.remf, "pow": math.powf, "max": arith.maximumf, "min": arith.minimumf,
    # IEEE maxNum/minNum: a NaN operand yields the other one, as C's fmax/fmin (torch.fmax).
    "fmax": arith.maxnumf, "fmin": arith.minnumf, "atan2": math.atan2, "copysign": _copysign,
}
INT_BINARY = {
    "add": arith.addi, "sub": arith.subi, "mul": arith.muli, "truncdiv": arith.divsi,
    "floordiv": arith.floordivsi, "rem": _rem_int, "fmod": arith.remsi, "max": arith.maxsi,
    "min": arith.minsi, "fmax": arith.maxsi, "fmin": arith.minsi, "and": arith.andi, "or": arith.ori,
    "xor": arith.xori, "shl": arith.shli, "shr": arith.shrsi,
}
# bool tensors: max/min are or/and; arithmetic on bools is promoted away by the importer.
BOOL_BINARY = {"max": arith.ori, "min": arith.andi, "fmax": arith.ori, "fmin": arith.andi, "and": arith.andi,
               "or": arith.ori, "xor": arith.xori, "add": arith.ori, "mul": arith.andi}

FLOAT_COMPARE = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}
SIGNED_COMPARE = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
UNSIGNED_COMPARE = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _scalar_table(elem: ir.Type, float_table, int_table, bool_table=None):
    if is_float(elem):
        return float_table
    return (bool_table if bool_table is not None and is_bool(elem) else int_table)


def _lower_unary(op):
    name, elem = op_kind(op), ranked(op.x).element_type
    fn = _scalar_table(elem, FLOAT_UNARY, INT_UNARY).get(name)
    if fn is None:
        raise NotImplementedError(f"dynamo.{name} has no scalar rule for element type {elem}")
    return elementwise([op.x], ranked(op.out), fn)


def _lower_binary(op):
    name, elem = op_kind(op), ranked(op.lhs).element_type
    fn = _scalar_table(elem, FLOAT_BINARY, INT_BINARY, BOOL_BINARY).get(name)
    if fn is None:
        raise NotImplementedError(f"dynamo.{name} has no scalar rule for element type {elem}")
    return elementwise([op.lhs, op.rhs], ranked(op.out), fn)


for _cls in dy.UNARY_CLASSES.values():
    register_lowering(_cls, _lower_unary)
for _cls in dy.BINARY_CLASSES.values():
    register_lowering(_cls, _lower_binary)


@register_lowering(dy.CompareOp)
def _lower_compare(op):
    pred, elem = ir.StringAttr(op.predicate).value, ranked(op.lhs).element_type
    if is_float(elem):
        p = getattr(arith.CmpFPredicate, FLOAT_COMPARE[pred])
        fn = lambda a, b: arith.cmpf(p, a, b)
    else:
        table = UNSIGNED_COMPARE if is_bool(elem) else SIGNED_COMPARE
        p = getattr(arith.CmpIPredicate, table[pred])
        fn = lambda a, b: arith.cmpi(p, a, b)
    return elementwise([op.lhs, op.rhs], ranked(op.out), fn)


@register_lowering(dy.SelectOp)
def _lower_select(op):
    return elementwise([op.cond, op.lhs, op.rhs], ranked(op.out), arith.select)


@register_lowering(dy.CastOp)
def _lower_cast(op):
    dst = ranked(op.out).element_type
    return elementwise([op.x], ranked(op.out), lambda x: convert(x, dst))
