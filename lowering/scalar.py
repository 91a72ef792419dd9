"""Scalar helpers for rule bodies: constants, type predicates, PyTorch's cast semantics, the
identities of reductions, and `Scalar`, the one formula language of scalar bodies (operators and
math functions on SSA values, used by the math library in lowering/math/)."""

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith, math


def is_float(t: ir.Type) -> bool:
    return isinstance(t, ir.FloatType)


def is_int(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType)


def is_bool(t: ir.Type) -> bool:
    return is_int(t) and ir.IntegerType(t).width == 1


def const(t: ir.Type, value) -> ir.Value:
    """A scalar constant of type t (floats accept inf/nan)."""
    if is_float(t):
        return arith.constant(t, ir.FloatAttr.get(t, float(value)))
    if isinstance(t, ir.IndexType):
        return arith.constant(t, ir.IntegerAttr.get(t, int(value)))
    return arith.constant(t, ir.IntegerAttr.get(t, int(value)))


def constant_int(value: ir.Value) -> int | None:
    """The integer an arith.constant defines, or None for any other value (a block argument too)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def index(n) -> ir.Value:
    """An index value: an int as a constant, an index Value as it is."""
    return const(ir.IndexType.get(), n) if isinstance(n, int) else n


def lowest(t: ir.Type) -> ir.Value:
    """The identity of max: -inf for floats, the minimum integer (false for bool)."""
    if is_float(t):
        return const(t, -pymath.inf)
    width = ir.IntegerType(t).width
    return const(t, 0 if width == 1 else -(1 << (width - 1)))


def highest(t: ir.Type) -> ir.Value:
    if is_float(t):
        return const(t, pymath.inf)
    width = ir.IntegerType(t).width
    return const(t, 1 if width == 1 else (1 << (width - 1)) - 1)


def _width(t: ir.Type) -> int:
    return ir.FloatType(t).width if is_float(t) else ir.IntegerType(t).width


def convert(x: ir.Value, dst: ir.Type) -> ir.Value:
    """PyTorch's scalar conversion: float->int truncates, anything->bool is `!= 0`,
    bool is unsigned (true -> 1)."""
    src = x.type
    if src == dst:
        return x
    if is_bool(dst):
        zero = const(src, 0)
        if is_float(src):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
    if is_float(dst) and _width(dst) == 16 and src != ir.F32Type.get():
        # c10's Half and BFloat16 are built from a float: anything else goes through f32, which
        # also keeps LLVM from needing compiler-rt routines (__truncdfbf2) the JIT lacks.
        return arith.truncf(dst, convert(x, ir.F32Type.get()))
    if is_float(src) and is_float(dst):
        return arith.extf(dst, x) if _width(dst) > _width(src) else arith.truncf(dst, x)
    if is_float(src):
        return arith.fptosi(dst, x)
    if is_float(dst):
        return arith.uitofp(dst, x) if is_bool(src) else arith.sitofp(dst, x)
    if _width(dst) > _width(src):
        return arith.extui(dst, x) if is_bool(src) else arith.extsi(dst, x)
    return arith.trunci(dst, x)


# ----------------------------------------------------------------------------- reduction identities

def _all_ones(t: ir.Type) -> ir.Value:
    return const(t, -1)  # every bit set: true for i1


# A reduction's combining op (by MLIR name) -> its identity, the value an accumulator starts
# from. One table for every reduction builder (lowering/rules/reduction.py, scatter's combines,
# the cuda row kernels' gpu.all_reduce).
IDENTITIES = {
    "arith.addf": lambda t: const(t, 0), "arith.addi": lambda t: const(t, 0),
    "arith.mulf": lambda t: const(t, 1), "arith.muli": lambda t: const(t, 1),
    "arith.maximumf": lowest, "arith.maxnumf": lowest, "arith.maxsi": lowest,
    "arith.minimumf": highest, "arith.minnumf": highest, "arith.minsi": highest,
    "arith.ori": lambda t: const(t, 0), "arith.xori": lambda t: const(t, 0), "arith.andi": _all_ones,
}


def identity_of(combiner, t: ir.Type) -> ir.Value:
    """The identity of `combiner` (an arith builder such as arith.addf, or its op name) on t."""
    name = combiner if isinstance(combiner, str) else f"arith.{combiner.__name__}"
    return IDENTITIES[name](t)


# ----------------------------------------------------------------------------- Scalar: formulas


def f64() -> ir.Type:
    return ir.F64Type.get()


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


class Scalar:
    """A scalar SSA value with Python operators, so rule bodies read like the formulas.

    A Python number beside a Scalar becomes a constant of that Scalar's type (on its own, an f64
    constant). Float or integer ops are picked by the type. Comparisons give i1 Scalars: ordered
    for floats (NaN compares false, as in C), except `ne`, which is true for NaN."""

    __slots__ = ("v",)

    def __init__(self, value: ir.Value):
        self.v = value

    @staticmethod
    def of(x, t: ir.Type | None = None) -> "Scalar":
        if isinstance(x, Scalar):
            return x
        return Scalar(x) if isinstance(x, ir.Value) else Scalar(const(t or f64(), x))

    @property
    def type(self) -> ir.Type:
        return self.v.type

    def _lift(self, other) -> ir.Value:
        return Scalar.of(other, self.type).v

    def _bin(self, other, fop, iop, swap=False) -> "Scalar":
        a, b = self.v, self._lift(other)
        if swap:
            a, b = b, a
        return Scalar((fop if is_float(self.type) else iop)(a, b))

    def __add__(self, o): return self._bin(o, arith.addf, arith.addi)
    def __radd__(self, o): return self._bin(o, arith.addf, arith.addi, swap=True)
    def __sub__(self, o): return self._bin(o, arith.subf, arith.subi)
    def __rsub__(self, o): return self._bin(o, arith.subf, arith.subi, swap=True)
    def __mul__(self, o): return self._bin(o, arith.mulf, arith.muli)
    def __rmul__(self, o): return self._bin(o, arith.mulf, arith.muli, swap=True)
    def __truediv__(self, o): return self._bin(o, arith.divf, arith.divsi)
    def __rtruediv__(self, o): return self._bin(o, arith.divf, arith.divsi, swap=True)
    def __neg__(self): return Scalar(arith.negf(self.v)) if is_float(self.type) else 0 - self

    def _cmp(self, o, fpred: str, ipred: str) -> "Scalar":
        if is_float(self.type):
            return Scalar(arith.cmpf(getattr(arith.CmpFPredicate, fpred), self.v, self._lift(o)))
        return Scalar(arith.cmpi(getattr(arith.CmpIPredicate, ipred), self.v, self._lift(o)))

    def __lt__(self, o): return self._cmp(o, "OLT", "slt")
    def __le__(self, o): return self._cmp(o, "OLE", "sle")
    def __gt__(self, o): return self._cmp(o, "OGT", "sgt")
    def __ge__(self, o): return self._cmp(o, "OGE", "sge")
    def eq(self, o): return self._cmp(o, "OEQ", "eq")
    def ne(self, o): return self._cmp(o, "UNE", "ne")

    def __and__(self, o): return Scalar(arith.andi(self.v, self._lift(o)))
    def __or__(self, o): return Scalar(arith.ori(self.v, self._lift(o)))
    def __invert__(self): return Scalar(arith.xori(self.v, const(self.type, -1)))


def value_of(x) -> ir.Value:
    """x as an ir.Value: a Scalar's value, a number as an f64 constant, a Value as it is."""
    return Scalar.of(x).v


