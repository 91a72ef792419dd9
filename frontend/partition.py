"""Split an ATen graph into regions we compile and nodes that run eagerly.

A node is supported when its import rule builds dynamo IR that verifies and every op in it has a
lowering rule for the target. That is checked by importing the node alone into a scratch
function (a dry run), so "supported" means exactly what the real import will do. Multi-output
nodes are supported only if every output that is read can be produced.
"""

import operator
from dataclasses import dataclass

import torch
import torch.fx as fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupportBase
from torch_mlir import ir
from torch_mlir.dialects import func

from ..dialects import is_ours, new_context
from . import attention_call  # noqa: F401  (registers torch.ops.dynamo_mlir.attention, named below)
from ..lowering import registry as lowering_registry
from . import dtypes
from .aten import elementwise
from .input_views import is_input_view
from .importer import ImportContext, import_node, is_size_node, is_symbolic, is_tensor_node, static_shape
from . import registry as import_registry
from .registry import Unsupported
from .sizes import SizeBuilder

aten = torch.ops.aten

# Ops whose import rules (and the lowerings of what they emit) are checked with `?` dims:
# same-shape elementwise work, reductions, softmax, permutes, and the ops that make dynamic
# dims from size values (reshapes, expands, fills: see frontend/sizes.py), matmuls, whole-dim
# selects, slices by symbolic bounds, scans (size-limited per call), advanced indexing and
# gathers, constant padding, fused attention (the lengths symbolic, the head dim static). Nodes
# with symbolic sizes outside this set run eagerly.
DYNAMIC_SHAPE_OPS = frozenset({
    *elementwise.BINARY, *elementwise.UNARY, *elementwise.COMPARE,
    aten.div, aten.true_divide, aten.pow, aten.where, aten.clamp, aten.clamp_min, aten.clamp_max, aten.gelu,
    aten.logical_not, aten.isnan, aten.isinf,
    aten._to_copy, aten.clone, aten.alias, aten.detach, aten.lift_fresh_copy,
    aten.sum, aten.mean, aten.amax, aten.amin, aten._softmax, aten._log_softmax, aten._safe_softmax,
    aten.permute, aten.transpose, aten.t,
    aten.view, aten._unsafe_view, aten.reshape, aten.unsqueeze, aten.squeeze, aten.flatten,
    aten.expand, aten.mm, aten.bmm, aten.select, aten.var_mean, aten.var, aten.any, aten.all, aten.cat,
    aten.full, aten.full_like, aten.zeros, aten.zeros_like, aten.ones, aten.ones_like,
    aten.new_zeros, aten.new_ones, aten.new_full, aten.empty_like,
    aten.embedding, aten.slice, aten.arange, aten.split_with_sizes, aten.cumsum, aten.cumprod, aten.index, aten.gather,
    aten.constant_pad_nd, aten._scaled_dot_product_efficient_attention, aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_cudnn_attention, torch.ops.dynamo_mlir.attention, torch.ops.dynamo_mlir.attention_grad,
})


@dataclass
class Verdict:
    supported: bool
    reason: str = ""


def _tensor_inputs(node: fx.Node) -> list[fx.Node]:
    return [a for a in node.all_input_nodes if is_tensor_node(a)]


def _check_dynamic(node: fx.Node, vals, target) -> None:
    # A SymInt argument (a slice's bound) makes size values in the IR even between static tensors.
    if any((isinstance(v, torch.Tensor) and is_symbolic(v)) or isinstance(v, torch.SymInt) for v in vals):
        if "dynamic_shapes" not in target.capabilities:  # refused here, not by a stage later
            raise Unsupported(f"the {target.name} target compiles static shapes only (this node's sizes are "
                              "symbolic: compile with dynamic=False, or mark no dim dynamic)")
        packet = getattr(node.target, "overloadpacket", None)
        if packet not in DYNAMIC_SHAPE_OPS:
            raise Unsupported("dynamic (symbolic) sizes are not supported by this op's rule yet")
        if target.dynamic_shape_ops is not None and packet not in target.dynamic_shape_ops:
            raise Unsupported(f"the {target.name} target compiles this op with static shapes only (its sizes are "
                              "symbolic: compile with dynamic=False, or mark no dim dynamic)")


