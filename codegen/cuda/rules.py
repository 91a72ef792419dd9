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

matmul on half operands: with library_matmul, cuBLAS runs it (a host schedule library step), on
tensor cores, accumulating in float32 and rounding once at the store, which is the dialect's
semantics: the named linalg op takes the half result directly, with no float32 buffer and
rounding kernel after it. Otherwise the generic rule's float32 accumulator.

convolution: with library_matmul, a static NC[D]HW one is a torch call (library_calls.py:
cuDNN pads as it reads and writes the result buffer itself, half operands as they are);
otherwise the generic rule. Its input and weight gradients likewise: torch's
convolution_backward (cuDNN's backward kernels), else the generic expansion.
"""

from ...dialects import dynamo as dy
from ...lowering import register_lowering
from ...lowering.rules.common import accumulator_element, ranked
from ...lowering.rules.conv import lower_conv, lower_conv_grad_input, lower_conv_grad_weight
from ...lowering.rules.matmul import lower_matmul
from ...lowering.rules.reduction import SUM_BLOCK, lower_reduce
from . import library_calls
from ..gpu.kernels import ROW_THREADS


@register_lowering(dy.ReduceOp, target="cuda")
def _lower_reduce(ctx, op):
    return lower_reduce(op, ROW_THREADS * SUM_BLOCK)


register_lowering(dy.IndexPutOp, library_calls.index_put, target="cuda")
register_lowering(dy.ScatterOp, library_calls.scatter, target="cuda")
register_lowering(dy.AttentionOp, library_calls.attention, target="cuda")
register_lowering(dy.AttentionGradOp, library_calls.attention_grad, target="cuda")


@register_lowering(dy.MatmulOp, target="cuda")
def _lower_matmul(ctx, op):
    out = ranked(op.out)
    return lower_matmul(op, out.element_type if ctx.target_option("library_matmul") else accumulator_element(out))


@register_lowering(dy.ConvGradInputOp, target="cuda")
def _lower_conv_grad_input(ctx, op):
    call = library_calls.conv_grad_input(ctx, op) if ctx.target_option("library_matmul") else None
    return call if call is not None else lower_conv_grad_input(ctx, op)


@register_lowering(dy.ConvGradWeightOp, target="cuda")
def _lower_conv_grad_weight(ctx, op):
    call = library_calls.conv_grad_weight(ctx, op) if ctx.target_option("library_matmul") else None
    return call if call is not None else lower_conv_grad_weight(ctx, op)


@register_lowering(dy.Conv2dOp, target="cuda")
def _lower_conv(ctx, op):
    call = library_calls.convolution(ctx, op) if ctx.target_option("library_matmul") else None
    return call if call is not None else lower_conv(op, accumulator_element(ranked(op.out)))
