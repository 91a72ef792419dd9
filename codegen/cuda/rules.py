"""cuda-specific lowering rules (they win over the generic ones for target "cuda").

reduce: a float sum over the operand's innermost dims runs as a row kernel (kernels.row_reduce,
rowfuse.py): ROW_THREADS threads each add up their own strided share of the row, and
gpu.all_reduce combines the shares in a tree, a cascade already. Blocking such a row the way the
generic rule does (lowering/rules/reduction.py) would only split the row groups rowfuse.py fuses
into one kernel (softmax, layernorm). So a row of up to ROW_THREADS * SUM_BLOCK terms, where no
thread's share exceeds SUM_BLOCK, stays one generic; other sums are blocked as on every target.

index_put and scatter: torch calls in the host schedule (library_calls.py says how), on the
buffers of a copy of dest. attention: a torch call too (torch's fused SDPA kernels), writing its
own result: the attention matrix never reaches memory.

matmul and 2-d convolution on half operands: with library_matmul, cuBLAS and cuDNN run them
(the host schedule's library steps), on tensor cores, accumulating in float32 and rounding once
at the store, which is the dialect's semantics: the named linalg op takes the half result
directly, with no float32 buffer and rounding kernel after it. Otherwise (and for 3-d
convolutions, which become kernels) the generic rules' float32 accumulator.
"""

from ...dialects import dynamo as dy
from ...lowering import register_lowering
from ...lowering.rules.common import accumulator_element, ranked
from ...lowering.rules.conv import lower_conv
from ...lowering.rules.matmul import lower_matmul
from ...lowering.rules.reduction import SUM_BLOCK, lower_reduce
from . import library_calls
from .kernels import ROW_THREADS


@register_lowering(dy.ReduceOp, target="cuda")
def _lower_reduce(ctx, op):
    return lower_reduce(op, ROW_THREADS * SUM_BLOCK)


register_lowering(dy.IndexPutOp, library_calls.index_put, target="cuda")
register_lowering(dy.ScatterOp, library_calls.scatter, target="cuda")
register_lowering(dy.AttentionOp, library_calls.attention, target="cuda")


def _run_by_library(lower, library_can_take):
    """`lower` accumulating in the result's own type where a library step will run the op."""
    def rule(ctx, op):
        out = ranked(op.out)
        in_library = ctx.target_option("library_matmul") and library_can_take(op)
        return lower(op, out.element_type if in_library else accumulator_element(out))
    return rule


register_lowering(dy.MatmulOp, _run_by_library(lower_matmul, lambda op: True), target="cuda")
register_lowering(dy.Conv2dOp, _run_by_library(lower_conv, lambda op: ranked(op.out).rank == 4), target="cuda")
