"""The CPU target's stages, dynamo -> linalg -> bufferized loops -> LLVM dialect, as lists of
named passes (codegen/passes.py): each declares the options it reads, the attributes it sets or
relies on and the passes it needs before it; the driver runs, times and (with dump_passes)
dumps them one by one."""

from ...lowering import lower_dynamo_ops
from .. import stages
from ..contraction_precision import contractions_in_float32
from ..attributes import HANDED_RESULTS, INPUT_COUNT, NOALIAS, PLANNED, READ, RETAINS, WORKSPACE_BYTES
from ..half_bits import bf16_as_bits
from ..memref_copies import copies_to_linalg
from ..scalar_hoist import hoist_invariant_scalars
from ..sibling_reductions import fuse_sibling_reductions
from ..passes import Pass, register_pass, run_pipeline, upstream
from ..channels_last import keep_channels_last
from ..consumer_results import fuse_consumers_as_results
from ..zero_size import distinct_results, widen_zero_size_arguments
from . import (fastmath, handed_results, narrow_elementwise, lane_vectors, library, library_attention, library_conv,
               library_epilogue, library_linear, memory_plan, parallel, shared_broadcasts)

_library = lambda o: o.target_options.library_matmul  # noqa: E731
_fusing = lambda o: o.fuse_elementwise  # noqa: E731


def _pass(name, run, doc, **contract) -> Pass:
    return register_pass(Pass(f"cpu-{name}", run, doc, **contract))


def _vectorize_lanes(module, options):
    if lane_vectors.vectorize_lane_loops(module):  # rewrote loops: fold what it left
        return run_pipeline(module, "canonicalize, cse", "cpu-lane-vectors", options)
    return module


def _fuse_sibling_reductions(module, options):
    # A producer the siblings both read has one reader after the merge: fuse it in.
    if fuse_sibling_reductions(module, alike_inputs=True):
        return run_pipeline(module, "linalg-fuse-elementwise-ops, canonicalize, cse",
                            "cpu-fuse-sibling-reductions", options)
    return module


def _collapse_narrow_elementwise(module, options):
    # Two ops on one buffer each get a view of it: CSE makes them one value, else a parallel group
    # holding both passes LLVM two pointers it cannot prove equal, and the runtime alias check of
    # the vectorized loop fails on every call (they are equal): scalar code.
    if narrow_elementwise.collapse_narrow_elementwise(module):
        return run_pipeline(module, "cse", "cpu-collapse-narrow-elementwise", options)
    return module


def _parallel_loops(module, options):
    copies_to_linalg(module)
    widen_zero_size_arguments(module)  # the bare-pointer convention refuses memref<0x..>
    return parallel.make_parallel_loops(module, options)


LINALG = (
    _pass("expand-conv-grads", library_conv.expand_conv_grads,
          "Convolution gradients torch's backward will not take here -> the dynamo.conv2d of their generic "
          "rule (before the passes that widen or hand convolutions to torch).", options=("library_matmul",)),
    _pass("contractions-in-float32", lambda m, o: contractions_in_float32(m),
          "Half matmuls and convolutions computed on float32 copies of their operands (MKL and our loops "
          "have no fast half kernels); a reader widening the result reads it unrounded."),
    _pass("channels-last",
          lambda m, o: keep_channels_last(m, library_conv.eligible, o.target_options.channels_last_training),
          "Chained 2-d convolutions (and, in a training graph where it pays, their gradients) in NHWC, with no "
          "transposes between them; free results returned NHWC.",
          options=("library_matmul", "channels_last", "channels_last_training"),
          enabled=lambda o: o.target_options.library_matmul and o.target_options.channels_last),
    _pass("library-convs", library_conv.call_library_convs,
          "Convolutions and their gradients -> calls of torch's kernels, their inputs read apart.",
          options=("library_matmul", "hand_over_results"), produces=(READ, RETAINS, INPUT_COUNT)),
    _pass("library-attention", library_attention.call_library_attention,
          "Attention of static float shapes -> a call of torch's fused CPU kernel (eager's), its inputs read apart.",
          options=("library_matmul",), produces=(READ, RETAINS)),
    _pass("lower-dynamo-ops", lambda m, o: lower_dynamo_ops(m, target="cpu", options=o),
          "Every dynamo op -> linalg/tensor/arith/math by the cpu rules, then the generic ones (a matmul "
          "MKL will take stays a named linalg.matmul/batch_matmul with library_matmul).",
          options=("library_matmul",)),
    _pass("fold-transposes", lambda m, o: library.fold_transposes(m),
          "A transpose feeding only matmuls becomes the matmul's transposed operand.",
          options=("library_matmul",), enabled=_library, requires=("cpu-lower-dynamo-ops",)),
    _pass("fold-bias", lambda m, o: library_epilogue.fold_bias(m),
          "A linear's bias preset in the gemm's C (beta = 1) instead of an add after it.",
          options=("library_matmul",), enabled=_library, requires=("cpu-lower-dynamo-ops",)),
    upstream("cpu-linalg-cleanup", "canonicalize, cse", "Canonicalize and CSE the linalg module."),
    _pass("distinct-results", lambda m, o: distinct_results(m),
          "Every returned tensor its own value (CSE may have made two results one)."),
)

