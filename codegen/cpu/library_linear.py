"""Large float32 matmuls on the cpu target through oneDNN, where it beats MKL (option gemm_library).

torch has two float32 GEMMs on a CPU: MKL's sgemm_, which torch.mm / addmm / F.linear call in
eager (and inductor's default mode with them), and oneDNN's matmul behind torch's mkldnn linear
(inductor's freezing path). On an Intel Xeon they are level on the shapes of the CPU table's
models; on an AMD EPYC (this project's CI machine kind) oneDNN is 1.05-1.9x faster on them
(GPT-2's 128x768 @ 768x50257 LM head: 100.5 against 52.1 ms, 2 threads), since MKL runs a
generic code path on CPUs not made by Intel (benchmarks/cpu_gemm_providers.py,
results/cpu_gemm_providers_2026-11-28.md). oneDNN costs 10-30 us more a call, and reorders a
transposed left operand first (a weight gradient dY^T X: 101 against 92 ms for the LM head's, a
one-off timing), so only a matmul of at least MIN_MACS multiply-adds whose left operand is
row-major is taken. gemm_library=auto takes them on a CPU whose vendor is not Intel; mkl never,
onednn on any CPU.

After bufferization and memory planning, such a `linalg.matmul` whose C holds zeros (call-blas's
beta = 0 case) or addmm's bias broadcast into every row (library_epilogue's accumulator) becomes
calls of torch's stable C shim, with the frame, handles, statuses and copy of a convolution's
call (library_conv.py):

    aoti_torch_create_tensor_from_blob(A as X [m, k], B^T as W [n, k], the bias if any)
    aoti_torch_cpu__linear_pointwise(X, W, bias?, "none", ...) -> Y
    aoti_torch_create_tensor_from_blob(C)  aoti_torch_copy_(C, Y)  aoti_torch_delete_tensor_object ...

W is B's buffer with its dims swapped (a view: an nn.Linear weight read through the graph's
transpose is that weight as it lives); the zero fill or the bias broadcast goes. An activation
after it stays in our fused loops, and the copy into C is one pass over C. With sizes known only
at run time, the product m * n * k is tested at each call (an scf.if whose other branch keeps the
matmul for call-blas). The rest (batch matmuls, float64, small or transposed-left ones) stay for
call-blas.
"""

from __future__ import annotations

import functools

import numpy
import torch

from torch_mlir import ir
from torch_mlir.dialects import arith, llvm, memref, scf

from ...dialects.base import DYN
from ..passes import CompileError

from .library import dim_map, matrix_dims, nodes_calling, ops_named, pointer_to, previous_op, zero_fill_before
from .library_conv import (COPY, DELETE, LINEAR, ShimFrame, call_shim, declare_shim, record_status, then,
                           wrap_buffer)

MIN_MACS = 1 << 24  # m * n * k: 256^3, where the two met (0.173 / 0.174 ms, 2 threads, AMD EPYC; a one-off timing)
HANDLES = ("x", "w", "b", "y", "out")  # A, B^T, the bias, oneDNN's result, C
ATTR = "dynamo_linear_attr_none"  # the global holding "none": no fused activation


@functools.cache
def _cpu_vendor() -> str:
    """/proc/cpuinfo's vendor_id (GenuineIntel, AuthenticAMD, ...); "" where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("vendor_id")), "")
    except OSError:
        return ""


def uses_onednn(gemm_library: str, vendor: str | None = None) -> bool:
    """Whether large row-major-left float32 matmuls go to oneDNN under this option value (auto:
    a CPU not made by Intel, in a torch built with oneDNN)."""
    if gemm_library == "auto":
        vendor = _cpu_vendor() if vendor is None else vendor
        return vendor not in ("GenuineIntel", "") and torch.backends.mkldnn.is_available()
    return gemm_library == "onednn"


def _bias_broadcast_before(op) -> ir.Operation | None:
    """The linalg.generic right before op copying a 1-d bias into every row of op's C (the
    accumulator library_epilogue.fold_bias made of addmm's bias), if any."""
    previous = previous_op(op)
    if previous is None or previous.name != "linalg.generic" or len(previous.operands) != 2:
        return None
    bias, c = previous.operands
    maps = [ir.AffineMapAttr(m).value for m in previous.attributes["indexing_maps"]]
    body = previous.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands
    return previous if (c == op.opview.outputs[0] and ir.MemRefType(bias.type).rank == 1
                        and maps == [dim_map(2, 1), ir.AffineMap.get_identity(2)]
                        and len(list(body.operations)) == 1 and yielded[0] == body.arguments[0]) else None


def accumulator(op) -> tuple[str, ir.Operation] | None:
    """("zero", its fill) or ("bias", its broadcast): what C holds before op, when oneDNN's
    linear can compute it (it overwrites C, with the bias added), else None."""
    fill = zero_fill_before(op)
    if fill is not None:
        return "zero", fill
    broadcast = _bias_broadcast_before(op)
    return ("bias", broadcast) if broadcast is not None else None


def _sizes(op) -> tuple[int, int, int]:
    """(m, n, k), DYN where only known at run time."""
    a, b = op.opview.inputs
    (a_m, a_k), (_, b_n), _ = matrix_dims(op)
    return ir.MemRefType(a.type).shape[a_m], ir.MemRefType(b.type).shape[b_n], ir.MemRefType(a.type).shape[a_k]


