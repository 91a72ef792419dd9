"""Stage building blocks a target composes: the host-independent steps of the cpu and cuda
pipelines, with every choice an argument instead of a cpu/cuda option.

A new target (a plugin: see docs/adding-a-target.md) takes the steps it shares with the core
and writes only what is its own, e.g. a cross-compiling CPU target takes `lower_to_linalg`,
`bufferize_to_loops`, `loops_to_llvm` and `llvm_ir` and adds its object-file and linking
stages; a GPU target takes `lower_to_linalg`, `map_to_gpu`, `host_schedules` and
`device_module` and adds its own gpu-to-ISA conversion. Each function is `module -> module`
(or text) and runs its passes through `run_pipeline`, so a failure names the stage and leaves a
repro, as the core's own stages do. `dynamo_mlir.plugin` exports this module as `stages`.

The same steps as named passes (codegen/passes.py), for a target whose stages list passes (so
that `dynamo-mlir dump --after-each-pass` dumps, and `dynamo-mlir pass NAME` runs, each one):
`linalg_passes`, `buffer_passes` and `gpu_passes` register them under the target's name
(`rocm-kernels`, ...), once per target.
"""

from __future__ import annotations

from torch_mlir import ir

from ..lowering import lower_dynamo_ops
from .attributes import WRITABLE, WRITTEN_ARGUMENTS, WRITTEN_INPUTS
from .functions import defined_functions
from .half_bits import bf16_as_bits
from .identical_kernels import merge_identical_kernels
from .kernel_names import name_kernels
from .llvm_text import to_llvmlite_text
from .memref_copies import copies_to_linalg, erase_self_copies
from .result_copies import results_into_out_params
from .passes import CompileError, Pass, get_pass, register_pass, run_pipeline, upstream
from .zero_size import distinct_results, uses_bare_pointers, widen_zero_size_arguments


def lower_to_linalg(module: ir.Module, options, target: str, stage: str = "linalg") -> ir.Module:
    """Every op of our dialects -> linalg/tensor/arith/math with `target`'s rules (its own rules
    first, then the generic ones its capabilities allow), then canonicalized; with the core
    option `fuse_elementwise`, producer/consumer elementwise ops fused."""
    lower_dynamo_ops(module, target=target, options=options)
    passes = ["canonicalize", "cse"]
    if options.fuse_elementwise:
        passes += ["linalg-fuse-elementwise-ops", "canonicalize", "cse"]
    run_pipeline(module, ", ".join(passes), stage, options)
    return distinct_results(module)  # CSE may have made two results one value


# WRITABLE, one-shot bufferization's function-argument attribute: false makes an op that would
# write a tensor argument in place (a gemm accumulating into its bias, an index_put into its
# dest) write a copy instead.


def read_only_arguments(module: ir.Module, writable=frozenset()) -> None:
    """Mark every tensor argument of every function with a body non-writable, but for the
    (function name, argument index) pairs in `writable`. A region's inputs are its caller's
    tensors: writing one in place would change the caller's data behind eager's back (regions
    are functional; an input eager mutates is written back after the region, by
    frontend/input_mutations.py), and one-shot bufferization treats arguments as writable
    unless told otherwise."""
    with module.context:
        false = ir.BoolAttr.get(False)
        for op in defined_functions(module):
            name = ir.StringAttr(op.attributes["sym_name"]).value
            types = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs
            old = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in op.attributes \
                else [ir.DictAttr.get({})] * len(types)
            attrs = []
            for i, (t, d) in enumerate(zip(types, old)):
                entries = {a.name: a.attr for a in ir.DictAttr(d)}
                if isinstance(t, ir.RankedTensorType) and (name, i) not in writable:
                    entries[WRITABLE] = false
                attrs.append(ir.DictAttr.get(entries))
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def bufferization_pipeline(deallocate: bool) -> str:
    """Tensors -> memrefs, results as out-params (the caller allocates outputs; static
    allocations are hoisted into them); with `deallocate`, temporary buffers freed."""
    return ", ".join([
        "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}",
        "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true}",
        "canonicalize",
        *(["buffer-deallocation-pipeline"] if deallocate else ["cse"]),
    ])