LOOPS = (
    _pass("clone-shared-broadcasts", lambda m, o: shared_broadcasts.clone_shared_broadcasts(m),
          "A broadcast scalar shared by CSE cloned per user, so each loop fuses its own.",
          options=("fuse_elementwise",), enabled=_fusing),
    upstream("cpu-fuse-elementwise", "linalg-fuse-elementwise-ops", "Producer/consumer elementwise fusion.",
             options=("fuse_elementwise",), enabled=_fusing),
    _pass("fuse-sibling-reductions", _fuse_sibling_reductions,
          "Reductions of one iteration space reading a common input (a variance's centered sum and sum of "
          "squares) merged into one loop with a result each, then what they read fused into it.",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cpu-fuse-elementwise",)),
    _pass("fuse-consumers-as-results", lambda m, o: fuse_consumers_as_results(m),
          "An elementwise consumer of a value other ops read too computed by that value's producer as one more "
          "result: one loop, the value not read back.",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cpu-fuse-elementwise",)),
    _pass("hoist-invariant-scalars", lambda m, o: hoist_invariant_scalars(m),
          "Scalar math every iteration of a fused loop computes alike (an optimizer's bias corrections) "
          "computed once, in a 0-d op before it.", options=("fuse_elementwise",), enabled=_fusing,
          requires=("cpu-fuse-elementwise",)),
    _pass("unshare-zero-fills", lambda m, o: library_epilogue.unshare_zero_fills(m),
          "Each gemm's zero C its own fill right before it (what call-blas folds into beta = 0).",
          options=("library_matmul",), enabled=_library),
    # read-only arguments, cleanup, distinct results, inputs written in place, bufferize
    *stages.buffer_passes("cpu", written_inputs=True),
    _pass("release-adopted-results", library_conv.release_adopted_results,
          "The torch tensor behind each convolution result read in place freed right after the buffer's last use.",
          options=("library_matmul",), enabled=_library, requires=("cpu-bufferize",)),
    _pass("hand-over-results", handed_results.hand_over_results,
          "A convolution result that is itself a function result handed to the caller as torch's tensor (its "
          "handle in a new argument) instead of copied into the out-param.",
          options=("library_matmul", "hand_over_results"), enabled=_library, consumes=(INPUT_COUNT,),
          produces=(HANDED_RESULTS,), requires=("cpu-release-adopted-results",)),
    _pass("plan-memory", lambda m, o: memory_plan.plan_memory(m),
          "Static intermediate buffers -> views of one workspace at planned offsets.",
          options=("plan_memory",), enabled=lambda o: o.target_options.plan_memory, produces=(WORKSPACE_BYTES, PLANNED),
          consumes=(RETAINS,),
          requires=("cpu-bufferize",)),
    upstream("cpu-deallocate", "buffer-deallocation-pipeline", "Free the buffers memory planning left.",
             requires=("cpu-bufferize",)),
    _pass("call-onednn-linear", library_linear.call_onednn_linear,
          "Large float32 matmuls with a row-major left operand -> oneDNN linear calls where gemm_library says so.",
          options=("library_matmul", "gemm_library"), enabled=_library, requires=("cpu-unshare-zero-fills", "cpu-bufferize")),
    _pass("call-blas", lambda m, o: library.call_blas(m),
          "Named matmuls BLAS can take -> sgemm_/dgemm_ calls.",
          options=("library_matmul",), enabled=_library, requires=("cpu-unshare-zero-fills", "cpu-bufferize")),
    _pass("collapse-narrow-elementwise", _collapse_narrow_elementwise,
          "Elementwise ops on contiguous buffers whose innermost dim is too narrow to vectorize (a 3x3 "
          "kernel's weights) over rows x one flat dim (memref.collapse_shape views).", requires=("cpu-bufferize",)),
    _pass("parallel-loops", _parallel_loops,
          "Large loop nests outlined into torch_parallel_for calls, the rest as scf loops.",
          options=("parallel",), enabled=lambda o: o.target_options.parallel, produces=(NOALIAS,),
          consumes=(PLANNED,)),
    _pass("to-loops", lambda m, o: stages.to_loops(m, o, "loops"),
          "Linalg ops and memref copies as scf loops.",
          options=("parallel",), enabled=lambda o: not o.target_options.parallel),
    _pass("fast-math", fastmath.expand_math,
          "f32 exp, tanh, ... as branch-free arithmetic, so their loops vectorize.", options=("fast_math",)),
    _pass("lane-vectors", _vectorize_lanes,
          "Every innermost 0..16 step-1 loop that is exactly lane-wise (a row reduction's lanes, and any other "
          "16-wide loop) as vector<16> ops (after fast-math).", consumes=(NOALIAS, PLANNED),
          requires=("cpu-fast-math",)),
)

# libm for exp/log/...: correctly rounded or nearly so (math-expand-ops is left out on purpose:
# its exp-based tanh/sinh/... and exp2 were several ulp off in f32).
LLVM = (
    _pass("to-llvm", lambda m, o: stages.loops_to_llvm(m, o, "llvm", bits=False),
          "scf loops -> the LLVM dialect (bare pointers for static shapes)."),
    # LLVM folds bf16 bit moves back into bfloat selects that an x86 CPU without AVX-512-BF16
    # legalizes with a compiler-rt call the process lacks: no bfloat value may reach LLVM.
    _pass("bf16-as-bits", lambda m, o: bf16_as_bits(m, "llvm"),
          "Every bf16 value as its i16 bits; an op still computing on bf16 is a CompileError.",
          requires=("cpu-to-llvm",)),
)
