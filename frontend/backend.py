"""The `backend="mlir"` entry point for torch.compile.

Dynamo hands us an FX graph; AOTAutograd turns it into functional ATen forward/backward graphs
(decomposed to the small op set our dialect covers); `compile_graph` compiles each.
"""

import functools
import logging
import operator

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

from ..codegen import config, driver
from ..codegen.target import NoTargetForDevice
from . import aten as _rules  # noqa: F401  (registers the import rules)
from . import freezing, half_attention
from .attention_call import additive_mask, use_attention_call
from .compile import choose_target, compile_graph, direct_call, graph_devices, new_graph_name
from .graph_cache import GraphLookup
from .importer import is_symbolic
from .half_precision import half_overrides
from .inference_path import InferencePath, without_wrapper
from .foreach import decompositions as foreach_decompositions
from .linear_cross_entropy import decompositions as linear_cross_entropy_decompositions
from .aten.resample import eager_nearest_indices, full_precision_decompositions
from .aten.elementwise import BINARY, UNARY
from .aten.elementwise import decompositions as elementwise_decompositions
from .aten.max_pool_backward import mark_window_indices
from .stats import REGISTRY, GraphReport, op_name
from .joint_graph import merge_forward_duplicates
from .recomputed_pointwise import recompute_pointwise
from .recomputed_views import recompute_views
from .one_hot_sums import fold_one_hot_sums
from .padded_matmuls import pad_matmuls
from .saved_log_softmax import save_log_softmax_statistics
from .sizes import specialize_settled_sizes

log = logging.getLogger("dynamo_mlir")

aten = torch.ops.aten

# On top of core ATen: ops whose decompositions land on ops we import.
_EXTRA_DECOMPOSITIONS = [
    aten.native_layer_norm, aten.addmm, aten.linear, aten.t,
    aten.transpose.int, aten.native_group_norm, aten.silu, aten.hardswish, aten.hardsigmoid,
    aten.mish, aten.softplus, aten.leaky_relu, aten.elu, aten.hardtanh, aten.logsumexp,
    aten.native_dropout, aten.std, aten.var, aten.lerp, aten.addcmul, aten.addcdiv,
    # Training: batch norm in train mode, and SDPA as plain matmuls/softmax, so that its
    # backward is matmuls/softmax too instead of one opaque flash-attention backward kernel.
    aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit, aten.native_batch_norm_backward,
    aten.native_layer_norm_backward,
    # Found by the OpInfo sweep: their references land on ops we import.
    aten.addmv, aten.dist, aten.ldexp,
    aten.frexp,
]


# Decomposed for the min-cut partitioner only: whole, log_softmax's backward reads its output,
# which the forward must then save (float32 for a cross-entropy over bf16 logits); as ops, the
# partitioner can save the input and the row statistics and recompute the rest.
_RECOMPUTED_DECOMPOSITIONS = [aten._log_softmax]


@functools.cache
def decompositions(min_cut: bool = False) -> dict:
    table = dict(core_aten_decompositions())
    if min_cut:
        table.update(get_decompositions(_RECOMPUTED_DECOMPOSITIONS))
    # The CPU fused attention an inference graph keeps (CPUOptions.keeps_fused_attention) is
    # imported whole; every other graph has SDPA in its math form before it is traced.
    table.pop(aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    # Imported whole (frontend/aten/reduction.py): its decomposition tests each row with a
    # boolean any-reduction of its own, where the softmax's row maximum tells the same.
    table.pop(aten._safe_softmax.default, None)
    table.update(get_decompositions(_EXTRA_DECOMPOSITIONS))
    table.update(linear_cross_entropy_decompositions())
    table.update(foreach_decompositions())  # torch.optim's multi-tensor updates, per tensor
    table.update(full_precision_decompositions())  # grid_sampler_2d (frontend/aten/resample.py)
    table.update(elementwise_decompositions())  # threshold_backward with eager's type promotion
    # An ATen op of the ELEMENTWISE table (dialects/elementwise.py) imports as its own dynamo op:
    # drop core ATen's decomposition of it (logaddexp2 has one), or the importer never sees it.
    for packet in (*UNARY, *BINARY):
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    table.update(half_overrides(table))  # eager CPU kernels' own roundings for bf16/f16
    return table


def _math_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                    enable_gqa=False):
    # torch's SDPA turns a boolean mask (True = attend) into an additive one before it picks a
    # kernel; the math kernel called directly would add the booleans as 0/1 instead.
    attn_mask = additive_mask(attn_mask, query.dtype)
    if half_attention.applies(query, key, value, attn_mask, dropout_p, enable_gqa):
        return half_attention.half_math_attention(query, key, value, attn_mask, is_causal, scale)
    return aten._scaled_dot_product_attention_math(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)[0]


