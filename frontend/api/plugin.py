"""dynamo_mlir.plugin: the public API for packages that extend dynamo-mlir.

Everything a plugin needs is named here, and only here: a package that imports anything else
from `dynamo_mlir` depends on internals that may change. Two kinds of plugin (both can be one
package), with tutorials in docs/extending-the-dialect.md and docs/adding-a-target.md:

A dialect extension adds ops and the rules that make and lower them:
    register_dialect(D)            a dialect of its own, Python-defined on torch_mlir.dialects.ext
                                   (`class D(Dialect, name="mine")`, ops with typed fields and
                                   verifiers); loaded into every context dynamo-mlir makes
    import_rule(aten_or_custom_op) how an FX node (an ATen op, or a torch.library custom op)
                                   becomes ops: `rule(ctx: ImportContext, node)`; `bind(node)`
                                   reads its arguments by schema name; raise Unsupported(why) to
                                   leave the node eager, reported with that reason
    register_lowering(op, rule)    how an op becomes linalg/tensor/arith/math (generic), or, with
                                   `target="cpu"`, a faster rule one target prefers; a rule may
                                   also expand its op into dynamo ops (`core_ops`), lowered next

A target compiles linalg for one kind of hardware:
    Target(name, device_type, stages, load, capabilities, options_class, serves, ...)
    Stage(name, ext, run, doc)     one step of its pipeline; `stages` has the core's reusable
                                   steps (lower_to_linalg, bufferize_to_loops, loops_to_llvm,
                                   llvm_ir, map_to_gpu, host_schedules, device_module), and as
                                   named passes for Stage(name, ext, passes=...) (linalg_passes,
                                   buffer_passes, gpu_passes)
    TargetOptions, option          its own options (`options={...}`, DYNAMO_MLIR_<NAME>, CLI -O)
    declare_capability(name, doc)  a new capability its rules may require
    nodes_of(op.location)          the FX nodes an op came from (a target naming its library calls)
    LaunchStep, alloc_step         a GPU target's runtime: a host schedule's launches (through its
                                   driver's launch call) and allocations, sizes known per call
                                   evaluated from the call's tensors (codegen/gpu/launch_steps.py)
    host_sizes                     those sizes: expressions of the call's tensors' dims and `index`
                                   arguments (Dim, Arg, Apply; evaluate)
    extern_dynamic_shared(module)  after the lowering to the LLVM dialect: the kernels' dynamic shared
                                   memory (the core's row strategies use it) declared as the driver
                                   expects (codegen/gpu/kernel_abi.py)
    GpuCapabilities                what a GPU architecture offers the kernel strategies; a GPU
                                   target's options name the architecture by `gpu_arch()`
    kernel_names                   GPU kernels named `<strategy>_<graph ops>`: mark_kernel(launch,
                                   strategy) on a launch a target builds itself; without_ops(ir)
                                   compares IR parsed back from a dump, whose locations are gone
    register the Target under the `dynamo_mlir.targets` entry-point group (or register_target)

The core picks a target by the `target` option, else by the device type of the graph's tensors
(`Target.serves`, PrivateUse1 devices under their renamed name too); with none serving the
device, the graph runs eagerly and explain() says why. An op with no lowering rule the chosen
target can run stays eager, reported.
"""

# core_ops: the dynamo dialect's op classes (dynamo.add is core_ops.AddOp, ...); a rule may build
# them, e.g. to expand an extension op into core ops every target already lowers.
from dynamo_mlir.dialects import dynamo as core_ops
from dynamo_mlir.codegen import stages
from dynamo_mlir.codegen.config import Options
from dynamo_mlir.codegen.options import OptionError, TargetOptions, option
from dynamo_mlir.codegen.passes import CompileError, run_pipeline
from dynamo_mlir.codegen.provenance import nodes_of
from dynamo_mlir.codegen.gpu.capabilities import GpuCapabilities
from dynamo_mlir.codegen import kernel_names
from dynamo_mlir.codegen.gpu import host_sizes
from dynamo_mlir.codegen.gpu.kernel_abi import extern_dynamic_shared
from dynamo_mlir.codegen.gpu.launch_steps import LaunchStep, alloc_step
from dynamo_mlir.codegen.signature import Signature
from dynamo_mlir.codegen.target import (DuplicateTarget, NoTargetForDevice, Stage, Target, all_targets,
                                        get_target, register_target, target_for_device)
from dynamo_mlir.dialects import DuplicateDialect, Dynamo, register_dialect
from dynamo_mlir.dialects.base import VerifyError, _checked
from dynamo_mlir.dialects.base import elem_of, shape_of, tensor_type
from dynamo_mlir.frontend import aten as _core_rules  # noqa: F401  (core rules first: duplicates are caught)
from dynamo_mlir.frontend.aten.args import bind
from dynamo_mlir.frontend.importer import ImportContext
from dynamo_mlir.frontend.registry import DuplicateRule, Unsupported, import_rule
from dynamo_mlir.lowering.registry import (CAPABILITIES, DuplicateLoweringRule, LoweringContext, NoLoweringRule,
                                           declare_capability, register_lowering, remove_lowering)
from dynamo_mlir.codegen.passes import Pass, register_pass, upstream



def verifier(check):
    """Decorator for an ext op's `verify_invariants`: `check(op)` raises VerifyError(message)
    when the op is malformed; the message is reported on the op, prefixed with its name."""
    return _checked(check)


__all__ = [
    # targets
    "Target", "Stage", "TargetOptions", "option", "OptionError", "Options", "Signature", "register_target",
    "get_target", "all_targets", "target_for_device", "DuplicateTarget", "NoTargetForDevice", "stages",
    "run_pipeline", "CompileError", "declare_capability", "CAPABILITIES", "nodes_of", "Pass", "register_pass",
    "upstream", "LaunchStep", "alloc_step", "host_sizes", "extern_dynamic_shared",
    "GpuCapabilities", "kernel_names",
    # dialect
    "register_dialect", "DuplicateDialect", "Dynamo", "core_ops", "verifier", "VerifyError", "tensor_type",
    "shape_of", "elem_of",
    # import rules
    "import_rule", "Unsupported", "DuplicateRule", "ImportContext", "bind",
    # lowering rules
    "register_lowering", "remove_lowering", "NoLoweringRule", "DuplicateLoweringRule", "LoweringContext",
]
