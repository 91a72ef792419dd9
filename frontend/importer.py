"""FX graph of ATen ops -> one func.func of dynamo ops.

`ImportContext` is what import rules see: it maps FX nodes to MLIR values and offers the few
builders rules share (cast, broadcast, scalar constants, emit). Every op is created with a
location naming the FX node and ATen op, so verifier and lowering errors point back to it.
"""

import operator
from dataclasses import dataclass

import numpy as np
import torch
import torch.fx as fx
from torch_mlir import ir
from torch_mlir.dialects import func

from ..codegen.attributes import FREE_RESULTS, WRITTEN_INPUTS
from ..codegen.provenance import location_name
from ..codegen.signature import Signature, SizeSpec, TensorSpec
from ..dialects import dynamo as dy
from ..dialects import new_context
from . import dtypes
from .registry import Unsupported, lookup
from .sizes import SizeBuilder, expr_of, python_evaluator

_TORCH_OF_MLIR = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "i1": torch.bool,
}


def fake_value(arg):
    """The FakeTensor (or Python value) an FX argument stands for."""
    return arg.meta.get("val") if isinstance(arg, fx.Node) else arg


def is_tensor_node(arg) -> bool:
    return isinstance(arg, fx.Node) and isinstance(arg.meta.get("val"), torch.Tensor)


DYN = ir.ShapedType.get_dynamic_size()


def is_size_node(arg) -> bool:
    """A SymInt graph value (a placeholder or host arithmetic on sizes), not a tensor."""
    return isinstance(arg, fx.Node) and isinstance(arg.meta.get("val"), torch.SymInt)


def is_symbolic(t: torch.Tensor) -> bool:
    return any(not isinstance(s, int) for s in t.shape)


def static_shape(t: torch.Tensor) -> tuple[int, ...]:
    """t's sizes, DYN (MLIR's `?`) for symbolic ones. Only rules of ops in
    partition.DYNAMIC_SHAPE_OPS see symbolic sizes: the partitioner keeps the others eager."""
    return tuple(s if isinstance(s, int) else DYN for s in t.shape)