_SDPA_TARGETS = {torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention}
# Functions Dynamo leaves as one call although they call SDPA inside.
_CALLS_SDPA = {torch.nn.functional.multi_head_attention_forward}


def _with_math_attention(fn):
    """`fn` (a torch.nn.functional function) calling the math SDPA. It looks SDPA up as a global
    of torch.nn.functional, and a TorchFunctionMode cannot reach it (a mode is off while its
    handler runs the outer function), so the global is swapped for the call. This runs only
    while AOTAutograd traces (the compiled graph has no such call), under Dynamo's compile lock."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        module = torch.nn.functional
        saved = module.scaled_dot_product_attention
        module.scaled_dot_product_attention = _math_attention
        try:
            return fn(*args, **kwargs)
        finally:
            module.scaled_dot_product_attention = saved

    return call


def use_math_attention(gm: torch.fx.GraphModule) -> None:
    """SDPA in its math form (matmuls, softmax), before AOTAutograd differentiates it.

    Decomposition tables apply below autograd: decomposing the flash kernel there would leave
    its fused backward kernel in the backward graph. Rewriting the call here makes autograd
    differentiate the math form, so the backward is matmuls and softmax too, which we compile.
    The rewrite only affects tracing: the compiled graphs no longer contain these calls.
    """
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target in _SDPA_TARGETS:
            node.target = _math_attention
        elif node.target in _CALLS_SDPA:
            node.target = _with_math_attention(node.target)
    gm.recompile()


def _is_inference(gm: torch.fx.GraphModule, example_inputs) -> bool:
    """Whether AOTAutograd will make an inference graph of gm: grad mode off, or no input that
    requires grad (its own test, made before it traces). A graph that turns grad mode on inside
    is not counted as one."""
    if any(n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in gm.graph.nodes):
        return False
    return not torch.is_grad_enabled() or not any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs)


def keeps_fused_attention(gm: torch.fx.GraphModule, example_inputs, options: config.Options) -> bool:
    """Whether gm keeps F.scaled_dot_product_attention whole instead of its math form: a graph
    whose tensors are on the device of a target that runs torch's fused attention itself
    (TargetOptions.keeps_fused_attention, told whether gm has symbolic sizes or half inputs and
    whether it is a training graph: the cuda target's library calls, option
    cuda_library_attention; the cpu target's call of torch's CPU kernel, inference graphs of
    static shapes with library_matmul). The attention matrix then never reaches memory."""
    try:
        target = choose_target(gm, example_inputs, options)
    except NoTargetForDevice:
        return False  # compile_graph says so, for the whole graph
    if target.device_type not in graph_devices(gm, example_inputs):
        return False  # e.g. target="cuda" on CPU tensors: torch's fused CUDA kernels need CUDA tensors
    half = any(isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16) for t in example_inputs)
    return config.bind(options, target).target_options.keeps_fused_attention(
        _symbolic(example_inputs), half, training=not _is_inference(gm, example_inputs))


def prepare_attention(gm: torch.fx.GraphModule, example_inputs, options: config.Options) -> None:
    """Rewrite gm's SDPA calls (before AOTAutograd traces it) into the form its target compiles:
    - kept whole, static inference graph: SDPA itself; AOTAutograd traces the fused op torch's
      dispatcher picks for the example inputs (frontend/aten/attention.py imports it);
    - kept whole, symbolic sizes or a training graph: dynamo_mlir::attention (attention_call.py),
      whose kernel is picked per call and whose backward is one dynamo_mlir::attention_grad.
      Training cannot keep the dispatcher's fused op: its backward's meta function
      (`_efficient_attention_backward`) raises "got multiple values for argument 'scale'" (its
      signature lacks the schema's `out`), seen on torch 2.11 and 2.13;
    - otherwise the math form (use_math_attention), which autograd differentiates."""
    if not keeps_fused_attention(gm, example_inputs, options):
        use_math_attention(gm)
    elif not _is_inference(gm, example_inputs):
        use_attention_call(gm, otherwise=_math_attention)  # GQA, dropout: the math form
        use_math_attention(gm)  # what is left: functions calling SDPA inside
    elif _symbolic(example_inputs):
        use_attention_call(gm)


def _symbolic(example_inputs) -> bool:
    return any(isinstance(t, torch.SymInt) or (isinstance(t, torch.Tensor) and is_symbolic(t)) for t in example_inputs)


def _compiler(kind: str, options: config.Options, path: InferencePath | None = None, state=None):
    """AOTAutograd's compiler of `kind` graphs. `state`: (Dynamo's inputs, positions of the module
    parameters and buffers among them), for an inference graph frozen (options.freeze)."""
    def compile_fn(gm: torch.fx.GraphModule, example_inputs):
        frozen = freezing.freeze_inference(gm, example_inputs, *state) if state else None
        graph, inputs = (frozen.graph, frozen.example_inputs) if frozen else (gm, example_inputs)
        if kind == "inference" and _pad_matmuls(graph, _target_options(graph, inputs, options)):  # training: _partition
            graph.recompile()
        fused = compile_graph(graph, inputs, kind, options)
        fn = direct_call(fused, guarded_inputs=kind != "backward") or fused
        report = fused.meta["dynamo_mlir_report"]
        if frozen is not None:
            other = lambda: REGISTRY.runtime_fallback(report.name, freezing.OTHER_WEIGHTS)  # noqa: E731
            fn, report.frozen = frozen.bind(fn, other), frozen.report
        if path is not None:
            path.offer(fn, example_inputs, report)
        return make_boxed_func(fn)

    return compile_fn


# Raised while AOTAutograd traces a graph whose shapes or control flow need a tensor's *values*
# (narrow/tensor_split with tensor arguments, .item() feeding a shape): no ahead-of-time graph
# exists, so the whole Dynamo graph runs eagerly.
_DATA_DEPENDENT = (
    torch._subclasses.fake_tensor.DataDependentOutputException,
    torch._subclasses.fake_tensor.DynamicOutputShapeException,
    torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode,
)


def _data_dependent_reason(error: Exception) -> str:
    func = getattr(error, "func", None)
    op = str(func) if func is not None else type(error).__name__
    return (f"the graph's shapes depend on tensor values ({op}), so it cannot be traced ahead of "
            "time: the whole graph ran eagerly")


def _untraceable_reason(error: Exception) -> str:
    first = str(error).splitlines()[0] if str(error) else ""
    return (f"AOTAutograd could not trace the graph ({type(error).__name__}: {first[:200]}), e.g. a "
            "torch meta function failed: the whole graph ran eagerly (strict=True raises instead)")


def _eager_reason(error: Exception) -> str:
    if isinstance(error, NoTargetForDevice):
        return f"{error.args[0]}: the whole graph ran eagerly"
    if isinstance(error, _DATA_DEPENDENT):
        return _data_dependent_reason(error)
    return _untraceable_reason(error)


def _call_name(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """A Dynamo graph node's op as a reader knows it: torch.narrow, Tensor.view, Linear."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    return op_name(node.target)