def bufferize(module: ir.Module, options, stage: str = "buffers", deallocate: bool = True) -> ir.Module:
    """`bufferization_pipeline` after its preparation, the steps `buffer_passes` names one by
    one: arguments read-only (`read_only_arguments`: what would write one writes a copy), a
    canonicalize, and every result its own value again."""
    from .written_inputs import write_inputs_in_place

    read_only_arguments(module)
    run_pipeline(module, "canonicalize", stage, options)
    distinct_results(module)
    write_inputs_in_place(module, options)  # where the frontend asked (a `written_inputs` target)
    return run_pipeline(module, bufferization_pipeline(deallocate), stage, options)


def to_loops(module: ir.Module, options, stage: str = "loops") -> ir.Module:
    """Bufferized linalg ops (and memref copies) as scf loops, what a CPU-like target compiles."""
    copies_to_linalg(module)
    widen_zero_size_arguments(module)  # the bare-pointer convention refuses memref<0x..>
    return run_pipeline(module, "func.func(convert-linalg-to-loops), canonicalize, cse", stage, options)


def bufferize_to_loops(module: ir.Module, options, stage: str = "loops") -> ir.Module:
    """`bufferize`, then `to_loops`."""
    return to_loops(bufferize(module, options, stage), options, stage)


def _has_vector_ops(module: ir.Module) -> bool:
    """Whether some op is of the vector dialect (its conversion also reorders constants, so it
    runs only where needed)."""
    found = []

    def visit(op):
        if op.name.startswith("vector."):
            found.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return bool(found)


def loops_to_llvm(module: ir.Module, options, stage: str = "llvm", libm: bool = True,
                  bits: bool = True) -> ir.Module:
    """scf loops -> the LLVM dialect, for any LLVM CPU target. Half-precision math is computed
    in f32 (no CPU has bf16 arithmetic that LLVM lowers without compiler-rt libcalls); math
    ops become LLVM intrinsics, or with `libm` calls to the C library the code is linked with.
    `bits=False` leaves bf16 values to a `bf16_as_bits` pass of the caller's own (cpu-bf16-as-bits)."""
    passes = [
        "expand-strided-metadata",
        # LLVM would promote bf16/f16 arithmetic through compiler-rt libcalls (__truncsfbf2, ...)
        # that a JIT process does not have, and the call would crash. Compute such math/arith
        # ops in f32 (rounding back after each op, as PyTorch's scalar kernels do), then do the
        # remaining bf16 <-> f32 conversions with integer bit operations.
        "func.func(math-extend-to-supported-types{extra-types=f32 target-type=f32})",
        "func.func(arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32})",
        "func.func(arith-expand{include-bf16=true})",  # bf16 values left only move bits: bf16_as_bits
        "lower-affine",
        "convert-scf-to-cf",
        *(["convert-vector-to-llvm"] if _has_vector_ops(module) else []),  # cpu lane loops (cpu/lane_vectors.py)
        "convert-math-to-llvm{approximate-log1p=false}",  # log(1 + x) loses tiny x: libm log1p
        *(["convert-math-to-libm"] if libm else []),
        "convert-arith-to-llvm",
        "finalize-memref-to-llvm",
        "convert-cf-to-llvm",
        # Bare pointers: one pointer per tensor, the cheapest call (static shapes only).
        f"convert-func-to-llvm{{use-bare-ptr-memref-call-conv={int(uses_bare_pointers(module))}}}",
        "convert-arith-to-llvm",
        "reconcile-unrealized-casts",
    ]
    # LLVM folds the bits back into bfloat selects that an x86 CPU without AVX-512-BF16 can only
    # legalize with a compiler-rt call the JIT lacks: no bfloat value may reach LLVM.
    module = run_pipeline(module, ", ".join(passes), stage, options)
    return bf16_as_bits(module, stage) if bits else module


