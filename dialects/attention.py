"""Attention: scaled dot-product attention as one op, so that a target may run it as one fused
kernel (the cuda target calls torch's flash/efficient attention: codegen/cuda/library_calls.py)
and the [L, S] attention matrix never has to reach memory. The generic lowering
(lowering/rules/attention.py) expands it into the math form, which every target can run."""

from typing import Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, shape_of, elem_of, dims_compatible


def _is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def _require_bias(biases, q: list, k: list, elem: ir.Type) -> None:
    _require(len(biases) <= 1, "at most one bias")
    for bias in biases:
        full = q[:3] + [k[2]]
        b = shape_of(bias)
        _require(len(b) == 4 and b[3] == k[2] and all(x in (1, f) for x, f in zip(b[:3], full[:3])),
                 f"bias {b} must broadcast to {full} (each of its first three dims 1 or full, the last S)")
        _require(elem_of(bias) == elem, "bias must have the operands' element type")


class AttentionOp(Dynamo.Operation, name="attention", traits=[Pure]):
    """softmax(scale * q @ k^T + bias, masked above the diagonal when is_causal) @ v, per batch
    and head: q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev] -> [B, H, L, Ev]. `bias` (zero or
    one operand) is additive, of shape [b, h, l, S] where each of b, h, l is 1 or the full size
    (broadcast over it); a -inf bias masks a position out. The causal mask keeps key positions
    s <= l (top-left aligned, as torch's SDPA). A row with every position masked gives zeros
    (torch's math SDPA and its fused kernels agree on that). is_causal is 0 or 1; scale is the
    factor of q @ k^T (1/sqrt(E) is torch's default, already filled in).

    Example (causal, no bias):
      %o = "dynamo.attention"(%q, %k, %v) {is_causal = 1 : i64, scale = 0.17677669529663687 : f64,
             operandSegmentSizes = array<i32: 1, 1, 1, 0>}
             : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
    """

    query: Operand[ir.RankedTensorType]
    key: Operand[ir.RankedTensorType]
    value: Operand[ir.RankedTensorType]
    bias: Sequence[Operand[ir.RankedTensorType]]
    is_causal: ir.IntegerAttr
    scale: ir.FloatAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        q, k, v, out = (shape_of(x) for x in (self.query, self.key, self.value, self.out))
        _require(len(q) == len(k) == len(v) == len(out) == 4, "query, key, value and result must be rank 4 [B, H, *, E]")
        _require(dims_compatible(k[:2], q[:2]) and dims_compatible(v[:3], k[:3]),
                 f"key {k} and value {v} must share query's batch and heads {q[:2]} and one length S")
        _require(dims_compatible([k[3]], [q[3]]), f"query and key head dims differ ({q[3]} vs {k[3]})")
        _require(dims_compatible(out, q[:3] + v[3:]), f"result must be {q[:3] + v[3:]}, got {out}")
        elem = elem_of(self.query)
        _require(_is_float(elem), "operands must be float tensors")
        _require(elem_of(self.key) == elem_of(self.value) == elem_of(self.out) == elem, "element types differ")
        _require(ir.IntegerAttr(self.is_causal).value in (0, 1), "is_causal must be 0 or 1")
        _require_bias(self.bias, q, k, elem)


class AttentionGradOp(Dynamo.Operation, name="attention_grad", traits=[Pure]):
    """The gradients of dynamo.attention's output with respect to q, k and v, given `grad`, the
    output's gradient: the same operands and attributes as the forward op it differentiates
    (the bias takes no gradient). A fused backward kernel recomputes what it needs of the
    forward (the scores' row statistics): nothing but q, k, v and the bias is saved for it.

    Example:
      %dq, %dk, %dv = "dynamo.attention_grad"(%g, %q, %k, %v) {is_causal = 1 : i64, scale = 0.125 : f64,
             operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}
             : (tensor<2x4x64x32xbf16>, tensor<2x4x64x32xbf16>, ...) -> (tensor<2x4x64x32xbf16>, ...)
    """

    grad: Operand[ir.RankedTensorType]
    query: Operand[ir.RankedTensorType]
    key: Operand[ir.RankedTensorType]
    value: Operand[ir.RankedTensorType]
    bias: Sequence[Operand[ir.RankedTensorType]]
    is_causal: ir.IntegerAttr
    scale: ir.FloatAttr
    grad_query: Result[ir.RankedTensorType]
    grad_key: Result[ir.RankedTensorType]
    grad_value: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        q, k, v, g = (shape_of(x) for x in (self.query, self.key, self.value, self.grad))
        _require(len(q) == len(k) == len(v) == 4, "query, key and value must be rank 4 [B, H, *, E]")
        _require(dims_compatible(k[:2], q[:2]) and dims_compatible(v[:3], k[:3]) and dims_compatible([k[3]], [q[3]]),
                 f"query {q}, key {k} and value {v} do not make one attention")
        _require(dims_compatible(g, q[:3] + v[3:]), f"grad must be the output's shape {q[:3] + v[3:]}, got {g}")
        for operand, result in ((self.query, self.grad_query), (self.key, self.grad_key),
                                (self.value, self.grad_value)):
            _require(dims_compatible(shape_of(result), shape_of(operand)), "each gradient has its operand's shape")
            _require(elem_of(result) == elem_of(operand), "each gradient has its operand's element type")
        elem = elem_of(self.query)
        _require(_is_float(elem), "operands must be float tensors")
        _require(all(elem_of(x) == elem for x in (self.key, self.value, self.grad)), "element types differ")
        _require(ir.IntegerAttr(self.is_causal).value in (0, 1), "is_causal must be 0 or 1")
        _require_bias(self.bias, q, k, elem)
