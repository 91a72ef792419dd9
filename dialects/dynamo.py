"""The `dynamo` dialect: tensor-level ops that ATen graphs are imported into.

Conventions every op keeps (its verifier checks them):
- operands are ranked tensors; broadcasting is explicit (`dynamo.broadcast`), so elementwise ops
  see operands of one shape;
- dtype promotion is already done (`dynamo.cast`), so elementwise operands share one element type;
- dims are static or dynamic (`?`); shapes are checked where both sides are static.

Ops are defined in Python on `mlir.dialects.ext` (IRDL-backed): they are real MLIR ops that print
in generic form and re-parse. Elementwise ops are made from tables (one verifier fits them all);
the others are classes with a docstring, example IR and a verifier.

The ops live in one file per op family, named as in lowering/rules/ (elementwise, reduction,
attention, movement, indexing, scatter, sort, special, linalg, random, matmul, conv, pool, creation, sizes;
base.py holds the dialect object and verifier helpers); this module is the one import point:
`from dynamo_mlir.dialects import dynamo as dy; dy.AddOp`.
"""

from .base import *  # noqa: F401,F403
from .base import Dynamo
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .matmul import *  # noqa: F401,F403
from .movement import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .scatter import *  # noqa: F401,F403
from .sizes import *  # noqa: F401,F403
from .sort import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403


def all_ops() -> list[type]:
    """Every op class of the dialect, for listings and docs."""
    return list(Dynamo.operations)
