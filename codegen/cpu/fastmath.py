"""The cpu target's math step, at the end of the loops stage: float32 math.exp, expm1, log,
log1p, tanh and erf replaced by their branch-free arith expansions (lowering/math/approx.py)
when CPUOptions.fast_math is on.

Why: convert-math-to-libm turns those ops into calls of expf, tanhf, ...; LLVM's loop vectorizer
does not vectorize a loop whose body calls an unknown function, so every elementwise loop with
one of them ran one element at a time (the torch-mlir wheel has no math-polynomial-approximation
pass to do this instead). Expanded, the loop body is plain arithmetic and runs in SIMD registers.

bfloat16 and float16 ops are computed in float32 and rounded back, as
math-extend-to-supported-types would do later in the llvm stage. float64 keeps libm.

math.expm1 (the cpu rule of dynamo.expm1, rules.py) is expanded whatever the option: where the
polynomial does not apply, to Kahan's formula on math.exp and math.log, because the llvm stage's
convert-math-to-llvm would make it exp(x) - 1.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith

from ...lowering.math import elementwise as bodies
from ...lowering.math.approx import EXPANSIONS
from ...lowering.scalar import Scalar
from ..passes import run_pipeline

_WIDENED = ("bf16", "f16", "f32")  # element types the float32 expansions compute
# math op -> its expansion on any other float type or with fast_math off (an op absent here
# is left to the llvm stage: libm)
_ALWAYS = {"math.expm1": bodies.expm1}


def _expansion(op, fast: bool):
    """The builder that replaces op, or None to keep it."""
    if fast and op.name in EXPANSIONS and str(op.results[0].type) in _WIDENED:
        return _widened(EXPANSIONS[op.name])
    return _ALWAYS.get(op.name)


def _widened(fn):
    """fn of float32 Scalars as a builder on f32, bf16 or f16 Values (the narrow ones widened,
    then the result rounded back once)."""
    def build(x: ir.Value) -> ir.Value:
        f32 = ir.F32Type.get()
        y = fn(Scalar(x if x.type == f32 else arith.extf(f32, x))).v
        return y if x.type == f32 else arith.truncf(x.type, y)
    return build


def expand_math(module: ir.Module, options) -> ir.Module:
    """Replace, in place, every math op that has an expansion under the options."""
    fast = options.target_options.fast_math
    found = []

    def visit(op):
        build = _expansion(op, fast)
        if build is not None:
            found.append((op.opview, build))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op, build in found:
        with ir.InsertionPoint(op), op.location:
            op.results[0].replace_all_uses_with(build(op.operands[0]))
        op.erase()
    # One copy of each constant, hoisted out of the loops: the IR reads like the formulas.
    return run_pipeline(module, "canonicalize, cse", "loops", options) if found else module
