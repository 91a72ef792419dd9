"""The `cpu` target: linalg -> loops -> LLVM dialect -> object code (MLIR's ExecutionEngine), linked at load."""

import functools

from torch_mlir import ir

from ..llvm_text import to_llvmlite_text
from ..target import Stage, Target
from . import library, library_attention, library_conv, library_linear, object_code, pipeline, runtime
from .options import CPUOptions


def _llvm_ir(module: ir.Module) -> str:
    from torch_mlir.dialects.llvm import translate_module_to_llvmir

    return str(translate_module_to_llvmir(module.operation))


def _assembly(module: ir.Module) -> str:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    parsed = llvm.parse_assembly(to_llvmlite_text(_llvm_ir(module)))
    # The host CPU and its features, as the JIT compiles for them.
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2)
    passes = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(2))
    passes.getModulePassManager().run(parsed, passes)  # the JIT's default level (CPUOptions.opt_level)
    return machine.emit_assembly(parsed)


def _library_nodes(module: ir.Module) -> frozenset[str]:
    """Matmuls run as MKL sgemm_/dgemm_ or oneDNN calls, convolutions as torch's (library_matmul)."""
    return (library.library_nodes(module) | library_linear.library_nodes(module) | library_conv.library_nodes(module)
            | library_attention.library_nodes(module))


def _object(module: ir.Module, options) -> object_code.CpuObject:
    return object_code.compile_object(module, options.target_options.opt_level, _library_nodes(module))


def _machine(options) -> str:
    return _host_cpu()


@functools.cache
def _host_cpu() -> str:
    """What the object code is compiled for: the host CPU as LLVM sees it (name and features)."""
    import llvmlite.binding as llvm

    return f"{llvm.get_process_triple()} {llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}"


TARGET = Target(
    name="cpu",
    device_type="cpu",
    stages=(
        Stage("linalg", "mlir", doc="dynamo ops -> linalg/tensor/arith/math", passes=pipeline.LINALG),
        Stage("loops", "mlir", doc="fused, bufferized, out-params, scf loops", passes=pipeline.LOOPS),
        Stage("llvm", "mlir", doc="LLVM dialect, bare-pointer calling convention", passes=pipeline.LLVM),
        Stage("object", "o", _object, "machine code for the host CPU (MLIR's ExecutionEngine: LLVM's optimiser and "
                                      "code generator), a relocatable object"),
    ),
    load=runtime.load,
    extra_dumps={"ll": ("ll", lambda obj: _llvm_ir(obj.module)), "s": ("s", lambda obj: _assembly(obj.module))},
    options_class=CPUOptions,
    cacheable=True,
    machine=_machine,
    doc="Host CPU: object code from MLIR's ExecutionEngine (LLVM), linked into the process by llvmlite's MCJIT.",
    # serial_loops: scf loops run as written, on the calling thread
    capabilities=frozenset({"serial_loops", "scalar_math", "dynamic_shapes", "written_inputs", "channels_last_results"}),
)

from . import row_reduction, rules  # noqa: E402,F401  (cpu-specific lowerings; after TARGET, which declares the name)
