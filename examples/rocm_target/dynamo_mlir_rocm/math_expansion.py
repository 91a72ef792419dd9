"""Math the AMDGPU backend has no instruction for, expanded into arith before the ROCDL conversion.

convert-gpu-to-rocdl turns every math op into a call to ROCm's device library (`__ocml_erf_f32`,
...), which is bitcode shipped with ROCm and not available here: an unresolved call would stay
in the code object and the loader would refuse it. So the rocdl stage first turns math into
what LLVM's AMDGPU backend selects by itself:
  - exp, log, sqrt, rsqrt, fabs, fma, floor, ... -> LLVM intrinsics (convert-math-to-llvm);
  - tanh, sinh, cosh, powf, ... -> exp/log formulas (MLIR's math-expand-ops);
  - erf (GELU) -> `expand_erf` below, arith only.
Whatever is left (f64 transcendental functions, atan, lgamma, ...) is refused by the code
object stage, naming the op, and its region runs eagerly.
"""

from __future__ import annotations

import math as pymath

from torch_mlir import ir
from torch_mlir.dialects import arith, math

# Ops math-expand-ops rewrites into exp/log/sqrt formulas (each then an AMDGPU intrinsic).
EXPANDED_BY_MLIR = ("tanh", "sinh", "cosh", "tan", "asinh", "acosh", "atanh", "powf", "fpowi")

# erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)) for |x| < 1: 12 terms leave an
# error below 1e-10, far under float32's rounding.
_TAYLOR = tuple(2 / pymath.sqrt(pymath.pi) * (-1) ** n / (pymath.factorial(n) * (2 * n + 1)) for n in range(12))
# erf(x) = 1 - t (a1 + a2 t + ... + a5 t^4) exp(-x^2), t = 1 / (1 + p x), for x >= 1
# (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7, i.e. relative below 2e-7 there).
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _const(t: ir.Type, value: float) -> ir.Value:
    return arith.constant(t, ir.FloatAttr.get(t, value))


def _horner(x: ir.Value, coefficients, t: ir.Type) -> ir.Value:
    """c0 + c1 x + c2 x^2 + ... evaluated from the highest term down."""
    acc = _const(t, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = arith.addf(arith.mulf(acc, x), _const(t, c))
    return acc


def _erf(x: ir.Value) -> ir.Value:
    t = x.type
    a = math.absf(x)
    one = _const(t, 1.0)
    # |x| < 1: x * P(x^2), the Taylor series.
    small = arith.mulf(x, _horner(arith.mulf(x, x), _TAYLOR, t))
    # |x| >= 1: 1 - poly(u) exp(-a^2), sign restored.
    u = arith.divf(one, arith.addf(one, arith.mulf(_const(t, _AS_P), a)))
    tail = arith.mulf(arith.mulf(u, _horner(u, _AS_A, t)), math.exp(arith.negf(arith.mulf(a, a))))
    large = math.copysign(arith.subf(one, tail), x)
    is_small = arith.cmpf(arith.CmpFPredicate.OLT, a, one)  # false for NaN: the large branch keeps it NaN
    return arith.select(is_small, small, large)


def expand_erf(module: ir.Module) -> int:
    """Replace every float32 math.erf in `module` (after map_to_gpu: in its kernels) by
    arith/math.exp; returns how many. Other widths are left (the ll stage refuses them by name)."""
    found = []

    def visit(op):
        if op.name == "math.erf" and isinstance(op.results[0].type, ir.F32Type):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            value = _erf(op.operands[0])
        op.results[0].replace_all_uses_with(value)
        op.erase()
    return len(found)