class ImportContext:
    def __init__(self, sizes: SizeBuilder | None = None):
        self.values: dict[fx.Node, object] = {}
        self.node: fx.Node | None = None  # the node being imported (its inputs give dynamic sizes)
        self.sizes = sizes or SizeBuilder()
        # half results of float32 arithmetic -> the float32 values they were rounded from
        self.unrounded: dict[ir.Value, ir.Value] = {}
        # (size expression, largest value, what): run-time limits of forms that grow too fast
        # with a `?` size (a scan's pairwise mask): beyond one, the region runs eagerly
        self.size_limits: list[tuple] = []

    def limit_size(self, size, largest: int, what: str) -> None:
        """Where `size` is symbolic, have every call check it is at most `largest`."""
        if isinstance(size, torch.SymInt):
            self.size_limits.append((expr_of(size), largest, what))

    def dims(self, shape) -> tuple[list[int], list[ir.Value]]:
        """A torch shape (ints and SymInts) as a static shape with `?` and the index values of
        its dynamic dims (the `sizes` operands of dynamo.reshape/broadcast)."""
        static = [DYN if isinstance(s, torch.SymInt) else int(s) for s in shape]
        return static, [self.sizes.index(s) for s in shape if isinstance(s, torch.SymInt)]

    # ---- reading nodes
    def tensor(self, arg) -> ir.Value:
        if not isinstance(arg, fx.Node):
            raise Unsupported(f"expected a tensor argument, got {type(arg).__name__}")
        value = self.values.get(arg)
        if value is None:
            raise Unsupported(f"'{arg.name}' has no imported value")
        if isinstance(value.type, ir.IndexType):
            raise Unsupported(f"'{arg.name}' is a size, not a tensor")
        return value

    def out_meta(self, node: fx.Node, index: int | None = None) -> torch.Tensor:
        val = node.meta["val"]
        return val[index] if index is not None else val

    def out_type(self, node: fx.Node, index: int | None = None) -> ir.RankedTensorType:
        val = self.out_meta(node, index)
        return dtypes.tensor_type(static_shape(val), val.dtype)

    @staticmethod
    def dtype_of(value: ir.Value) -> torch.dtype:
        return _TORCH_OF_MLIR[str(dy.elem_of(value))]

    @staticmethod
    def shape_of(value: ir.Value) -> list[int]:
        return dy.shape_of(value)

    # ---- building
    def emit(self, op: str | type, *operands, out: ir.Type, **attrs) -> ir.Value:
        cls = op if isinstance(op, type) else (dy.UNARY_CLASSES.get(op) or dy.BINARY_CLASSES[op])
        return cls(*operands, **attrs, out=out).out

    def type_like(self, value: ir.Value, dtype: torch.dtype | None = None, shape=None) -> ir.RankedTensorType:
        shape = self.shape_of(value) if shape is None else list(shape)
        return dtypes.tensor_type(shape, dtype or self.dtype_of(value))

    def cast(self, value: ir.Value, dtype: torch.dtype) -> ir.Value:
        if self.dtype_of(value) == dtype:
            return value
        return dy.CastOp(value, out=self.type_like(value, dtype)).out

    def rounded(self, value: ir.Value, dtype: torch.dtype) -> ir.Value:
        """A result computed in float32 for a half-precision output, rounded to it. Consumers that
        compute in float32 too (`operand(..., fused=True)`, `opmath`) read the float32 value
        instead: a chain of float ops on half tensors rounds once, where its result is stored, as
        a fused kernel does (inductor's semantics; eager rounds once per kernel, and one kernel
        of its may be several ops here, e.g. addcdiv, which Dynamo decomposes)."""
        out = self.cast(value, dtype)
        if out is not value and dtype in dtypes.UPCAST_DTYPES and self.dtype_of(value) == torch.float32:
            self.unrounded[out] = value
        return out

    def opmath(self, value: ir.Value, dtype: torch.dtype) -> ir.Value:
        """`value` cast to dtype; to float32, a rounded chain result's float32 value (`rounded`)."""
        if dtype == torch.float32:
            value = self.unrounded.get(value, value)
        return self.cast(value, dtype)

    def scalar(self, number, dtype: torch.dtype) -> ir.Value:
        """A 0-d constant tensor holding a Python number converted as torch would."""
        np_type = dtypes.NUMPY_TYPES.get(dtype)
        t = dtypes.tensor_type([], dtype)
        if np_type is None:  # bf16: numpy has no bf16; build from a float attribute
            attr = ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(t.element_type, float(number)))
        else:
            attr = ir.DenseElementsAttr.get(np.array(number, dtype=np_type), type=t.element_type, shape=[])
        return dy.ConstantOp(attr, out=t).out

    def size_tensor(self, arg: fx.Node, dtype: torch.dtype) -> ir.Value:
        """A SymInt node's value as a 0-d tensor of dtype: the region's `index` argument for it,
        or its expression built from the sizes the region has (`2 * s0` from x's dim)."""
        n = self.values.get(arg)
        if n is None or not isinstance(n.type, ir.IndexType):
            n = self.sizes.index(arg.meta["val"])
        return dy.SizeTensorOp(n, out=dtypes.tensor_type([], dtype)).out

    def full(self, number, shape, dtype: torch.dtype) -> ir.Value:
        if any(isinstance(s, torch.SymInt) for s in shape):  # a dynamic fill: broadcast a scalar
            return self.broadcast(self.scalar(number, dtype), shape)
        if 0 in shape:  # an empty attribute is falsy and dropped by ext: slice an empty one instead
            ones = [s or 1 for s in shape]
            zeros = ir.DenseI64ArrayAttr.get([0] * len(shape))
            steps = ir.DenseI64ArrayAttr.get([1] * len(shape))
            return dy.SliceOp(self.full(number, ones, dtype), zeros, steps,
                              out=dtypes.tensor_type(shape, dtype)).out
        t = dtypes.tensor_type(shape, dtype)
        if dtype in (torch.bfloat16, torch.float16) or dtype.is_floating_point:
            attr = ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(t.element_type, float(number)))
        else:
            attr = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, int(number)))
        return dy.ConstantOp(attr, out=t).out

    def broadcast(self, value: ir.Value, shape, like: ir.Value | None = None, source=None) -> ir.Value:
        """NumPy-style broadcast (align right, stretch size-1 dims) to `shape`. A dynamic result
        dim the operand does not carry gets its size from `shape`'s SymInt (a torch shape), or
        else from `like` (a value of that shape). `source`: the operand's torch shape, where
        known (else read off the node being imported)."""
        value = self.pin_stretched_dims(value, shape, source if source is not None else self.symbolic_shape(value))
        symbolic_shape = shape
        symbolic = any(isinstance(s, torch.SymInt) for s in shape)
        src, shape = self.shape_of(value), [DYN if isinstance(s, torch.SymInt) else int(s) for s in shape]
        if src == shape:
            return value
        offset = len(shape) - len(src)
        if offset < 0:
            raise Unsupported(f"cannot broadcast shape {src} to {shape}")
        dims = ir.DenseI64ArrayAttr.get(list(range(offset, len(shape))))
        out = self.type_like(value, shape=shape)
        carried = [False] * offset + [s == d for s, d in zip(src, shape[offset:])]
        if all(d != DYN or c for d, c in zip(shape, carried)):
            return dy.BroadcastOp(value, dims=dims, out=out).out
        if symbolic:
            return dy.BroadcastOp(value, self.dims(symbolic_shape)[1], dims=dims, out=out).out
        like = like if like is not None else self.like_of(self.node.all_input_nodes if self.node else [], shape)
        if like is not None and self.shape_of(like) == shape:
            return dy.BroadcastLikeOp(value, like, dims=dims, out=out).out
        target = self.symbolic_target(shape)  # the node's result shape: its SymInts give the sizes
        if any(isinstance(s, torch.SymInt) for s in target):
            return dy.BroadcastOp(value, self.dims(target)[1], dims=dims, out=out).out
        shown = "[" + ", ".join("?" if d == DYN else str(d) for d in shape) + "]"
        raise Unsupported(f"broadcast to dynamic shape {shown} with no value to read the sizes from")

    def pin_stretched_dims(self, value: ir.Value, shape, source) -> ir.Value:
        """An operand's `?` that broadcasts against another `?` of the result ([1, s0 // 2, s0]
        against [1, s0, s0]) is 1 at run time: Dynamo guarded it so when torch broadcast the two.
        Both being `?`, the broadcast would read it as the result's dim, past its end; reshaped
        to a static 1 first, it is stretched."""
        target = self.symbolic_target(shape)
        offset = len(target) - len(source) if source is not None else -1
        pinned = [i for i, size in enumerate(source or []) if offset >= 0 and _stretched(size, target[offset + i])]
        if not pinned:
            return value
        return self.reshape(value, [1 if i in pinned else size for i, size in enumerate(source)])

    def symbolic_target(self, shape) -> list:
        """`shape` as a torch shape: itself when it holds SymInts, else the node's result shape
        where that is `shape` (rules pass the static form, `?` for each SymInt)."""
        if any(isinstance(s, torch.SymInt) for s in shape):
            return list(shape)
        val = self.node.meta.get("val") if self.node is not None else None
        if isinstance(val, torch.Tensor) and list(static_shape(val)) == list(shape):
            return list(val.shape)
        return list(shape)

    def like_of(self, args, shape) -> ir.Value | None:
        """A tensor among `args` whose shape is `shape`: where broadcasts read dynamic sizes."""
        for a in args:
            value = self.values.get(a) if isinstance(a, fx.Node) else None
            if value is not None and isinstance(value.type, ir.RankedTensorType) and self.shape_of(value) == list(shape):
                return value
        return None

    def operand(self, arg, dtype: torch.dtype, shape, like: ir.Value | None = None, fused: bool = False) -> ir.Value:
        """An elementwise operand: a tensor node or Python number, cast to dtype, broadcast to shape.
        fused: a continuous float op, which reads a rounded chain result unrounded (`rounded`)."""
        source = None
        if isinstance(arg, fx.Node) and isinstance(arg.meta.get("val"), torch.SymInt):
            value = self.size_tensor(arg, dtype)
        elif isinstance(arg, fx.Node):
            value = self.opmath(self.tensor(arg), dtype) if fused else self.cast(self.tensor(arg), dtype)
            val = arg.meta.get("val")
            source = list(val.shape) if isinstance(val, torch.Tensor) else None
        elif isinstance(arg, (bool, int, float)):
            value = self.scalar(arg, dtype)
        else:
            raise Unsupported(f"unsupported elementwise operand {arg!r}")
        return self.broadcast(value, shape, like, source)

    def reshape(self, value: ir.Value, shape) -> ir.Value:
        """Reshape to `shape`: ints (DYN for `?` dims that only unit-dim changes keep) or a torch
        shape whose SymInts become the op's `sizes` where the operand does not carry them."""
        src = self.shape_of(value)
        static = [DYN if isinstance(s, torch.SymInt) else int(s) for s in shape]
        # A `?` of the operand carries a `?` of the result only where both are the same size,
        # which only their symbolic sizes tell: [s0, s1] -> [s1, s0] is no unit-dim reshape,
        # nor is [s24, s6, s0, s0] -> [24, s6*s24*s0 // 24, ...].
        source = self.symbolic_shape(value)
        same = lambda a, b: source is not None and expr_of(source[a]) == expr_of(shape[b])  # noqa: E731
        if src == static and all(s != DYN or same(d, d) for d, s in enumerate(static)):
            return value
        unit_map = dy.unit_dim_map(src, static) or {}
        carried = all(s != DYN or (d in unit_map and src[unit_map[d]] == DYN and same(unit_map[d], d))
                      for d, s in enumerate(static))
        sizes = [] if carried else self.dims(shape)[1]
        return dy.ReshapeOp(value, sizes, out=self.type_like(value, shape=static)).out

    def symbolic_shape(self, value: ir.Value) -> list | None:
        """The torch shape (ints, SymInts) of `value` where it is the value of an input of the
        node being imported; None for a value a rule built (its symbolic sizes are not kept)."""
        for arg in self.node.all_input_nodes if self.node is not None else []:
            val = arg.meta.get("val")
            if isinstance(val, torch.Tensor) and self.values.get(arg) == value:
                return list(val.shape)
        return None


