"""Importing this package registers the import rule of every supported ATen op.

One file per op family (the same family names as dialects/ and lowering/rules/); a rule goes in
the family a reader would look in first (docs/adding-an-op.md lists them). Registration refuses
a second rule for an overload (frontend/registry.py), so no rule replaces another and the order
below does not matter: it is alphabetical. args.py (argument binding) and builders.py (the shared
IR builders) hold no rules.
"""

from . import (  # noqa: F401
    attention,
    conv,
    creation,
    distance,
    elementwise,
    indexing,
    linalg,
    matmul,
    max_pool_backward,
    movement,
    norm,
    pool,
    random,
    reduction,
    resample,
    scan,
    scatter,
    sort,
    special,
)