def _typed_pair(a, b) -> tuple[Scalar, Scalar]:
    """a and b as Scalars; a number takes the other's type (f64 when both are numbers)."""
    t = next((x.type for x in (a, b) if isinstance(x, (Scalar, ir.Value))), None)
    return Scalar.of(a, t), Scalar.of(b, t)


def select(cond, a, b) -> Scalar:
    a, b = _typed_pair(a, b)
    return Scalar(arith.select(value_of(cond), a.v, b.v))


def choose(default, *cases) -> Scalar:
    """`cases` are (condition, value) pairs, the first that holds wins (an if-elif chain)."""
    out = default
    for cond, value in reversed(cases):
        out = select(cond, value, out)
    return Scalar.of(out)


def both(*conds) -> Scalar:
    out = Scalar.of(conds[0])
    for c in conds[1:]:
        out = out & c
    return out


def either(*conds) -> Scalar:
    out = Scalar.of(conds[0])
    for c in conds[1:]:
        out = out | c
    return out


def isnan(x) -> Scalar:
    x = Scalar.of(x)
    return Scalar(arith.cmpf(arith.CmpFPredicate.UNO, x.v, x.v))


def to_float(n: Scalar, t: ir.Type) -> Scalar:
    """C's signed integer -> float conversion."""
    return Scalar(arith.sitofp(t, n.v))


def poly(x: Scalar, coeffs) -> Scalar:
    """sum_k coeffs[k] x^k by Horner's rule."""
    acc = Scalar.of(coeffs[-1], x.type)
    for c in reversed(coeffs[:-1]):
        acc = acc * x + c
    return acc


def _math(fn):
    """A math-dialect function on Scalars (numbers become f64 constants)."""
    return lambda *xs: Scalar(fn(*_typed_operands(xs)))


def _typed_operands(xs) -> list[ir.Value]:
    t = next((x.type for x in xs if isinstance(x, (Scalar, ir.Value))), None)
    return [Scalar.of(x, t).v for x in xs]


exp, log, log1p, sqrt = _math(math.exp), _math(math.log), _math(math.log1p), _math(math.sqrt)
sin, cos, tan, acos, sinh, cosh = (_math(math.sin), _math(math.cos), _math(math.tan), _math(math.acos),
                                   _math(math.sinh), _math(math.cosh))
erf, erfc, fabs, floor, roundeven = (_math(math.erf), _math(math.erfc), _math(math.absf), _math(math.floor),
                                     _math(math.roundeven))
copysign, maximumf = _math(math.copysign), _math(arith.maximumf)


def isinf(x) -> Scalar:
    return fabs(x).eq(pymath.inf)