def _eager_graph_report(gm: torch.fx.GraphModule, reason: str, options: config.Options) -> GraphReport:
    """The whole Dynamo graph runs eagerly: every call in it is an eager op, for one reason."""
    report = GraphReport(new_graph_name("dynamo"), "inference", options.target or "eager")
    calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")
             and n.target is not operator.getitem]
    report.fallbacks = [(_call_name(gm, n), reason) for n in calls]
    return report


def _target_options(gm: torch.fx.GraphModule, example_inputs, options: config.Options):
    """The bound options of gm's target (what it asks of the graph), or None if none serves it."""
    try:
        return config.bind(options, choose_target(gm, example_inputs, options)).target_options
    except NoTargetForDevice:
        return None


def _pad_matmuls(gm: torch.fx.GraphModule, target_options) -> int:
    """The matmuls gm's target computes on padded operands, padded in the graph (padded_matmuls.py)."""
    return pad_matmuls(gm.graph, target_options.matmul_padding) if target_options is not None else 0


def _partition(joint_module: torch.fx.GraphModule, joint_inputs, options: config.Options, **kwargs):
    """AOTAutograd's min-cut or default partitioner (the `partitioner` option), after merging
    the forward's duplicate values (joint_graph.merge_forward_duplicates), marking
    on the joint graph what only it shows (a max-pool backward's indices are its forward's:
    max_pool_backward.py; node.meta is copied into the forward and backward graphs), folding a
    cross-entropy backward's row sums of its one-hot gradient (one_hot_sums.py) and making
    the backward read a log_softmax's row statistics instead of the saved matrix
    (saved_log_softmax.py), recompute pointwise values from what is saved anyway
    (recomputed_pointwise.py), share the padded operands of unaligned half matmuls
    (padded_matmuls.py) and, where the target asks, take saved views again in the backward
    (recomputed_views.py)."""
    partitioner = options.partitioner
    specialize_settled_sizes(joint_module)  # (the rewrites below read int sizes as static)
    mark_window_indices(joint_module.graph)
    rewritten = fold_one_hot_sums(joint_module.graph)
    if partitioner != "min_cut":  # (which merges them itself)
        rewritten += merge_forward_duplicates(joint_module.graph, kwargs["num_fwd_outputs"])
    if partitioner != "save_all":
        rewritten += save_log_softmax_statistics(joint_module.graph, kwargs["num_fwd_outputs"])
    if partitioner == "default":  # the min-cut partitioner makes these choices itself
        rewritten += recompute_pointwise(joint_module.graph, kwargs["num_fwd_outputs"])
    target_options = _target_options(joint_module, joint_inputs, options)
    rewritten += _pad_matmuls(joint_module, target_options)
    # Last: the saved views the rewrites above leave (a padded product's slice).
    if partitioner != "min_cut" and target_options is not None and target_options.retakes_saved_views():
        rewritten += recompute_views(joint_module.graph, kwargs["num_fwd_outputs"])
    if rewritten:
        joint_module.recompile()
    split = min_cut_rematerialization_partition if partitioner == "min_cut" else default_partition
    return split(joint_module, joint_inputs, **kwargs)


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """torch.compile backend: `torch.compile(model, backend="mlir", mode=..., options={...})`."""
    options = config.resolve(kwargs.get("options"), kwargs.get("mode"))
    if options.dump_dir:
        driver.write_dump(options.dump_dir, new_graph_name("dynamo"), "fx", "txt", gm.print_readable(print_output=False))
    lookup = GraphLookup.open(gm, example_inputs, options)  # before the graph is rewritten for tracing
    found = lookup.load() if lookup else None
    if found is not None:
        return without_wrapper(found)
    state = (example_inputs, freezing.module_state_inputs(gm)) if options.freeze else None
    prepare_attention(gm, example_inputs, options)
    path = InferencePath(example_inputs)
    min_cut = options.partitioner == "min_cut"
    compile_with_aot = aot_autograd(
        fw_compiler=_compiler("forward", options),
        bw_compiler=_compiler("backward", options),
        inference_compiler=_compiler("inference", options, path, state),
        partition_fn=functools.partial(_partition, options=options),
        decompositions=decompositions(min_cut),
        keep_inference_input_mutations=True,  # written back by the graph: input_mutations.py
    )
    try:
        with eager_nearest_indices():  # while AOTAutograd traces: resample.py says why
            compiled = path.result(compile_with_aot(gm, example_inputs))
    except (torch._dynamo.exc.TorchDynamoException, config.OptionError):
        raise  # Dynamo's own control flow (restart the analysis, ...), or the user's options
    except Exception as e:  # noqa: BLE001  our own compilers catch their failures: this is tracing
        if options.strict:
            raise
        reason = _eager_reason(e)
    else:
        if lookup and path.recipe is not None and compiled is path.callable:
            lookup.store(path.report, path.recipe)
        return compiled
    REGISTRY.add(_eager_graph_report(gm, reason, options))
    return gm.forward
