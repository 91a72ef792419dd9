"""Attention on the cpu target through torch's fused CPU kernel, the one eager runs (`library_matmul`).

A float32/float64 `dynamo.attention` of static shapes (an inference graph's SDPA, kept whole by
CPUOptions.keeps_fused_attention) becomes, before lowering, one call of torch's stable C shim,
with the frame, handles, statuses and copy of a convolution's call (library_conv.py):

    aoti_torch_create_tensor_from_blob(q, k, v[, bias])
    aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal, bias?, &scale) -> y, lse
    aoti_torch_create_tensor_from_blob(out)  aoti_torch_copy_(out, y)  aoti_torch_delete_tensor_object ...

That is at::_scaled_dot_product_flash_attention_for_cpu: blocked over keys with an online
softmax and threaded over batch and heads by torch, so the [L, S] scores are never written, and
its numbers are eager's. The generic rule's math form (lowering/rules/attention.py) writes the
scores, runs the softmax as our loops and the products as MKL calls per batch and head.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, bufferization, llvm, memref

from ..buffer_reads import read_only_buffer
from .library import nodes_calling, ops_named
from .library_conv import (COPY, DELETE, ELEMENT_DTYPE, FLASH_ATTENTION, ShimFrame, call_shim, declare_shim,
                           record_status, strided_type, then, wrap_buffer)

HANDLES = ("x", "w", "v", "b", "y", "r0", "out")  # q, k, v, the bias, torch's result and logsumexp, ours


def eligible(op) -> bool:
    """A dynamo.attention torch's CPU kernel takes here: float32/float64 throughout, every shape
    static and non-empty."""
    types = [ir.RankedTensorType(v.type) for v in (op.query, op.key, op.value, *op.bias, op.out)]
    return str(types[-1].element_type) in ELEMENT_DTYPE and all(
        t.has_static_shape and 0 not in t.shape and t.element_type == types[-1].element_type for t in types)


def _emit(frame: ShimFrame, op, q, k, v, bias, out) -> None:
    """The calls computing the attention into the buffer `out` (statuses and deletes as for a
    convolution: a call runs only if every one before it succeeded)."""
    frame.clear_handles(HANDLES)
    status = wrap_buffer(frame, q, "x")
    status = then(status, lambda: wrap_buffer(frame, k, "w"))
    status = then(status, lambda: wrap_buffer(frame, v, "v"))
    if bias is not None:
        status = then(status, lambda: wrap_buffer(frame, bias, "b"))
    i32 = ir.IntegerType.get_signless(32)

    def attend():
        mask = frame.handle_slot("b") if bias is not None else llvm.mlir_zero(llvm.PointerType.get())
        return call_shim(FLASH_ATTENTION, [
            frame.handle("x"), frame.handle("w"), frame.handle("v"), arith.constant(ir.F64Type.get(), 0.0),
            arith.constant(i32, ir.IntegerAttr(op.is_causal).value), mask,
            frame.double(ir.FloatAttr(op.scale).value), frame.handle_slot("y"), frame.handle_slot("r0")])

    status = then(status, attend)
    status = then(status, lambda: wrap_buffer(frame, out, "out"))
    status = then(status, lambda: call_shim(COPY, [frame.handle("out"), frame.handle("y"), arith.constant(i32, 0)]))
    for name in HANDLES:
        status = arith.ori(status, call_shim(DELETE, [frame.handle(name)]))
    record_status(status)


def call_library_attention(module: ir.Module, options) -> None:
    """Before lowering (when library_matmul is on): each eligible dynamo.attention becomes torch's
    fused CPU attention called on its operands' buffers, writing a buffer handed back as its tensor."""
    if not options.target_options.library_matmul:
        return
    for fn in list(module.body.operations):
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        for op in ops_named(fn, ("dynamo.attention",)):
            view = op.opview
            if not eligible(view):
                continue
            declare_shim(module)
            out = ir.RankedTensorType(view.out.type)
            frame = ShimFrame(fn.regions[0].blocks[0], out.rank, ints=2 * out.rank * 5)  # 5 buffers' sizes, strides
            with ir.InsertionPoint(op), op.location:
                operands = [read_only_buffer(strided_type(ir.RankedTensorType(x.type)), x, op)
                            for x in (view.query, view.key, view.value, *view.bias)]
                y = memref.alloc(ir.MemRefType.get(out.shape, out.element_type), [], [])
                _emit(frame, view, *operands[:3], operands[3] if len(operands) > 3 else None, y)
                result = bufferization.to_tensor(out, y, restrict=True, writable=True)
            op.results[0].replace_all_uses_with(result)
            op.erase()


def library_nodes(module: ir.Module) -> frozenset[str]:
    """FX node names whose attention runs as a torch call in the final LLVM-dialect module."""
    return nodes_calling(module, {FLASH_ATTENTION})
