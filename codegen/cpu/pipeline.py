"""The CPU target's stages: dynamo -> linalg -> bufferized loops -> LLVM dialect."""

from torch_mlir import ir

from ...lowering import lower_dynamo_ops
from .. import stages
from ..passes import run_pipeline
from ..memref_copies import copies_to_linalg
from ..zero_size import distinct_results, widen_zero_size_arguments
from . import (channels_last, fastmath, lane_vectors, library, library_conv, library_epilogue, memory_plan,
               parallel, shared_broadcasts)


def make_linalg(module: ir.Module, options) -> ir.Module:
    if options.target_options.library_matmul:  # BLAS calls later: keep those matmuls named
        library.keep_library_matmuls(module)
    channels_last.keep_channels_last(module, options)  # chained convolutions NHWC, no transposes between them
    library_conv.call_library_convs(module, options)  # convolutions -> torch's kernel (library_matmul)
    lower_dynamo_ops(module, target="cpu")
    if options.target_options.library_matmul:
        library.fold_transposes(module)
        library_epilogue.fold_bias(module)  # a linear's bias preset in C: the gemm adds it (beta = 1)
    run_pipeline(module, "canonicalize, cse", "linalg", options)
    return distinct_results(module)  # CSE may have made two results one value


def make_loops(module: ir.Module, options) -> ir.Module:
    if options.fuse_elementwise:
        shared_broadcasts.clone_shared_broadcasts(module)  # a scalar shared by CSE: fused into each loop
        run_pipeline(module, "linalg-fuse-elementwise-ops", "loops", options)
    if options.target_options.library_matmul:
        library_epilogue.unshare_zero_fills(module)  # no copy of a shared zero C before each gemm
    stages.bufferize(module, options, "loops", deallocate=False)
    if options.target_options.plan_memory:  # static intermediates -> views of one kept workspace
        memory_plan.plan_memory(module)
    run_pipeline(module, "buffer-deallocation-pipeline", "loops", options)  # what was not planned
    if options.target_options.library_matmul:
        library.call_blas(module)  # named matmuls BLAS can take -> sgemm_/dgemm_ calls
    if options.target_options.parallel:  # large nests outlined into torch_parallel_for calls
        copies_to_linalg(module)
        widen_zero_size_arguments(module)  # the bare-pointer convention refuses memref<0x..>
        module = parallel.make_parallel_loops(module, options)
    else:
        module = stages.to_loops(module, options, "loops")
    module = fastmath.expand_math(module, options)  # f32 exp, tanh, ... as arith, so their loops vectorize
    if lane_vectors.vectorize_lane_loops(module):  # a row reduction's lanes as vector<16> ops (after fast_math)
        module = run_pipeline(module, "canonicalize, cse", "loops", options)
    return module


def make_llvm(module: ir.Module, options) -> ir.Module:
    # libm for exp/log/...: correctly rounded or nearly so (math-expand-ops is left out on
    # purpose: its exp-based tanh/sinh/... and exp2 were several ulp off in f32).
    return stages.loops_to_llvm(module, options, "llvm")