def llvm_ir(module: ir.Module, triple: str | None = None, data_layout: str | None = None) -> str:
    """An LLVM-dialect module as LLVM IR text that llvmlite parses (its LLVM is older than
    MLIR's printer), optionally retargeted to `triple` / `data_layout`."""
    from torch_mlir.dialects.llvm import translate_module_to_llvmir

    with module.context:
        if triple:
            module.operation.attributes["llvm.target_triple"] = ir.StringAttr.get(triple)
        if data_layout:
            module.operation.attributes["llvm.data_layout"] = ir.StringAttr.get(data_layout)
    return to_llvmlite_text(str(translate_module_to_llvmir(module.operation)))


def map_to_gpu(module: ir.Module, options, stage: str = "gpu", fuse_rows: bool = True) -> ir.Module:
    """Bufferized host functions -> gpu.launch per kernel (one thread per output element, or one
    block per row for fused row reductions), outlined into gpu.modules; every op becomes a
    generated kernel (no library calls: a plugin target has no torch-side library to call)."""
    from .cuda import to_gpu
    from .gpu.loopnest import Unsupported

    try:
        with module.context, ir.Location.unknown():
            to_gpu.convert_module(module, library=False, fuse_rows=fuse_rows, graph=options.graph_name)
            name_kernels(module)
    except Unsupported as e:
        raise CompileError(stage, str(e)) from None
    return run_pipeline(module, "gpu-kernel-outlining, canonicalize, cse", stage, options)


def host_schedules(module: ir.Module, stage: str = "gpu") -> dict:
    """The host side of a `map_to_gpu` module, per function: allocations, views, constants and
    kernel launches in order, as plain data a runtime replays (`str()` prints it)."""
    from .cuda import schedule
    from .gpu.loopnest import Unsupported

    try:
        return schedule.extract(module)
    except Unsupported as e:
        raise CompileError(stage, str(e)) from None


def device_module(module: ir.Module, triple: str) -> ir.Module:
    """Every gpu.module's (already converted) contents in one module for `triple`."""
    from .cuda.ptx import device_module as gather

    return gather(module, triple)


# ----------------------------------------------------------------------------- as named passes


def _registered(target: str, name: str, run, doc: str, **contract) -> Pass:
    return register_pass(Pass(f"{target}-{name}", run, doc, **contract))


def linalg_passes(target: str) -> tuple[Pass, ...]:
    """`lower_to_linalg` as passes of `target`: <target>-lower-dynamo-ops, -linalg-cleanup,
    -fuse-elementwise (with the core option fuse_elementwise) and -distinct-results."""
    return (
        _registered(target, "lower-dynamo-ops", lambda m, o: lower_dynamo_ops(m, target=target, options=o),
                    f"Every dynamo op -> linalg by {target}'s rules, then the generic ones its capabilities allow."),
        upstream(f"{target}-linalg-cleanup", "canonicalize, cse", "Canonicalize and CSE the linalg module."),
        upstream(f"{target}-fuse-elementwise", "linalg-fuse-elementwise-ops, canonicalize, cse",
                 "Producer/consumer elementwise fusion.", options=("fuse_elementwise",),
                 enabled=lambda o: o.fuse_elementwise),
        _registered(target, "distinct-results", lambda m, o: distinct_results(m),
                    "Every returned tensor its own value (CSE may have made two results one)."),
    )


