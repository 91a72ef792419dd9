"""Contractions -> linalg.matmul / linalg.batch_matmul (the cpu target has its own loop order:
codegen/cpu/rules.py)."""

from torch_mlir import ir
from torch_mlir.dialects import linalg

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const
from .common import accumulator_element, matmul_init, ranked, stored_as


def lower_matmul(op, acc_elem: ir.Type) -> ir.Value:
    """linalg.matmul / batch_matmul summing into an accumulator of acc_elem (linalg's named ops
    widen their operands to it), rounded to the result type after where they differ."""
    out = ranked(op.out)
    acc = matmul_init(op, const(acc_elem, 0))
    named = linalg.matmul if out.rank == 2 else linalg.batch_matmul
    return stored_as(named(op.lhs, op.rhs, outs=[acc]), out)


@register_lowering(dy.MatmulOp)
def _lower_matmul(ctx, op):
    return lower_matmul(op, accumulator_element(ranked(op.out)))  # float32 for half operands
