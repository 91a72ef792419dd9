"""index_put, scatter and attention on the cuda target: torch calls in the host schedule, not kernels.

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
    memref.copy(to_buffer(dest) read_only, %out)           a copy kernel (dest is left intact),
                                                           or a fill where dest is a splat constant
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

convolution (dynamo.conv2d, 2-d or 3-d, NC[D]HW, static) is such a call too, writing a fresh
buffer: cuDNN pads the input as it reads it (the generic rule's padded copy and its zero fill
are two kernels and a buffer per convolution) and writes the step's output buffer itself. So
are its gradients (dynamo.conv_grad_input / conv_grad_weight): torch's convolution_backward,
cuDNN's backward-data and backward-filter kernels, where the generic rule's forward
convolutions of a dilated gradient, or of the input by a gradient as large as an image
("kernels" of 56x56 in ResNet-50), run kernels cuDNN never tuned for those shapes (73 of the
117 ms of a bf16 ResNet-50 training step went to one such kernel, 2026-11-27, H200).

attention (dynamo.attention: an inference graph's F.scaled_dot_product_attention, kept whole
by the frontend) is the same call without the copy: it writes a fresh buffer, its result

    %out = memref.alloc()
    func.call @dynamo_cuda_attention_<n>(q, k, v[, bias], %out)
        {dynamo_mlir.library_call = "torch.attention", is_causal, scale}

and the runner calls torch's SDPA, which picks the fused flash / memory-efficient / cuDNN
kernel as eager does: the [L, S] attention matrix is never written to memory, where the
generic rule's math form (lowering/rules/attention.py) stores the scores and the
probabilities. In a training graph its backward (dynamo.attention_grad) is one call writing
three fresh buffers,

    func.call @dynamo_cuda_attention_grad_<n>(grad, q, k, v[, bias], %dq, %dk, %dv)
        {dynamo_mlir.library_call = "torch.attention_grad", is_causal, scale}

whose runner runs the fused kernel's backward through torch's autograd
(frontend/attention_call.py's attention_grad).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, bufferization, func, linalg, memref, tensor

from ...dialects import dynamo as dy
from ..attributes import LIBRARY_CALL
from ..buffer_reads import read_only_buffer
from ..functions import is_declaration  # noqa: F401  (the callees; schedule.py and to_gpu.py import it here)

CALL_KIND = LIBRARY_CALL  # func.call attribute: which library op the call is
INDEX_PUT, SCATTER, ATTENTION, CONVOLUTION = "torch.index_put", "torch.scatter", "torch.attention", "torch.convolution"
CONVOLUTION_NHWC = "torch.convolution_nhwc"  # input and result NHWC (codegen/channels_last.py)
CONV_GRAD_INPUT, CONV_GRAD_WEIGHT = "torch.conv_grad_input", "torch.conv_grad_weight"
ADDMM = "torch.addmm"  # a matmul and its bias add (matmul_bias.py): (a, b, bias, out)
ATTENTION_GRAD = "torch.attention_grad"  # (grad, q, k, v[, bias], dq, dk, dv)
ATTENTIONS = (ATTENTION, ATTENTION_GRAD)
_WINDOW = ("stride", "padding", "dilation", "groups")
# kind -> the dynamo op's attributes the call keeps (the runner's arguments besides buffers)
CALL_ATTRS = {INDEX_PUT: ("accumulate",), SCATTER: ("dim", "reduce", "include_self"),
              ATTENTION: ("is_causal", "scale"), CONVOLUTION: _WINDOW, CONVOLUTION_NHWC: _WINDOW, CONV_GRAD_INPUT: _WINDOW,
              CONV_GRAD_WEIGHT: _WINDOW, ADDMM: (), ATTENTION_GRAD: ("is_causal", "scale")}
# kind -> how many of its last operands a call writes, where not one
_WRITTEN = {ATTENTION_GRAD: 3}


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
    return ir.MemRefType.get(t.shape, t.element_type)


def _alloc(result: ir.Value, sizes_from: list[tuple[ir.Value, int]]) -> ir.Value:
    """A buffer for `result`; a `?` dim d takes its size from dim sizes_from[d] of a tensor."""
    t = _buffer_type(result)
    dynamic = [tensor.dim(v, arith.constant(ir.IndexType.get(), d))
               for n, (v, d) in zip(t.shape, sizes_from) if n == ir.ShapedType.get_dynamic_size()]
    return memref.alloc(t, dynamic, [])


def _read(value: ir.Value, user) -> ir.Value:
    return read_only_buffer(_buffer_type(value), value, user)  # one per call: ..buffer_reads says why


def emit_call(op, kind: str, operands: list[ir.Value], updates_dest: bool = True, sizes_from=None) -> ir.Value:
    """op's result as a buffer the torch call `kind` writes: a copy of op.dest that the call
    updates in place, or (updates_dest off) a fresh buffer the call fills. Symbolic sizes of the
    result come from `sizes_from` ((tensor, dim) per result dim; default: dest's own dims)."""
    t = ir.RankedTensorType(op.out.type)
    if sizes_from is None:
        sizes_from = [] if t.has_static_shape else [(op.dest, d) for d in range(t.rank)]
    out = _alloc(op.out, sizes_from)
    if updates_dest:
        _init_from(op.dest, out, op)
    _call_with_attrs(op, kind, operands, [out])
    return bufferization.to_tensor(op.out.type, out, restrict=True, writable=True)


def _call_with_attrs(op, kind: str, operands: list[ir.Value], outs: list[ir.Value]) -> func.CallOp:
    call = call_on_buffers(op, kind, [_read(v, op) for v in operands] + outs)
    for attr in CALL_ATTRS[kind]:
        call.attributes[attr] = op.attributes[attr]
    return call


def written_operands(call) -> list[ir.Value]:
    """The buffers a library call writes: its last operand, or its last few (attention_grad)."""
    count = _WRITTEN.get(ir.StringAttr(call.attributes[CALL_KIND]).value, 1)
    return list(call.operands)[-count:]


def call_on_buffers(near, kind: str, args: list[ir.Value]) -> func.CallOp:
    """The library call `kind` on `args` (buffers, the written one last) at the insertion point;
    `near`: an op of the module, where the callee is declared."""
    name = _callee(_module_of(near), kind, [a.type for a in args])
    call = func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
    call.attributes[CALL_KIND] = ir.StringAttr.get(kind)
    return call


def _init_from(dest: ir.Value, out: ir.Value, user) -> None:
    """out := dest. A splat constant (cross-entropy's backward scatters into zeros) is a fill:
    copying it would read a dense constant of the full size, held in device memory."""
    splat = _splat_of(dest)
    if splat is None:
        memref.copy(_read(dest, user), out)
    else:
        linalg.fill(arith.constant(splat.type, splat), outs=[out])


def _splat_of(value: ir.Value) -> ir.Attribute | None:
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name not in ("arith.constant", "dynamo.constant"):
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.DenseElementsAttr) or not attr.is_splat:
        return None
    return attr.get_splat_value()


