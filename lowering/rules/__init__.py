"""Importing this package registers every generic lowering rule (dynamo op -> linalg)."""

from . import dynamic, elementwise, reduction, shape, structured, values  # noqa: F401
from . import scatter  # noqa: F401,E402  (cpu-only loop nests)
from . import bessel  # noqa: F401,E402  (polynomials and Bessel functions, CPU only)
from . import sort  # noqa: F401,E402  (merge sort loops, CPU only)
from . import special  # noqa: F401,E402  (gamma/zeta/error-function family, CPU only)
from . import random  # noqa: F401,E402  (counter-based random bits)
from . import linalg_factor  # noqa: F401,E402  (LU/Cholesky/triangular-solve loops, CPU only)