def _stretched(size, target) -> bool:
    """Whether an operand's symbolic size broadcasts against a different result size, symbolic
    or static (`(s0*s1)//15` against 3): then it is 1 (the example sizes Dynamo traced with tell
    which way its guard went)."""
    if not isinstance(size, torch.SymInt):
        return False
    hint = lambda s: getattr(s.node, "hint", None) if isinstance(s, torch.SymInt) else int(s)  # noqa: E731
    return expr_of(size) != expr_of(target) and hint(size) == 1 and hint(target) not in (1, None)


def node_location(node: fx.Node) -> ir.Location:
    return ir.Location.name(location_name(node.name, node.target))


def import_node(ctx: ImportContext, node: fx.Node):
    """Import one call_function node; its value(s) go into ctx.values."""
    if node.target is operator.getitem:
        produced = ctx.values.get(node.args[0])
        if not isinstance(produced, tuple) or produced[node.args[1]] is None:
            raise Unsupported(f"output {node.args[1]} of '{node.args[0]}' is not produced")
        ctx.values[node] = produced[node.args[1]]
        return
    rule = lookup(node.target)
    if rule is None:
        raise Unsupported(f"no import rule for {node.target}")
    ctx.node = node
    with node_location(node):
        ctx.values[node] = rule(ctx, node)


