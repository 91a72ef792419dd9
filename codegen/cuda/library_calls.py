"""index_put and scatter on the cuda target: torch calls in the host schedule, not kernels.

The generic rules (lowering/rules/scatter.py) are serial loop nests, which the cuda target has
nowhere to run ("serial_loops"); without a rule of its own these ops would run eagerly, and in
a training step each one (an embedding's backward, cross-entropy's backward) would split the
backward graph into several regions, each boundary costing copies into CUDA-graph replays. So
the cuda rules here keep the op as one torch call inside the region: torch's own CUDA kernels
(`index_put_` with or without accumulate, `scatter_` / `scatter_reduce_`), which handle
negative and duplicate indices exactly as eager does, and never synchronize with the host (the
schedule stays capturable as a CUDA graph).

What a rule emits at the linalg stage, on tensors (as the cpu target's library_conv.py does):

    %out = memref.alloc()                                  the result's buffer
    memref.copy(to_buffer(dest) read_only, %out)           a copy kernel (dest is left intact)
    func.call @dynamo_cuda_<kind>_<n>(to_buffer(operand) read_only..., %out)
        {dynamo_mlir.library_call = "<kind>", <the op's attributes>}
    %result = bufferization.to_tensor %out restrict writable

The rules (rules.py registers them) are `index_put` and `scatter`. One-shot bufferization keeps the call (its operands are buffers already), buffer-results-to-
out-params makes %out the region's output where it is one, the gpu stage leaves the call in the
host function (it is no linalg op), and the host schedule reads it as a `Library` step whose op
is the kind (schedule.py); library.py's RUNNERS run it on views of the buffers. The callee is a
private declaration per operand-type signature (a func.call must match its callee's type); only
the attribute names the op. The call carries the dynamo op's location, so stats() counts its FX
node as a library call.

The operands are buffers of the identity layout (static shapes only: the host schedule reads
views off static memref types); a strided producer is copied contiguous by bufferization.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func, memref


CALL_KIND = "dynamo_mlir.library_call"  # func.call attribute: which library op the call is
INDEX_PUT, SCATTER = "torch.index_put", "torch.scatter"
# kind -> the dynamo op's attributes the call keeps (the runner's arguments besides buffers)
CALL_ATTRS = {INDEX_PUT: ("accumulate",), SCATTER: ("dim", "reduce", "include_self")}


def _module_of(op) -> ir.Operation:
    owner = op.operation
    while owner.name != "builtin.module":
        owner = owner.parent
    return owner


def _callee(module: ir.Operation, kind: str, types: list[ir.Type]) -> str:
    """The name of a private declaration taking `types`, declared once per signature."""
    base = "dynamo_cuda_" + kind.split(".")[-1]
    wanted = ir.FunctionType.get(types, [])
    body = module.regions[0].blocks[0]
    taken = 0
    for op in body.operations:
        if op.operation.name != "func.func":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name.startswith(base + "_"):
            if ir.TypeAttr(op.attributes["function_type"]).value == wanted:
                return name
            taken += 1
    name = f"{base}_{taken}"
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        decl = func.FuncOp(name, wanted)
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
    return name


def _buffer_type(value: ir.Value) -> ir.MemRefType:
    t = ir.RankedTensorType(value.type)
    if not t.has_static_shape:
        raise NotImplementedError(f"a torch call on the cuda target needs static shapes, got {t}")
    return ir.MemRefType.get(t.shape, t.element_type)


def _read(value: ir.Value) -> ir.Value:
    return bufferization.to_buffer(_buffer_type(value), value, read_only=True)


def emit_call(op, kind: str, operands: list[ir.Value]) -> ir.Value:
    """op's result as a copy of op.dest that the torch call `kind` then updates in place."""
    out_type = _buffer_type(op.out)
    out = memref.alloc(out_type, [], [])
    memref.copy(_read(op.dest), out)
    args = [_read(v) for v in operands] + [out]
    name = _callee(_module_of(op), kind, [a.type for a in args])
    call = func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
    call.attributes[CALL_KIND] = ir.StringAttr.get(kind)
    for attr in CALL_ATTRS[kind]:
        call.attributes[attr] = op.attributes[attr]
    return bufferization.to_tensor(op.out.type, out, restrict=True, writable=True)


def index_put(op) -> ir.Value:
    return emit_call(op, INDEX_PUT, [op.values, *op.indices])


def scatter(op) -> ir.Value:
    return emit_call(op, SCATTER, [op.index, op.src])


def call_attrs(op) -> tuple:
    """A library call's kept attributes as (name, int or str) pairs, for the host schedule."""
    kind = ir.StringAttr(op.attributes[CALL_KIND]).value
    return tuple((name, _plain(op.attributes[name])) for name in CALL_ATTRS[kind])


def _plain(attr: ir.Attribute):
    return ir.StringAttr(attr).value if isinstance(attr, ir.StringAttr) else ir.IntegerAttr(attr).value


def is_declaration(func_op) -> bool:
    """A func.func without a body (the library calls' callees): not a host function."""
    return len(func_op.regions[0].blocks) == 0
