"""Special functions -> one linalg.generic each, whose scalar body comes from the math library
(lowering/math/special.py): operands widened to f64, the body applied, the result rounded back.

The rules require the "scalar_math" capability: the bodies loop, branch and call libm (erfc, ...).
"""

from torch_mlir import ir

from ...dialects import dynamo as dy
from ..math import special
from ..registry import register_lowering
from ..scalar import Scalar, convert, f64
from .common import elementwise, op_kind, ranked


def _in_f64(fn):
    """A scalar body: operands widened to f64, fn applied, the result rounded to the op's type."""
    def body(*xs):
        out = fn(*(Scalar(convert(x, f64())) for x in xs))
        return convert(out.v, xs[0].type)
    return body


def _lower_unary(op):
    return elementwise([op.x], ranked(op.out), _in_f64(special.UNARY[op_kind(op)]))


def _lower_binary(op):
    return elementwise([op.lhs, op.rhs], ranked(op.out), _in_f64(special.BINARY[op_kind(op)]))


@register_lowering(dy.NextafterOp, requires={"scalar_math"})
def _lower_nextafter(op):
    return elementwise([op.lhs, op.rhs], ranked(op.out), special.nextafter)


for _name in special.UNARY:
    register_lowering(dy.SPECIAL_UNARY_CLASSES[_name], _lower_unary, requires={"scalar_math"})
for _name in special.BINARY:
    register_lowering(dy.SPECIAL_BINARY_CLASSES[_name], _lower_binary, requires={"scalar_math"})