@dataclass
class ImportedGraph:
    module: ir.Module
    signature: Signature
    ops: list[str]  # ATen ops imported, in graph order
    # Per FX output: ("result", k) is the function's k-th result, ("input", i) is graph input i
    # returned as is, ("copy_result", k)/("copy_input", i) a fresh copy of one. Outputs that
    # repeat a value or pass an input through are not results: bufferizing a function that
    # returns one value twice (or its own argument) is not supported.
    output_plan: tuple[tuple[str, int], ...] = ()
    # With size limits (ImportContext.limit_size): inputs -> why they exceed one, or None.
    size_check: object = None
    # FX output -> graph input it is computed into (import_graph's `written_inputs`, those kept):
    # the output_plan says ("input", i) for it, and the function writes argument i.
    written_inputs: tuple[tuple[int, int], ...] = ()

    @property
    def plan_is_identity(self) -> bool:
        return plan_is_identity(self.output_plan)


def plan_is_identity(plan) -> bool:
    """Whether an output plan returns the function's results as they come."""
    return all(p == ("result", i) for i, p in enumerate(plan))


def tensor_spec(val: torch.Tensor) -> TensorSpec:
    return TensorSpec(tuple(-1 if s == DYN else s for s in static_shape(val)), val.dtype)


def input_spec(node: fx.Node) -> TensorSpec | SizeSpec:
    val = node.meta["val"]
    return SizeSpec(str(val.node.expr)) if isinstance(val, torch.SymInt) else tensor_spec(val)