def takes(op) -> bool:
    """A 2-d float32 linalg.matmul whose left operand is row-major (static unit stride along k)
    and C row-major (static strides), C holding zeros or a broadcast bias, and not known to be
    smaller than MIN_MACS multiply-adds (a size known only at run time is tested then: call)."""
    if op.name != "linalg.matmul" or accumulator(op) is None:
        return False
    a, c = op.opview.inputs[0], op.opview.outputs[0]
    if str(ir.MemRefType(c.type).element_type) != "f32":
        return False
    (_, a_k), _, (c_m, c_n) = matrix_dims(op)
    a_strides, c_strides = (ir.MemRefType(v.type).get_strides_and_offset()[0] for v in (a, c))
    m, n, k = _sizes(op)
    static = [v for v in (m, n, k) if v != DYN]
    return (a_strides[a_k] == 1 and c_strides[c_n] == 1 and n != DYN and c_strides[c_m] == n
            and (len(static) < 3 or m * n * k >= MIN_MACS))


def _attr_pointer(module: ir.Module) -> ir.Value:
    """A pointer to the C string "none" (a constant global of the module, made once)."""
    t = ir.MemRefType.get([5], ir.IntegerType.get_signless(8))
    if not any(op.operation.name == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value == ATTR
               for op in module.body.operations):
        with ir.InsertionPoint(module.body), ir.Location.unknown():
            text = ir.DenseElementsAttr.get(numpy.frombuffer(b"none\0", dtype=numpy.int8))
            memref.global_(ATTR, ir.TypeAttr.get(t), sym_visibility="private", initial_value=text, constant=True)
    return pointer_to(memref.get_global(t, ATTR))


def _emit(module: ir.Module, frame: ShimFrame, op, bias: ir.Value | None) -> None:
    """The calls computing C = A B (+ bias) through oneDNN (statuses and deletes as for a
    convolution: a call runs only if every one before it succeeded)."""
    a, b = op.opview.inputs
    c = op.opview.outputs[0]
    (a_m, a_k), (b_k, b_n), (c_m, c_n) = matrix_dims(op)
    null = llvm.mlir_zero(llvm.PointerType.get())
    frame.clear_handles(HANDLES)
    status = wrap_buffer(frame, a, "x", [a_m, a_k])
    status = then(status, lambda: wrap_buffer(frame, b, "w", [b_n, b_k]))
    if bias is not None:
        status = then(status, lambda: wrap_buffer(frame, bias, "b"))
    bias_slot = null if bias is None else frame.handle_slot("b")  # an optional tensor: a pointer to its handle
    status = then(status, lambda: call_shim(LINEAR, [frame.handle("x"), frame.handle("w"), bias_slot, _attr_pointer(module),
                                                     null, arith.constant(ir.IntegerType.get_signless(64), 0), null,
                                                     frame.handle_slot("y")]))
    status = then(status, lambda: wrap_buffer(frame, c, "out", [c_m, c_n]))
    status = then(status, lambda: call_shim(COPY, [frame.handle("out"), frame.handle("y"),
                                                   arith.constant(ir.IntegerType.get_signless(32), 0)]))
    for name in HANDLES:
        status = arith.ori(status, call_shim(DELETE, [frame.handle(name)]))
    record_status(status)


def call_onednn_linear(module: ir.Module, options) -> None:
    """After memory planning: each matmul `takes` accepts becomes oneDNN's linear, when the
    option's gemm_library says so; call-blas takes the rest."""
    library = options.target_options.gemm_library
    if library == "onednn" and not torch.backends.mkldnn.is_available():
        raise CompileError("loops", "gemm_library=onednn, but this torch was built without oneDNN "
                                                 "(torch.backends.mkldnn.is_available() is False): use auto or mkl")
    if not uses_onednn(library):
        return
    for fn in list(module.body.operations):
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        for op in ops_named(fn, ("linalg.matmul",)):
            if not takes(op):
                continue
            declare_shim(module)
            kind, before = accumulator(op)
            frame = ShimFrame(fn.regions[0].blocks[0], 2, ints=14)  # sizes and strides: 3 matrices, a bias
            with ir.InsertionPoint(op), op.location:
                emit = lambda: _emit(module, frame, op, before.operands[0] if kind == "bias" else None)  # noqa: E731
                if DYN in _sizes(op):
                    _if_large(op, before, emit)
                else:
                    emit()
            op.erase()
            before.erase()


def _if_large(op, before, emit) -> None:
    """scf.if m * n * k >= MIN_MACS (sizes read at run time): emit() in the then branch; in the
    else branch, clones of the accumulator's op and the matmul, for call-blas."""
    index = ir.IndexType.get()
    a, b = op.opview.inputs
    (a_m, a_k), (_, b_n), _ = matrix_dims(op)
    dims = [memref.dim(v, arith.constant(index, d)) for v, d in ((a, a_m), (b, b_n), (a, a_k))]
    macs = arith.muli(arith.muli(dims[0], dims[1]), dims[2])
    large = arith.cmpi(arith.CmpIPredicate.uge, macs, arith.constant(index, MIN_MACS))
    branch = scf.IfOp(large, [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        emit()
        scf.yield_([])
    with ir.InsertionPoint(branch.else_block):
        before.clone()
        op.clone()
        scf.yield_([])


def library_nodes(module: ir.Module) -> frozenset[str]:
    """FX node names whose matmuls run as oneDNN calls in the final LLVM-dialect module."""
    return nodes_calling(module, {LINEAR})
