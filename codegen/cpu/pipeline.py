"""The CPU target's stages: dynamo -> linalg -> bufferized loops -> LLVM dialect."""

from torch_mlir import ir

from ...lowering import lower_dynamo_ops
from ..memref_copies import copies_to_linalg
from ..passes import run_pipeline
from ..zero_size import distinct_results, widen_zero_size_arguments
from . import fastmath, library


def make_linalg(module: ir.Module, options) -> ir.Module:
    if options.target_options.library_matmul:  # BLAS calls later: keep those matmuls named
        library.keep_library_matmuls(module)
    lower_dynamo_ops(module, target="cpu")
    if options.target_options.library_matmul:
        library.fold_transposes(module)
    run_pipeline(module, "canonicalize, cse", "linalg", options)
    return distinct_results(module)  # CSE may have made two results one value


def make_loops(module: ir.Module, options) -> ir.Module:
    passes = []
    if options.fuse_elementwise:
        passes.append("linalg-fuse-elementwise-ops")
    passes += [
        "canonicalize",
        "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}",
        # Results become out-params so torch allocates outputs (static allocations hoisted).
        "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}",
        "canonicalize",
        "buffer-deallocation-pipeline",
    ]
    run_pipeline(module, ", ".join(passes), "loops", options)
    if options.target_options.library_matmul:
        library.call_blas(module)  # named matmuls BLAS can take -> sgemm_/dgemm_ calls
    copies_to_linalg(module)
    widen_zero_size_arguments(module)  # the bare-pointer convention refuses memref<0x..>
    run_pipeline(module, "func.func(convert-linalg-to-loops), canonicalize, cse", "loops", options)
    return fastmath.expand_math(module, options)  # f32 exp, tanh, ... as arith, so their loops vectorize


def has_dynamic_memrefs(module: ir.Module) -> bool:
    """Whether a function of `module` takes a memref with a `?` dim (see runtime.py)."""
    for op in module.body.operations:
        if op.operation.name == "func.func":
            for t in ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs:
                if isinstance(t, ir.MemRefType) and not ir.MemRefType(t).has_static_shape:
                    return True
    return False


def make_llvm(module: ir.Module, options) -> ir.Module:
    passes = [
        "expand-strided-metadata",
        # x86 has no bf16/f16 arithmetic: LLVM would promote it through compiler-rt libcalls
        # (__truncsfbf2, ...) that the JIT process does not have, and the call would crash.
        # Compute such math/arith ops in f32 (rounding back after each op, as PyTorch's scalar
        # kernels do), then do the remaining bf16 <-> f32 conversions with integer bit operations.
        "func.func(math-extend-to-supported-types{extra-types=f32 target-type=f32})",
        "func.func(arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32})",
        # No math-expand-ops: it rewrites exp2, tanh, sinh, ... into exp-based formulas (exp2(-126)
        # was off by 5 ulp in f32); the intrinsics and libm are correctly rounded or nearly so.
        "func.func(arith-expand{include-bf16=true})",
        "lower-affine",
        "convert-scf-to-cf",
        "convert-math-to-llvm{approximate-log1p=false}",  # log(1 + x) loses tiny x: libm log1p
        "convert-math-to-libm",
        "convert-arith-to-llvm",
        "finalize-memref-to-llvm",
        "convert-cf-to-llvm",
        # Bare pointers: one pointer per tensor, the cheapest call (static shapes only; with
        # dynamic dims every memref is a descriptor: pointers, offset, sizes, strides).
        f"convert-func-to-llvm{{use-bare-ptr-memref-call-conv={0 if has_dynamic_memrefs(module) else 1}}}",
        "convert-arith-to-llvm",
        "reconcile-unrealized-casts",
    ]
    return run_pipeline(module, ", ".join(passes), "llvm", options)