def input_type(node: fx.Node) -> ir.Type:
    val = node.meta["val"]
    if isinstance(val, torch.SymInt):
        return ir.IndexType.get()
    return dtypes.tensor_type(static_shape(val), val.dtype)


def bind_inputs(ctx: ImportContext, placeholders: list[fx.Node], arguments) -> None:
    """Placeholders' values, and where each size symbol can be read (tensor dims, SymInt args)."""
    for node, arg in zip(placeholders, arguments):
        ctx.values[node] = arg
        val = node.meta["val"]
        if isinstance(val, torch.SymInt):
            ctx.sizes.bind_value(expr_of(val), arg)
        else:
            ctx.sizes.bind_tensor(arg, val.shape)


def _symbol_readers(placeholders: list[fx.Node]) -> dict:
    """Where each size symbol is read off the inputs: symbol -> (input, dim), dim None for a
    SymInt input that is the symbol, else a tensor dim of exactly that size."""
    import sympy

    where = {}
    for i, n in enumerate(placeholders):
        val = n.meta["val"]
        if isinstance(val, torch.SymInt):
            if isinstance(val.node.expr, sympy.Symbol):
                where.setdefault(val.node.expr, (i, None))
            continue
        for d, size in enumerate(val.shape):
            if isinstance(size, torch.SymInt) and isinstance(size.node.expr, sympy.Symbol):
                where.setdefault(size.node.expr, (i, d))
    return where


def _evaluator_of_inputs(placeholders: list[fx.Node], exprs_per_output: list[list], what: str):
    """A function from the inputs (tensors and ints) to the values of `exprs_per_output` (see
    sizes.python_evaluator): no sympy on the call path."""
    where = _symbol_readers(placeholders)
    free = set().union(*[e.free_symbols for exprs in exprs_per_output for e in exprs if not isinstance(e, int)])
    if not free <= set(where):
        raise Unsupported(f"{what} use symbols {sorted(map(str, free - set(where)))} no input carries")
    evaluate, _ = python_evaluator(list(where), exprs_per_output)
    readers = list(where.values())
    return lambda inputs: evaluate(*[inputs[i] if d is None else inputs[i].shape[d] for i, d in readers])


