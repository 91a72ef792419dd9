"""The math library: scalar bodies of functions that are one elementwise op in the dialect but no
one MLIR op (special functions, orthogonal polynomials, Bessel functions), written in the Scalar
formula language of lowering/scalar.py with the loop builders of lowering/loops.py. Rules that use
them (lowering/rules/special.py) require the "scalar_math" capability.
"""
