"""Orthogonal polynomials and Bessel functions -> one linalg.generic each, whose scalar body
(from the math library: lowering/math/polynomials.py, lowering/math/bessel.py) runs a loop
(scf.while) over a recurrence or a series.

The loops live inside the generic's body; the CUDA pipeline is not taught them, so every rule
requires the "scalar_math" capability (CUDA keeps these ops eager).
"""

from torch_mlir import ir
from torch_mlir.dialects import arith

from ...dialects import bessel as bz
from ..math.bessel import BESSEL
from ..math.polynomials import POLYNOMIALS, polynomial
from ..registry import register_lowering
from ..scalar import Scalar, f64
from .common import elementwise, op_kind, ranked


def _lower_polynomial(op):
    spec = POLYNOMIALS[op_kind(op)]
    return elementwise([op.lhs, op.rhs], ranked(op.out), lambda x, n: polynomial(spec, x, n))


def _lower_bessel(op):
    fn = BESSEL[op_kind(op)]
    out = ranked(op.out)

    def body(x):
        # In f64, then through f32 on the way back: bf16/f16 round as eager's f32 kernel result does.
        y = fn(Scalar(arith.extf(f64(), x) if x.type != f64() else x)).v
        y = arith.truncf(ir.F32Type.get(), y)
        return y if out.element_type == ir.F32Type.get() else arith.truncf(out.element_type, y)

    return elementwise([op.x], out, body)


for _name, _cls in bz.POLYNOMIAL_CLASSES.items():
    register_lowering(_cls, _lower_polynomial, requires={"scalar_math"})
for _name in BESSEL:
    register_lowering(bz.BESSEL_CLASSES[_name], _lower_bessel, requires={"scalar_math"})
