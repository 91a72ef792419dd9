"""The cuda target's stages: dynamo -> linalg -> buffers -> gpu -> nvvm -> ll -> ptx.

Up to `gpu` the artifact is the MLIR module (host functions with gpu.launch_func ops plus
outlined gpu.modules). From `nvvm` on it is a `CudaProgram`: the host schedule, extracted once
from the host function, and the device code, which changes form (NVVM module, LLVM IR, PTX).
"""

from __future__ import annotations

from torch_mlir import ir

from ...lowering import lower_dynamo_ops
from .. import stages
from ..passes import CompileError, run_pipeline
from . import ptx, schedule, to_gpu
from .loopnest import Unsupported


def make_linalg(module: ir.Module, options) -> ir.Module:
    lower_dynamo_ops(module, target="cuda")
    passes = ["canonicalize", "cse"]
    if options.fuse_elementwise:
        passes += ["linalg-fuse-elementwise-ops", "canonicalize", "cse"]
    return run_pipeline(module, ", ".join(passes), "linalg", options)


def _unique_results(module: ir.Module) -> None:
    """Give a value returned twice (AOTAutograd's forward can save an output as an activation too)
    its own copy: buffer-results-to-out-params crashes on a duplicated result."""
    from torch_mlir.dialects import linalg, tensor

    for func_op in module.body.operations:
        if func_op.operation.name != "func.func" or to_gpu.is_declaration(func_op):
            continue
        ret = list(func_op.regions[0].blocks[0].operations)[-1].operation
        seen = set()
        for i, value in enumerate(list(ret.operands)):
            if value in seen:
                with ir.InsertionPoint(ret), ret.location:
                    t = ir.RankedTensorType(value.type)
                    copy = linalg.copy(value, outs=[tensor.empty(list(t.shape), t.element_type)])
                ret.operands[i] = copy
            seen.add(value)


def make_buffers(module: ir.Module, options) -> ir.Module:
    with module.context:
        _unique_results(module)
    return stages.bufferize(module, options, "buffers", deallocate=False)


def make_gpu(module: ir.Module, options) -> ir.Module:
    try:
        with module.context, ir.Location.unknown():
            cuda = options.target_options
            to_gpu.convert_module(module, library=cuda.library_matmul, fuse_rows=cuda.cuda_fuse_rows,
                                  rows=cuda.row_selection(), graph=options.graph_name)
    except Unsupported as e:
        raise CompileError("gpu", str(e)) from None
    # Outlining sinks constants into the kernels; what stays captured becomes kernel arguments.
    return run_pipeline(module, "gpu-kernel-outlining, canonicalize, cse", "gpu", options)


def make_nvvm(module: ir.Module, options) -> ptx.CudaProgram:
    try:
        hosts = schedule.extract(module)
    except Unsupported as e:
        raise CompileError("nvvm", str(e)) from None
    bits = 32 if max([h.max_elements for h in hosts.values()] or [0]) < 2**31 else 64  # 32-bit index math where every buffer fits
    passes = [
        "gpu.module(convert-scf-to-cf, "
        f"convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1 index-bitwidth={bits}}}, "
        # Math ops convert-gpu-to-nvvm maps to no libdevice function (trunc, absi, ...) become
        # LLVM intrinsics that NVPTX selects; left as math ops they cannot be translated.
        "convert-math-to-llvm, canonicalize, cse, reconcile-unrealized-casts)",
    ]
    for host in hosts.values():
        host.index_bits = bits
    run_pipeline(module, ", ".join(passes), "nvvm", options)
    return ptx.CudaProgram(hosts, ptx.device_module(module), "nvvm")


def make_ll(program: ptx.CudaProgram, options) -> ptx.CudaProgram:
    try:
        return program.with_device(ptx.llvm_ir(program.device), "ll")
    except ptx.Untranslatable as e:
        raise CompileError("ll", str(e)) from None


def make_ptx(program: ptx.CudaProgram, options) -> ptx.CudaProgram:
    try:
        return program.with_device(ptx.emit_ptx(program.device, ptx.arch_for(options)), "ptx")
    except ptx.Untranslatable as e:
        raise CompileError("ptx", str(e)) from None