def index_put(ctx, op) -> ir.Value:
    return emit_call(op, INDEX_PUT, [op.values, *op.indices])


def scatter(ctx, op) -> ir.Value:
    return emit_call(op, SCATTER, [op.index, op.src])


def attention(ctx, op) -> ir.Value:
    sizes = [(op.query, 0), (op.query, 1), (op.query, 2), (op.value, 3)]  # [B, H, L, Ev]
    return emit_call(op, ATTENTION, [op.query, op.key, op.value, *op.bias], updates_dest=False, sizes_from=sizes)


def attention_grad(ctx, op) -> list[ir.Value]:
    """dq, dk, dv as fresh buffers one call of torch's fused attention backward writes."""
    pairs = [(op.grad_query, op.query), (op.grad_key, op.key), (op.grad_value, op.value)]
    outs = [_alloc(grad, [(x, d) for d in range(4)]) for grad, x in pairs]
    _call_with_attrs(op, ATTENTION_GRAD, [op.grad, op.query, op.key, op.value, *op.bias], outs)
    return [bufferization.to_tensor(grad.type, out, restrict=True, writable=True) for (grad, _), out in zip(pairs, outs)]


def _static(value: ir.Value) -> bool:
    return ir.RankedTensorType(value.type).has_static_shape


# a convolution's layout -> its call (NHWC: input and result channels-last, the weight FCHW)
_CONVOLUTIONS = {"nchw": CONVOLUTION, "nhwc": CONVOLUTION_NHWC}


