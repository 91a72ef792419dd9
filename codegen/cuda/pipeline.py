"""The cuda target's stages: dynamo -> linalg -> buffers -> gpu -> nvvm -> ll -> ptx.

linalg, buffers, gpu and nvvm are lists of named passes (codegen/passes.py); ll and ptx are
translations of the device code, run as functions. (A value returned twice,
which AOTAutograd's forward makes when it saves an output as an activation too, gets its own
buffer in `stages.bufferize`, as on every target.)

Up to `gpu` the artifact is the MLIR module (host functions with gpu.launch_func ops plus
outlined gpu.modules). The nvvm stage's last pass, cuda-program, makes it a `CudaProgram`: the
host schedule, extracted once from the host function, and the device code, which changes form
from then on (NVVM module, LLVM IR, PTX).
"""

from __future__ import annotations

from torch_mlir import ir

from ...lowering import lower_dynamo_ops
from .. import stages
from ..channels_last import keep_channels_last
from ..consumer_results import fuse_consumers_as_results
from ..gathered_producers import compute_gathered_elements
from ..horizontal_fusion import fuse_horizontally
from ..identical_kernels import merge_identical_kernels
from ..kernel_names import name_kernels
from ..own_inits import own_inits
from ..padded_producers import fuse_pads_into_producers
from ..recompute_producers import recompute_cheap_producers
from ..reshape_hoist import hoist_reshapes
from ..scalar_operands import read_scalars_directly
from ..sibling_reductions import fuse_sibling_reductions, reads_rows_contiguously
from ..sliced_reshapes import expand_reshapes_of_slices
from ..attributes import INDEX_BITWIDTH, LIBRARY_CALL, OVERWRITE, READ, KERNEL_NAME, WRITTEN_ARGUMENTS
from ..gpu.kernel_abi import extern_dynamic_shared
from ..gpu.loopnest import Unsupported
from ..passes import CompileError, Pass, register_pass, upstream
from . import library_calls, ptx, schedule, to_gpu
from .forwarded_copies import forward_copies
from .matmul_bias import adds_bias_to_matmul, fold_bias_into_matmuls
from .widened_matmuls import widened_matmuls_on_half


_per_host = to_gpu.per_host


def _fuse_rows(module, options) -> None:
    """Row groups fused on every host function, numbered across them (cuda_rowfuse_only)."""
    keep = to_gpu.row_filter(options.target_options.row_selection(), options.graph_name)
    _per_host(lambda func_op: to_gpu.fuse_row_groups(func_op, keep))(module, options)


def _pass(name, run, doc, **contract) -> Pass:
    return register_pass(Pass(f"cuda-{name}", run, doc, **contract))


_fusing = lambda o: o.fuse_elementwise  # noqa: E731
_library = lambda o: o.target_options.library_matmul  # noqa: E731

