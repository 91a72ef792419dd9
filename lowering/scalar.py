"""Scalar helpers for rule bodies: constants, type predicates, and PyTorch's cast semantics."""

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith


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