def _read_outputs(node: fx.Node) -> list:
    """The output values the graph reads: all of a single-output node's; of a multi-output node,
    those a getitem takes (the others, e.g. a fused attention's RNG state on the meta device,
    are never produced, so their types do not matter)."""
    val = node.meta.get("val")
    if not isinstance(val, (tuple, list)) or any(u.target is not operator.getitem for u in node.users):
        return list(val) if isinstance(val, (tuple, list)) else [val]
    read = {u.args[1] for u in node.users}
    return [v for i, v in enumerate(val) if i in read]


def _check_types(node: fx.Node, device_type: str | None, target) -> None:
    vals = _read_outputs(node) + [a.meta.get("val") for a in node.all_input_nodes]
    for v in vals:
        if isinstance(v, torch.SymInt):
            continue  # a size argument: the import rules read sizes off the output's shape
        if isinstance(v, torch.Tensor):
            if v.dtype not in dtypes.SUPPORTED_DTYPES:
                raise Unsupported(f"dtype {v.dtype}")
            if device_type and v.device.type != device_type:  # kernels read their own device's memory
                raise Unsupported(f"a {v.device.type} tensor in a graph compiled for {device_type}")
        elif v is not None and not isinstance(v, (int, float, bool, tuple, list)):
            raise Unsupported(f"non-tensor value of type {type(v).__name__}")
    _check_dynamic(node, vals, target)
    # Named by position and kind, not by node name: a verdict is shared by every node alike (node_signature).
    for i, a in enumerate(node.all_input_nodes):
        if not is_tensor_node(a) and not is_size_node(a) and not (isinstance(a.meta.get("val"), (tuple, list)) and a.op == "call_function"):
            raise Unsupported(f"input {i} ({type(a.meta.get('val')).__name__}) is not a tensor")


def _meta(val):
    """A node value's facts an import rule reads: dtype, sizes, strides, device (symbols by name)."""
    if isinstance(val, torch.Tensor):
        try:
            strides = tuple(str(s) for s in val.stride())
        except Exception:  # a layout without strides
            strides = None
        return ("tensor", str(val.dtype), tuple(str(d) for d in val.shape), strides, val.device.type)
    if isinstance(val, (tuple, list)):
        return tuple(_meta(v) for v in val)
    return (type(val).__name__, str(val))


def _described(arg):
    if isinstance(arg, fx.Node):
        return ("node", _meta(arg.meta.get("val")))
    if isinstance(arg, (tuple, list)):
        return tuple(_described(a) for a in arg)
    if isinstance(arg, dict):
        return tuple(sorted((k, _described(v)) for k, v in arg.items()))
    return (type(arg).__name__, repr(arg))


def node_signature(node: fx.Node) -> tuple:
    """What decides a node's verdict: its op, its arguments (values by their facts), its output's
    facts and which outputs the graph reads. Nodes alike (a model's repeated layers) share one."""
    read = tuple(sorted(u.args[1] for u in node.users if u.target is operator.getitem))
    return (str(node.target), _described(node.args), _described(node.kwargs), _meta(node.meta.get("val")), read)


# Verdicts by (target, device, the registries' generations, node signature): a model's repeated
# layers, and the same graph compiled again (a new Dynamo frame, a recompile), dry-run each kind
# of node once per process.
_REMEMBERED: dict[tuple, "Verdict"] = {}
_REMEMBER_AT_MOST = 200_000