LINALG = (
    _pass("channels-last", lambda m, o: keep_channels_last(m, library_calls.channels_last_eligible),
          "Chained 2-d convolutions in NHWC, cuDNN's tensor-core layout, with no transposes between them.",
          options=("library_matmul", "channels_last"),
          enabled=lambda o: o.target_options.library_matmul and o.target_options.channels_last),
    _pass("widened-matmuls-on-half", lambda m, o: widened_matmuls_on_half(m),
          "A float32 matmul of two widened half tensors reads the half ones (float32 result): cuBLAS's "
          "tensor-core kernels, the same sums.", options=("library_matmul",), enabled=_library),
    _pass("lower-dynamo-ops", lambda m, o: lower_dynamo_ops(m, target="cuda", options=o),
          "Every dynamo op -> linalg on tensors by the cuda rules (library calls: index_put, scatter, "
          "attention), then the generic ones.", produces=(LIBRARY_CALL, READ)),
    upstream("cuda-linalg-cleanup", "canonicalize, cse", "Canonicalize and CSE the linalg module."),
    _pass("expand-reshapes-of-slices", lambda m, o: expand_reshapes_of_slices(m),
          "A reshape of a slice that only splits dims (attention's q/k/v heads) -> tensor.expand_shape: a "
          "strided view of the slice, not a copy of it.", requires=("cuda-linalg-cleanup",)),
    _pass("hoist-reshapes", lambda m, o: hoist_reshapes(m),
          "A reshape between two elementwise ops moved above the first (a linear's bias add and the GELU "
          "after its view), or below the second where it merges dims (a layer norm's rows and their cast for "
          "a matmul), so that elementwise fusion makes them one kernel; matmuls keep their shape.",
          options=("fuse_elementwise",), enabled=_fusing),
    upstream("cuda-fuse-elementwise", "linalg-fuse-elementwise-ops, canonicalize, cse",
             "Producer/consumer elementwise fusion.", options=("fuse_elementwise",), enabled=_fusing),
    # After a first fusion: broadcasts are fused into their users, so a shifted or widened value
    # reads only its full-size input.
    _pass("recompute-cheap-producers", lambda m, o: recompute_cheap_producers(m),
          "An elementwise producer no wider to read than its result, cloned for each elementwise or "
          "reduction consumer (they then read its inputs, not a written copy).",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cuda-fuse-elementwise",)),
    upstream("cuda-fuse-recomputed-producers", "linalg-fuse-elementwise-ops, canonicalize, cse",
             "The recomputed producers fused into their consumers.", options=("fuse_elementwise",),
             enabled=_fusing, requires=("cuda-recompute-cheap-producers",)),
    _pass("read-scalars-directly", lambda m, o: read_scalars_directly(m),
          "A generic's input that packs one scalar (a mean's count over a symbolic dim) read as that scalar: "
          "a kernel argument, not a one-element buffer the host fills every call."),
    upstream("cuda-erase-unread-inputs", "linalg-fuse-elementwise-ops, canonicalize, cse",
             "The inputs no body reads any more erased (and what that lets fuse, fused).",
             options=("fuse_elementwise",), enabled=_fusing, requires=("cuda-read-scalars-directly",)),
    _pass("compute-gathered-elements", lambda m, o: compute_gathered_elements(m),
          "An elementwise producer read only by gathers (a cross-entropy's log_softmax, read at each row's "
          "target) computed at the gathered elements inside the gather: the full tensor is never written.",
          requires=("cuda-linalg-cleanup",)),
    _pass("fuse-pads-into-producers", lambda m, o: fuse_pads_into_producers(m),
          "A pad of an elementwise op's result (a half matmul's operand padded to a multiple of 8) written by "
          "that op into the padded tensor's interior, zeros around it: no fill and copy of the whole.",
          requires=("cuda-linalg-cleanup",)),
    _pass("fuse-consumers-as-results",
          lambda m, o: fuse_consumers_as_results(m, takes=lambda p: not (_library(o) and adds_bias_to_matmul(p))),
          "An elementwise consumer of a value other ops read too (a gradient and its bf16 copy) computed by "
          "that value's producer as one more result: one kernel, the value not read back (a matmul's bias add "
          "is left to cuda-fold-bias-into-matmuls).",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cuda-fuse-elementwise",)),
    _pass("fuse-horizontally", lambda m, o: fuse_horizontally(m),
          "Small independent elementwise ops over the same loops (an optimizer's per-parameter updates of step "
          "counts and vectors) merged into one generic: one launch for several microsecond kernels.",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cuda-fuse-elementwise",)),
    _pass("fuse-sibling-column-sums",
          lambda m, o: fuse_sibling_reductions(m, mergeable=lambda op: not reads_rows_contiguously(op)),
          "Reductions over the same loops reading a common input (a layer norm's weight and bias gradients, "
          "column sums of one output gradient) merged into one generic with a result each: one kernel reads "
          "the gradient once. Row reductions stay apart (a row kernel takes one result; cuda-fuse-rows groups "
          "them instead).",
          options=("fuse_elementwise",), enabled=_fusing, requires=("cuda-fuse-elementwise",)),
    # After the last CSE: it would merge the inits again.
    _pass("own-inits", lambda m, o: own_inits(m, to_gpu.LIBRARY_OPS + ("linalg.transpose", "tensor.insert_slice"),
                                              fills_for=("linalg.generic",),
                                              empties_for=lambda op: _library(o) and adds_bias_to_matmul(op)),
          "Each library op, transpose and concatenation its own empty / zero fill, each reduction its own fill "
          "(CSE shared them), so that bufferization gives each its own buffer: a transpose can become a view, a "
          "fill can fold into the library call or the reduction's kernel (not copied in by a kernel of its "
          "own), a concatenation's pieces can be written in place (cuda-forward-copies); and each matmul's bias "
          "add its own empty (library_matmul), so that an attention's projections do not share one buffer.",
          options=("library_matmul",), requires=("cuda-linalg-cleanup",)),
)

# read-only arguments, cleanup, distinct results, inputs written in place, bufferize
BUFFERS = stages.buffer_passes("cuda", written_inputs=True)

GPU = (
    _pass("fold-transposes-into-matmuls", _per_host(to_gpu.fold_transposes_into_matmuls),
          "A transpose feeding only library matmuls / attention becomes their transposed view (no copy kernel).",
          options=("library_matmul",), enabled=_library, consumes=(LIBRARY_CALL,)),
    _pass("fold-transposes-of-attention", _per_host(to_gpu.fold_transposes_of_attention),
          "Transposes around a library attention call read as strided views.", consumes=(LIBRARY_CALL,)),
    _pass("forward-copies", _per_host(forward_copies),
          "A buffer only written, then copied whole into a view of another (a concatenation's pieces, "
          "attention_grad's dq/dk/dv): its writers write that view, and the copy goes.",
          requires=("cuda-fold-transposes-of-attention",)),
    _pass("erase-empty-loop-nests", _per_host(to_gpu.erase_empty_loop_nests),
          "Loop nests over a zero-size operand (no trips) erased."),
    _pass("generalize-library-ops", _per_host(to_gpu.generalize_library_ops),
          "library_matmul off: matmul/conv/pooling as linalg.generic, made kernels like any other op.",
          options=("library_matmul",), enabled=lambda o: not o.target_options.library_matmul),
    _pass("fold-fills-into-library-ops", _per_host(to_gpu.fold_fills_into_library_ops),
          "A zero fill (max pooling's -inf fill) right before the library op writing its buffer erased; the op "
          "overwrites its output.", options=("library_matmul",), enabled=_library, produces=(OVERWRITE,)),
    _pass("fold-bias-into-matmuls", _per_host(fold_bias_into_matmuls),
          "A 2-D matmul and the bias add after it -> one torch.addmm call (the bias added in cuBLASLt's epilogue).",
          options=("library_matmul",), enabled=_library, consumes=(OVERWRITE,), produces=(LIBRARY_CALL,),
          requires=("cuda-fold-fills-into-library-ops",)),
    # Before cuda-kernels, which makes a kernel of each op a group would have taken.
    _pass("fuse-rows", _fuse_rows,
          "Each run of ops on the same rows (a softmax, a layer norm) -> one gpu.launch, one block per row.",
          options=("cuda_fuse_rows", "cuda_rowfuse_only"), enabled=lambda o: o.target_options.cuda_fuse_rows,
          produces=(KERNEL_NAME,), requires=("cuda-erase-empty-loop-nests",)),
    _pass("kernels", to_gpu.kernels_pass,
          "Each linalg op left -> a gpu.launch (a fill right before a row reduction folded into its kernel); "
          "library ops stay for the host schedule.", produces=(KERNEL_NAME,),
          requires=("cuda-fold-transposes-of-attention", "cuda-erase-empty-loop-nests")),
    _pass("name-kernels", lambda m, o: name_kernels(m),
          "Each gpu.launch given the gpu.module name its kernel is outlined under: the name its builder "
          "marked (strategy and graph ops: row_fused_softmax), made unique; what profilers show.",
          consumes=(KERNEL_NAME,),
          requires=("cuda-kernels",)),
    # Outlining sinks constants into the kernels; what stays captured becomes kernel arguments.
    upstream("cuda-outline-kernels", "gpu-launch-sink-index-computations, gpu-kernel-outlining, canonicalize, cse",
             "gpu.launch bodies outlined into gpu.modules (the constants and size arithmetic they use sunk into "
             "them first).", requires=("cuda-name-kernels",)),
    _pass("merge-identical-kernels", lambda m, o: merge_identical_kernels(m),
          "gpu.modules that print the same (a model's repeated layers) kept once, their launches pointed at "
          "the copy kept: every later stage converts and compiles each kernel once.",
          requires=("cuda-outline-kernels",)),
)


def _index_bitwidth(module, options) -> None:
    """32-bit index math in the kernels where every buffer fits (cheaper address arithmetic); a
    buffer of symbolic size may not."""
    hosts = to_gpu.host_functions(module)
    fits = max([schedule.max_elements(f) for f in hosts] or [0]) < 2**31
    bits = 32 if fits and not any(schedule.has_symbolic_buffers(f) for f in hosts) else 64  # sizes unknown: 64
    module.operation.attributes[INDEX_BITWIDTH] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), bits)


def index_bitwidth(module: ir.Module) -> int:
    if INDEX_BITWIDTH not in module.operation.attributes:
        raise CompileError("nvvm", f"the module has no {INDEX_BITWIDTH} (cuda-index-bitwidth sets it)")
    return ir.IntegerAttr(module.operation.attributes[INDEX_BITWIDTH]).value


def _to_nvvm(module, options) -> str:
    # expand-strided-metadata: the views a tiled kernel (codegen/gpu/tiled.py) takes of its buffers.
    return ("gpu.module(expand-strided-metadata, lower-affine, convert-scf-to-cf, "
            f"convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1 index-bitwidth={index_bitwidth(module)}}}, "
            # Math ops convert-gpu-to-nvvm maps to no libdevice function (trunc, absi, ...) become
            # LLVM intrinsics that NVPTX selects; left as math ops they cannot be translated.
            "convert-math-to-llvm, canonicalize, cse, reconcile-unrealized-casts)")


def _program(module, options) -> ptx.CudaProgram:
    """The host schedule read off the host functions (which the gpu.module conversion leaves as
    they are) and the kernels gathered into one device module."""
    try:
        hosts = schedule.extract(module)
    except Unsupported as e:
        raise CompileError("nvvm", str(e)) from None
    for host in hosts.values():
        host.index_bits = index_bitwidth(module)  # the runtime passes `index` kernel arguments at this width
    return ptx.CudaProgram(hosts, ptx.device_module(module), "nvvm")


# The stage's artifact changes here: a module up to cuda-to-nvvm, a CudaProgram after cuda-program.
NVVM = (
    _pass("index-bitwidth", _index_bitwidth,
          "The kernels' index width on the module: 32 bits where every buffer has fewer than 2**31 elements.",
          produces=(INDEX_BITWIDTH,)),
    upstream("cuda-to-nvvm", _to_nvvm, "The gpu.modules' kernels -> NVVM/LLVM dialect (bare pointers).",
             consumes=(INDEX_BITWIDTH,), requires=("cuda-index-bitwidth",)),
    _pass("extern-dynamic-shared", lambda m, o: extern_dynamic_shared(m),
          "The kernels' dynamic shared memory declared external (upstream declares it internal, which NVPTX "
          "demotes to one byte of static shared memory).", requires=("cuda-to-nvvm",)),
    _pass("program", _program,
          "The host schedule extracted, the kernels gathered into one device module: a CudaProgram.",
          consumes=(INDEX_BITWIDTH, LIBRARY_CALL, OVERWRITE, WRITTEN_ARGUMENTS), requires=("cuda-to-nvvm",),
          converts=True),
)


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
