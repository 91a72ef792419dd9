"""Importing this package registers every generic lowering rule (dynamo op -> linalg)."""

from . import dynamic, elementwise, reduction, shape, structured, values  # noqa: F401
from . import scatter  # noqa: F401,E402  (loop nests: requires serial_loops)
from . import bessel  # noqa: F401,E402  (polynomials and Bessel functions: requires scalar_math)
from . import sort  # noqa: F401,E402  (merge sort loops: requires serial_loops)
from . import special  # noqa: F401,E402  (gamma/zeta/error-function family: requires scalar_math)
from . import random  # noqa: F401,E402  (counter-based random bits)
from . import linalg_factor  # noqa: F401,E402  (LU/Cholesky/triangular-solve loops: requires serial_loops)
