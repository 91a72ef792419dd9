"""Special functions: elementwise ops made from tables, with the verifiers and class maker of
elementwise.py. Their scalar bodies are the math library's (lowering/math/), and their lowerings
(lowering/rules/special.py) require the "scalar_math" capability.

Every op here maps float operands of one type to that type. Three tables:
- the gamma/zeta/error-function family (unary and binary);
- orthogonal polynomials, binary ops `(x, n)`: both operands share x's float type, n holds the
  degree as a float (torch promotes it to x's dtype and truncates it to int64 inside the kernel);
- the Bessel family (Bessel, modified Bessel, spherical Bessel, Airy), unary.
"""


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

# name -> what it computes (n = trunc(degree operand); y = 2x - 1 for the shifted ones).
POLYNOMIAL_OPS = {
    "chebyshev_polynomial_t": "Chebyshev T_n(x)", "chebyshev_polynomial_u": "Chebyshev U_n(x)",
    "chebyshev_polynomial_v": "Chebyshev V_n(x)", "chebyshev_polynomial_w": "Chebyshev W_n(x)",
    "shifted_chebyshev_polynomial_t": "T_n(2x - 1)", "shifted_chebyshev_polynomial_u": "U_n(2x - 1)",
    "shifted_chebyshev_polynomial_v": "V_n(2x - 1)", "shifted_chebyshev_polynomial_w": "W_n(2x - 1)",
    "hermite_polynomial_h": "physicists' Hermite H_n(x)", "hermite_polynomial_he": "probabilists' Hermite He_n(x)",
    "laguerre_polynomial_l": "Laguerre L_n(x)", "legendre_polynomial_p": "Legendre P_n(x)",
}

BESSEL_OPS = {
    "bessel_i0": "modified Bessel I0(x)", "bessel_i0e": "exp(-|x|) I0(x)",
    "bessel_i1": "modified Bessel I1(x)", "bessel_i1e": "exp(-|x|) I1(x)",
    "bessel_k0": "modified Bessel K0(x)", "bessel_k0e": "exp(x) K0(x)",
    "bessel_k1": "modified Bessel K1(x)", "bessel_k1e": "exp(x) K1(x)",
    "bessel_j0": "Bessel J0(x)", "bessel_j1": "Bessel J1(x)",
    "bessel_y0": "Bessel Y0(x)", "bessel_y1": "Bessel Y1(x)",
    "spherical_bessel_j0": "sin(x) / x", "airy_ai": "Airy Ai(x)",
}

POLYNOMIAL_CLASSES = make_binary_ops(POLYNOMIAL_OPS, __name__)
BESSEL_CLASSES = make_unary_ops(BESSEL_OPS, __name__)
globals().update({cls.__name__: cls for cls in (*POLYNOMIAL_CLASSES.values(), *BESSEL_CLASSES.values())})