def convolution(ctx, op) -> ir.Value | None:
    """A 2-d or 3-d NC[D]HW (or 2-d NHWC) convolution of static shape as one cuDNN call that pads
    as it reads and writes the step's buffer itself (library.py), or None: the generic rule's."""
    kind = _CONVOLUTIONS.get(dy.layout_of(op))
    if kind is None or not all(_static(v) for v in (op.x, op.weight, op.out)):
        return None
    return emit_call(op, kind, [op.x, op.weight], updates_dest=False)


# The fewest output channels of a convolution run channels-last on cuda. One H200, 2026-11-28
# (`bench_models.py --device cuda --only cnn --repeats 30`, two runs each way): the small CNN
# (16, 32, 64 channels out at 64x64) took 0.182 ms channels-last against 0.174 NCHW, while
# ResNet-50 (64-2048 channels out, its stem's 3 in included) went from 4.09 to 3.36 ms
# (docs/results.md). With the stem left NCHW as well, 3.47 ms against inductor's 3.26 in a later run.
MIN_NHWC_CHANNELS = 64


def channels_last_eligible(op) -> bool:
    """A dynamo.conv2d that `convolution` runs through cuDNN in NHWC (codegen/channels_last.py):
    static, non-empty, a float type cuDNN has, and with enough output channels for cuDNN's NHWC
    kernels to pay (MIN_NHWC_CHANNELS)."""
    types = [ir.RankedTensorType(v.type) for v in (op.x, op.weight, op.out)]
    return all(t.has_static_shape and 0 not in t.shape for t in types) \
        and str(types[0].element_type) in ("f32", "f16", "bf16") \
        and types[2].shape[1] >= MIN_NHWC_CHANNELS  # NCHW: dim 1, the output's channels


def conv_grad_input(ctx, op) -> ir.Value | None:
    """The input gradient as one cuDNN backward call (library.py), or None: the generic rule's."""
    if not all(_static(v) for v in (op.grad, op.weight, op.out)):
        return None
    return emit_call(op, CONV_GRAD_INPUT, [op.grad, op.weight], updates_dest=False)


def conv_grad_weight(ctx, op) -> ir.Value | None:
    """The weight gradient as one cuDNN backward call (library.py), or None: the generic rule's."""
    if not all(_static(v) for v in (op.grad, op.x, op.out)):
        return None
    return emit_call(op, CONV_GRAD_WEIGHT, [op.grad, op.x], updates_dest=False)


def is_call(op, kind: str) -> bool:
    """Whether `op` is a library call of `kind` (torch.attention, ...)."""
    return op.name == "func.call" and CALL_KIND in op.attributes and ir.StringAttr(op.attributes[CALL_KIND]).value == kind


def retype(call) -> None:
    """Point a library call at the declaration of its operands' current types, after an operand
    was replaced by a view of another layout (to_gpu.py's transpose folds)."""
    kind = ir.StringAttr(call.attributes[CALL_KIND]).value
    name = _callee(_module_of(call), kind, [v.type for v in call.operands])
    call.attributes["callee"] = ir.FlatSymbolRefAttr.get(name)


def call_attrs(op) -> tuple:
    """A library call's kept attributes as (name, int, float or str) pairs, for the host schedule."""
    kind = ir.StringAttr(op.attributes[CALL_KIND]).value
    return tuple((name, _plain(op.attributes[name])) for name in CALL_ATTRS[kind])


# attribute class -> its Python value
_PLAIN = ((ir.StringAttr, lambda a: ir.StringAttr(a).value), (ir.FloatAttr, lambda a: ir.FloatAttr(a).value),
          (ir.IntegerAttr, lambda a: ir.IntegerAttr(a).value),
          (ir.DenseI64ArrayAttr, lambda a: tuple(ir.DenseI64ArrayAttr(a))))


def _plain(attr: ir.Attribute):
    return next(read(attr) for kind, read in _PLAIN if isinstance(attr, kind))


