"""Contractions -> linalg.matmul / linalg.batch_matmul (the cpu target has its own loop order:
codegen/cpu/rules.py)."""

from torch_mlir.dialects import linalg

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const
from .common import matmul_init, ranked


@register_lowering(dy.MatmulOp)
def _lower_matmul(ctx, op):
    out = ranked(op.out)
    rank = out.rank
    acc = matmul_init(op, const(out.element_type, 0))
    named = linalg.matmul if rank == 2 else linalg.batch_matmul
    return named(op.lhs, op.rhs, outs=[acc])