def buffer_passes(target: str, deallocate: bool = False, written_inputs: bool = False) -> tuple[Pass, ...]:
    """`bufferize` as passes of `target` (without deallocations by default: a GPU target's host
    schedule frees through torch): <target>-read-only-arguments, -prebufferize-cleanup,
    -distinct-results (the linalg stage's, again: a target's fusion and that canonicalize can
    still merge two results, and buffer-results-to-out-params crashes the process on a value
    returned twice), with `written_inputs` (the target's capability) -write-inputs-in-place,
    then -bufferize, -results-into-out-params and -erase-self-copies."""
    from .written_inputs import write_inputs_in_place

    in_place = (_registered(target, "write-inputs-in-place", write_inputs_in_place,
                            "Results that are mutated inputs' new values computed into those arguments "
                            "(made writable) instead of returned.", consumes=(WRITTEN_INPUTS,),
                            produces=(WRITTEN_ARGUMENTS,), requires=(f"{target}-read-only-arguments",)),) \
        if written_inputs else ()
    return (
        _registered(target, "read-only-arguments", lambda m, o: read_only_arguments(m),
                    "Every tensor argument not writable to bufferization: what would write the caller's "
                    "tensor writes a copy.", produces=(WRITABLE,)),
        upstream(f"{target}-prebufferize-cleanup", "canonicalize", "Canonicalize before bufferizing."),
        _existing_or(f"{target}-distinct-results", lambda: _registered(
            target, "distinct-results", lambda m, o: distinct_results(m),
            "Every returned tensor its own value (CSE may have made two results one).")),
        *in_place,
        upstream(f"{target}-bufferize", bufferization_pipeline(deallocate),
                 "Tensors -> memrefs, results as out-params (each its own buffer).", consumes=(WRITABLE,),
                 requires=(f"{target}-read-only-arguments", f"{target}-distinct-results")),
        _registered(target, "results-into-out-params", lambda m, o: results_into_out_params(m),
                    "A result of symbolic size computed into its out-param, not into a temporary copied there.",
                    requires=(f"{target}-bufferize",)),
        _registered(target, "erase-self-copies", lambda m, o: erase_self_copies(m),
                    "Copies of a buffer onto itself (an insert_slice of a value computed in place) erased.",
                    requires=(f"{target}-bufferize",)),
    )


def _existing_or(name: str, make) -> Pass:
    """The pass registered under `name` (a stage may run one pass twice), else `make()`."""
    try:
        return get_pass(name)
    except KeyError:
        return make()


def gpu_passes(target: str, fuse_rows=lambda options: True) -> tuple[Pass, ...]:
    """`map_to_gpu` as passes of `target`, the rewrites of cuda/to_gpu.py in convert_module's
    order: <target>-fold-transposes-of-attention, -erase-empty-loop-nests,
    -generalize-library-ops, -fuse-rows (where fuse_rows(options)), -kernels, -name-kernels, -outline-kernels,
    -merge-identical-kernels."""
    from .cuda import to_gpu

    on_hosts = to_gpu.per_host
    return (
        _registered(target, "fold-transposes-of-attention", on_hosts(to_gpu.fold_transposes_of_attention),
                    "Transposes around a library attention call read as strided views."),
        _registered(target, "erase-empty-loop-nests", on_hosts(to_gpu.erase_empty_loop_nests),
                    "Loop nests over a zero-size operand (no trips) erased."),
        _registered(target, "generalize-library-ops", on_hosts(to_gpu.generalize_library_ops),
                    "Matmul/conv/pooling as linalg.generic: kernels like any other op (no library to call)."),
        _registered(target, "fuse-rows", on_hosts(to_gpu.fuse_row_groups),
                    "Each run of ops on the same rows -> one gpu.launch, one block per row.", enabled=fuse_rows,
                    requires=(f"{target}-erase-empty-loop-nests",)),
        _registered(target, "kernels", to_gpu.kernels_pass, "Each linalg op left -> a gpu.launch.",
                    requires=(f"{target}-erase-empty-loop-nests", f"{target}-generalize-library-ops")),
        _registered(target, "name-kernels", lambda m, o: name_kernels(m),
                    "Each gpu.launch named for its strategy and the graph ops it computes.",
                    requires=(f"{target}-kernels",)),
        upstream(f"{target}-outline-kernels", "gpu-kernel-outlining, canonicalize, cse",
                 "gpu.launch bodies outlined into gpu.modules.", requires=(f"{target}-name-kernels",)),
        _registered(target, "merge-identical-kernels", lambda m, o: merge_identical_kernels(m),
                    "gpu.modules that print the same kept once, their launches pointed at the copy kept.",
                    requires=(f"{target}-outline-kernels",)),
    )
