"""Importing this package registers every generic lowering rule (dynamo op -> linalg).

One file per op family, named as in dialects/ (and frontend/aten/). Rules whose IR a target may
not run say what they require (lowering/registry.py's CAPABILITIES): scatter, sort and linalg
need "serial_loops", special needs "scalar_math".
"""

from . import (attention, conv, creation, elementwise, indexing, linalg, matmul, movement, pool, random,  # noqa: F401
               reduction, scatter, sizes, sort, special)
