"""Special functions (gamma/zeta/error-function family): elementwise ops made from tables, with
the verifiers and class maker of elementwise.py. Their lowerings (lowering/rules/special.py)
are CPU-only.

Every op here maps float operands of one type to that type; the lowering computes in f64."""


from .elementwise import make_binary_ops, make_unary_ops

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

SPECIAL_UNARY_CLASSES = make_unary_ops(SPECIAL_UNARY_OPS, __name__)
SPECIAL_BINARY_CLASSES = make_binary_ops(SPECIAL_BINARY_OPS, __name__)
globals().update({cls.__name__: cls for cls in (*SPECIAL_UNARY_CLASSES.values(),
                                                *SPECIAL_BINARY_CLASSES.values())})