def output_shapes_fn(placeholders: list[fx.Node], outputs: list[torch.Tensor]):
    """For graphs with symbolic sizes: a function from the inputs (tensors and ints) to the
    outputs' shapes. Each symbol is read off an input: a SymInt argument or a tensor dim of
    exactly that size. The shapes are torch's sympy expressions of them, compiled once into a
    Python lambda (see sizes.python_evaluator): no sympy on the call path."""
    return _evaluator_of_inputs(placeholders, [[expr_of(s) for s in val.shape] for val in outputs], "output sizes")


def size_check_fn(placeholders: list[fx.Node], limits: list[tuple]):
    """For a graph with size limits: a function from the inputs to the reason the first limit
    they exceed gives (the region then runs eagerly for them), or None."""
    if not limits:
        return None
    values = _evaluator_of_inputs(placeholders, [[e for e, _, _ in limits]], "size limits")

    def size_check(inputs) -> str | None:
        for n, (_, largest, what) in zip(values(inputs)[0], limits):
            if n > largest:
                return f"{what} over {n} elements (compiled for at most {largest})"
        return None

    return size_check


def import_graph(gm: fx.GraphModule, name: str = "main", written_inputs: dict[int, int] | None = None,
                 free_outputs: frozenset[int] = frozenset()) -> ImportedGraph:
    """The whole graph as `func.func @name`. Placeholders are tensors or SymInts (`index`
    arguments); outputs are tensors. `written_inputs` {FX output: graph input}: outputs that are
    those inputs' new values, to be computed into them (see written_in_place). `free_outputs`:
    FX outputs whose reader takes any strides (a training forward's saved activations): the
    function's results that only they read are marked FREE_RESULTS."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    results = list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    for n in placeholders + results:
        if not is_tensor_node(n) and not (n.op == "placeholder" and is_size_node(n)):
            raise Unsupported(f"graph input/output '{n}' is not a tensor")
    in_specs = [input_spec(n) for n in placeholders]
    context = new_context()
    ops = []
    with context, ir.Location.unknown():
        module = ir.Module.create()
        arg_types = [input_type(n) for n in placeholders]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp(name, (arg_types, []))
        block = fn.add_entry_block()
        ctx = ImportContext()
        with ir.InsertionPoint(block):
            bind_inputs(ctx, placeholders, block.arguments)
            for node in gm.graph.nodes:
                if node.op == "call_function":
                    import_node(ctx, node)
                    ops.append(str(node.target))
                elif node.op not in ("placeholder", "output"):
                    raise Unsupported(f"node kind '{node.op}' ({node.target}) is not importable")
            returned = [_exact(ctx, r) for r in results]
            sources = [storage_source(r) for r in results]
            plan, unique = output_plan(list(block.arguments), returned, placeholders, sources)
            plan, unique, written, honored = written_in_place(plan, unique, list(block.arguments), written_inputs or {})
            func.ReturnOp(unique + [v for v, _ in written])
        fn.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [v.type for v in unique] + [v.type for v, _ in written]))
        free = free_results(plan, len(unique), free_outputs)
        if free:
            fn.attributes[FREE_RESULTS] = ir.DenseI64ArrayAttr.get(free)
        if written:
            fn.attributes[WRITTEN_INPUTS] = ir.ArrayAttr.get([
                ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), x) for x in (len(unique) + t, j)])
                for t, (_, j) in enumerate(written)])
    out_vals = [results[returned.index(u)].meta["val"] for u in unique]
    out_specs = [tensor_spec(v) for v in out_vals]
    shapes = None
    if not all(s.is_static for s in (*in_specs, *out_specs)):
        shapes = output_shapes_fn(placeholders, out_vals)
    return ImportedGraph(module, Signature(name, tuple(in_specs), tuple(out_specs), shapes), ops, plan,
                         size_check_fn(placeholders, ctx.size_limits), honored)


def free_results(plan, results: int, free_outputs: frozenset[int]) -> list[int]:
    """The function's results (of the first `results`) that only FX outputs in `free_outputs` read."""
    readers: dict[int, list[int]] = {}
    for i, (kind, k) in enumerate(plan):
        if kind in ("result", "copy_result"):
            readers.setdefault(k, []).append(i)
    return [k for k in range(results) if readers.get(k) and all(i in free_outputs for i in readers[k])]


