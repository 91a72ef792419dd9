"""Special functions -> one linalg.generic each, whose scalar body comes from the math library
(lowering/math/):

- the gamma/zeta/error-function family (math/special.py): operands widened to f64, the body
  applied, the result rounded back;
- orthogonal polynomials (math/polynomials.py): in the operand's type, as eager's kernels;
- Bessel functions and Airy Ai (math/bessel.py): in f64, rounded back through f32, as eager's f32
  kernel result is.

The rules require the "scalar_math" capability: the bodies loop (scf.while), branch and call
libm (erfc, ...), which the CUDA pipeline is not taught (CUDA keeps these ops eager).
"""

from torch_mlir import ir
from torch_mlir.dialects import arith

from ...dialects import dynamo as dy
from ..math import special
from ..math.bessel import BESSEL
from ..math.polynomials import POLYNOMIALS, polynomial
from ..registry import register_lowering
from ..scalar import Scalar, convert, f64
from .common import elementwise, op_kind, ranked


def _in_f64(fn):
    """A scalar body: operands widened to f64, fn applied, the result rounded to the op's type."""
    def body(*xs):
        out = fn(*(Scalar(convert(x, f64())) for x in xs))
        return convert(out.v, xs[0].type)
    return body


def _lower_unary(ctx, op):
    return elementwise([op.x], ranked(op.out), _in_f64(special.UNARY[op_kind(op)]))


def _lower_binary(ctx, op):
    return elementwise([op.lhs, op.rhs], ranked(op.out), _in_f64(special.BINARY[op_kind(op)]))


@register_lowering(dy.NextafterOp, requires={"scalar_math"})
def _lower_nextafter(ctx, op):
    return elementwise([op.lhs, op.rhs], ranked(op.out), special.nextafter)


def _lower_polynomial(ctx, op):
    spec = POLYNOMIALS[op_kind(op)]
    return elementwise([op.lhs, op.rhs], ranked(op.out), lambda x, n: polynomial(spec, x, n))


def _lower_bessel(ctx, op):
    fn = BESSEL[op_kind(op)]
    out = ranked(op.out)

    def body(x):
        # In f64, then through f32 on the way back: bf16/f16 round as eager's f32 kernel result does.
        y = fn(Scalar(arith.extf(f64(), x) if x.type != f64() else x)).v
        y = arith.truncf(ir.F32Type.get(), y)
        return y if out.element_type == ir.F32Type.get() else arith.truncf(out.element_type, y)

    return elementwise([op.x], out, body)


# table of bodies -> (the dialect's op classes by name, the rule)
_FAMILIES = [
    (special.UNARY, dy.SPECIAL_UNARY_CLASSES, _lower_unary),
    (special.BINARY, dy.SPECIAL_BINARY_CLASSES, _lower_binary),
    (POLYNOMIALS, dy.POLYNOMIAL_CLASSES, _lower_polynomial),
    (BESSEL, dy.BESSEL_CLASSES, _lower_bessel),
]
for _bodies, _classes, _rule in _FAMILIES:
    register_lowering([_classes[name] for name in _bodies], _rule, requires={"scalar_math"})
