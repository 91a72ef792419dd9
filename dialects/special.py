"""Special functions (gamma/zeta/error-function family): elementwise ops made from tables, with
the verifiers and class maker of elementwise.py. Their lowerings (lowering/rules/special.py)
are CPU-only.

Every op here maps float operands of one type to that type; the lowering computes in f64."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Result

from .elementwise import _binary_doc, _make_op, _unary_doc, _verify_binary, _verify_unary

SPECIAL_UNARY_OPS = {
    "lgamma": "ln |Gamma(x)|",
    "digamma": "psi(x) = d/dx ln Gamma(x)",
    "erfinv": "erf^-1 x",
    "ndtri": "the inverse of the standard normal CDF",
    "erfcx": "e^(x^2) erfc(x), the scaled complementary error function",
}
SPECIAL_BINARY_OPS = {
    "zeta": "Hurwitz zeta(s, q) = sum_k (q + k)^-s",
    "igamma": "regularized lower incomplete gamma P(a, x)",
    "igammac": "regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)",
    "nextafter": "the next representable value after a in the direction of b",
}

SPECIAL_UNARY_CLASSES = {
    name: _make_op(name, {"x": Operand[ir.RankedTensorType], "out": Result[ir.RankedTensorType]},
                   _unary_doc(name, what), _verify_unary)
    for name, what in SPECIAL_UNARY_OPS.items()
}
SPECIAL_BINARY_CLASSES = {
    name: _make_op(name, {"lhs": Operand[ir.RankedTensorType], "rhs": Operand[ir.RankedTensorType],
                          "out": Result[ir.RankedTensorType]},
                   _binary_doc(name, what), _verify_binary)
    for name, what in SPECIAL_BINARY_OPS.items()
}
for _cls in (*SPECIAL_UNARY_CLASSES.values(), *SPECIAL_BINARY_CLASSES.values()):
    _cls.__module__ = __name__
globals().update({cls.__name__: cls for cls in (*SPECIAL_UNARY_CLASSES.values(),
                                                *SPECIAL_BINARY_CLASSES.values())})