def storage_source(node: fx.Node) -> fx.Node:
    """The node whose storage `node`'s eager value shares: through views (ops whose schema says
    their result aliases their input: alias, detach, view, ...) to the first node that is not one.
    clone, _to_copy and every other functional op make fresh storage: they are their own source."""
    while node.op == "call_function" and _returns_alias(node.target):
        node = node.args[0]
    return node


def _returns_alias(target) -> bool:
    schema = getattr(target, "_schema", None)
    return schema is not None and bool(schema.returns) and schema.returns[0].alias_info is not None


def output_plan(arguments: list[ir.Value], returned: list[ir.Value], placeholders: list[fx.Node],
                sources: list[fx.Node]):
    """Where each FX output comes from, and the distinct computed values the function returns.

    Two FX outputs may be one value: an alias, detach, clone or _to_copy imports as its source.
    Returning one tensor for both is right only where eager shares storage too (`sources`, see
    storage_source); a clone returned as its input made the caller's copy the input itself (an
    in-place update of one changed the other, and bumped the other's version counter, which
    autograd then reported on a tensor saved for the backward). Such an output is a copy."""
    unique: list[ir.Value] = []
    owners = {("input", i): p for i, p in enumerate(placeholders)}
    plan = []
    for v, source in zip(returned, sources):
        if v in arguments:
            kind, index = "input", arguments.index(v)
        else:
            if v not in unique:
                unique.append(v)
            kind, index = "result", unique.index(v)
        owner = owners.setdefault((kind, index), source)
        plan.append((kind if owner is source else f"copy_{kind}", index))
    return tuple(plan), unique


def written_in_place(plan: tuple, unique: list[ir.Value], arguments: list[ir.Value], written_inputs: dict[int, int]):
    """(plan, results, [(value, argument)], ((k, i), ...)): each FX output k of `written_inputs`
    {k: i} whose value is a result of its own (no other output shares it), has argument i's
    type, and whose input is no output itself (its old value, taken after the call) leaves the
    results: the plan says ("input", i) for it (the argument holds it after the
    call), (value, i) is written (codegen/written_inputs.py) and (k, i) is among those taken.
    The other results are renumbered."""
    plan = list(plan)
    taken, honored = [], []
    for k, i in sorted(written_inputs.items()):
        kind, u = plan[k]
        if kind != "result" or [p[1] for p in plan if p[0].endswith("result")].count(u) != 1 \
                or unique[u].type != arguments[i].type or any(p[0].endswith("input") and p[1] == i for p in plan):
            continue  # shared, or the input's old value is an output too (read after the call)
        taken.append((u, i))
        honored.append((k, i))
        plan[k] = ("input", i)
    gone = {u for u, _ in taken}
    renumber = {u: n for n, u in enumerate(u for u in range(len(unique)) if u not in gone)}
    plan = [(kind, renumber[index]) if kind.endswith("result") else (kind, index) for kind, index in plan]
    return (tuple(plan), [v for u, v in enumerate(unique) if u not in gone], [(unique[u], i) for u, i in taken],
            tuple(honored))


def _exact(ctx: ImportContext, node: fx.Node) -> ir.Value:
    value = ctx.tensor(node)
    t = dtypes.tensor_type(static_shape(node.meta["val"]), node.meta["val"].dtype)
    if value.type != t:
        raise Unsupported(f"'{node.name}' imported as {value.type}, expected {t}")
    return value