class SupportOracle(OperatorSupportBase):
    """Answers `is_node_supported` by dry-running the import rule (once per kind of node, see
    node_signature); remembers every verdict."""

    def __init__(self, target, device_type: str | None = None):
        super().__init__()
        self.target = target
        self.device_type = device_type  # when set, tensors elsewhere keep their node eager
        self.verdicts: dict[str, Verdict] = {}  # by node name: fusing re-creates nodes
        self._context = new_context()

    def is_node_supported(self, submodules, node: fx.Node) -> bool:
        if node.op != "call_function" or is_input_view(node):  # input_views.py: a view kept eager
            return False
        if node.name not in self.verdicts:
            self.verdicts[node.name] = self._remembered(node)
        return self.verdicts[node.name].supported

    def _remembered(self, node: fx.Node) -> "Verdict":
        if node.target is operator.getitem:  # follows its producer's verdict
            return self._judge(node)
        key = (self.target.name, self.device_type, lowering_registry.generation(), import_registry.generation(),
               node_signature(node))
        verdict = _REMEMBERED.get(key)
        if verdict is None:
            verdict = self._judge(node)
            if len(_REMEMBERED) >= _REMEMBER_AT_MOST:
                _REMEMBERED.clear()
            _REMEMBERED[key] = verdict
        return verdict

    def _judge(self, node: fx.Node) -> Verdict:
        if node.target is operator.getitem:
            producer = node.args[0]
            ok = self.is_node_supported(None, producer)
            return Verdict(ok, "" if ok else f"its producer {producer.target} is not supported")
        try:
            _check_types(node, self.device_type, self.target)
            produced = self._dry_run(node)
        except Unsupported as e:
            return Verdict(False, str(e))
        except Exception as e:  # a rule that crashes is a bug, but must not crash the user's model
            return Verdict(False, f"import rule failed: {type(e).__name__}: {e}")
        if isinstance(produced, tuple):
            read = {u.args[1] for u in node.users if u.target is operator.getitem}
            missing = [i for i in read if produced[i] is None]
            if missing:
                return Verdict(False, f"outputs {missing} are not produced by the import rule")
        return Verdict(True)

    def _dry_run(self, node: fx.Node):
        with self._context, ir.Location.unknown():
            module = ir.Module.create()
            inputs = _tensor_inputs(node)
            types = [dtypes.tensor_type(static_shape(a.meta["val"]), a.meta["val"].dtype) for a in inputs]
            with ir.InsertionPoint(module.body):
                fn = func.FuncOp("probe", (types, []))
            block = fn.add_entry_block()
            # A size symbol no input tensor carries becomes an `index` argument of the probe,
            # as compile.route_sizes makes it one of the real region's.
            ctx = ImportContext(SizeBuilder(lambda _: block.add_argument(ir.IndexType.get(), ir.Location.unknown())))
            ctx.values.update(zip(inputs, block.arguments))
            for a, arg in zip(inputs, block.arguments):
                ctx.sizes.bind_tensor(arg, a.meta["val"].shape)
            with ir.InsertionPoint(block):
                import_node(ctx, node)
                func.ReturnOp([])
            fn.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get([a.type for a in block.arguments], []))
            try:
                module.operation.verify()
            except ir.MLIRError as e:
                raise Unsupported(f"imported IR does not verify: {e}") from None
            self._check_lowerable(module)
            return ctx.values[node]

    def _check_lowerable(self, module: ir.Module) -> None:
        problems = []

        def visit(op):
            name = op.name
            if is_ours(name):
                if name in self.target.unsupported_ops:
                    problems.append(f"{name} is not supported by target {self.target.name}")
                else:
                    try:
                        lowering_registry.lookup(name, self.target.name)
                    except lowering_registry.NoLoweringRule as e:
                        problems.append(str(e))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        if problems:
            raise Unsupported("; ".join(problems))


def partition(gm: fx.GraphModule, target, device_type: str | None = None) -> tuple[fx.GraphModule, SupportOracle]:
    """Fuse supported nodes into `fused_N` submodules of gm (in place); the rest stays eager.
    With `device_type`, a node touching a tensor on another device stays eager too."""
    oracle = SupportOracle(target, device_type)
    partitioner = CapabilityBasedPartitioner(gm, oracle, allows_single_node_partition=True)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if calls and all(oracle.is_node_supported(None, n) for n in calls):
        # Every node compiles (the usual case): one region of them all, which is what the
        # partitioner would propose, without its merge search (a second on a 2,000-node graph).
        return partitioner.fuse_partitions([Partition(0, calls)]), oracle
    return partitioner.partition_and_fuse(), oracle
