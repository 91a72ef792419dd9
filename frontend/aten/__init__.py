"""Importing this package registers the import rule of every supported ATen op."""

from . import creation, elementwise, nn, reduction, shape, training  # noqa: F401
from . import coverage_movement  # noqa: F401,E402  (after the core rules: a later registration wins)
from . import coverage_math  # noqa: F401,E402
from . import coverage_index  # noqa: F401,E402
from . import coverage_nn  # noqa: F401,E402  (convolution: 1-d, 2-d, grouped, transposed)
from . import coverage_pool  # noqa: F401,E402
from . import coverage_bessel  # noqa: F401,E402
from . import coverage_sort  # noqa: F401,E402
from . import coverage_scatter  # noqa: F401,E402
from . import coverage_special  # noqa: F401,E402
from . import coverage_distance  # noqa: F401,E402
from . import random  # noqa: F401,E402  (seeded random ops: frontend/seeding.py)
from . import coverage_linalg  # noqa: F401,E402  (LU, Cholesky, triangular solves and what composes from them)
