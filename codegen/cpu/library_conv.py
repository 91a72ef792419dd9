"""Convolution (and its gradients) on the cpu target through torch's own kernels, the ones eager runs
(`library_matmul`).

A float32/float64 `dynamo.conv2d` (1-d as 2-d over a unit height, 2-d, 3-d; any groups, stride,
padding, dilation) with static, non-empty shapes becomes, before lowering, calls to torch's stable
C shim exported by libtorch_cpu.so (reopened RTLD_GLOBAL by library.load_libtorch):

    aoti_torch_create_tensor_from_blob(x)  aoti_torch_create_tensor_from_blob(w)
    aoti_torch_cpu_convolution(x, w, no bias, stride, padding, dilation, ..., groups) -> y
    y read in place (adopted_results.py), or: aoti_torch_create_tensor_from_blob(out)  aoti_torch_copy_(out, y)
    aoti_torch_delete_tensor_object for each (y's at the function's return when read in place)

That is at::convolution, so the same kernel eager would pick for those shapes and threads
(oneDNN for a batch, its im2col + MKL GEMM for small ones): eager's numbers, eager's speed. The
handles only describe our buffers (sizes and strides read from the memrefs at run time: an
operand may be a strided view). A copy into our output cost about a tenth of the convolution
(cnn_b8's first: 22 of 206 us; both copies 5% of its 870 us call under the profiler), so torch's
result is read where it is when it is laid out as our buffer would be and is not the
function's result (adopted_results.py: a memref over its data pointer, the handle kept until the
buffer's last use); otherwise it is copied.

Channels-last (measured 2026-11-24, AMD EPYC with AVX2, no AVX-512, 2 cores; torch 2.13).
Inductor runs every convolution channels-last, and `torch.conv2d` alone looked several times
faster so (8x3x64x64 -> 16 channels, 2 threads: 2.2 ms NCHW, 0.3 ms channels-last). Much of
that gap was page faults: oneDNN's NCHW path allocates reorder buffers of megabytes each call,
which glibc's default malloc maps fresh each time (with freed memory kept, heap.py, the two were
within 20%). A first version ran each convolution channels-last on its own (x transposed into
NHWC, the result copied back, the transposes folded into the batch norm): on the benchmark CNN
it lost (3.72 and 3.77 ms vs 3.61 all NCHW, one thread, no page faults): the transposes cost
what the kernel saves. So the layout is chosen per graph (channels_last.py, option
channels_last): convolutions in a chain, and the batch norm / relu / pooling between them,
run NHWC, with transposes only where NCHW is needed (the image, a flatten, graph outputs). Such
a `dynamo.conv2d {layout = "nhwc"}` is called here on NHWC buffers shown to torch as NCHW
tensors with channels-last strides (sizes and strides read in NCHW order off the NHWC memref,
a view, no copy): torch picks its channels-last kernel, and its channels-last result is read in
place as our NHWC buffer (or copied densely into it). The CNN (`bench_models.py --only cnn
--repeats 20`, 2 runs or more each): mlir/inductor 0.97-1.05 at 2 threads and 0.98-1.03 at one
with it, 0.85-0.91 and 0.89-0.93 without; page faults per call (benchmarks/cnn_page_faults.py,
one thread) 0-992 with it, 2624-2752 without (inductor 0). What is left: torch makes the FCHW
weight channels-last on each call (a small clone).

Why not im2col in generated code + MKL's sgemm_ (as library.py calls it)? That is eager's own
slow path (Slow2d: im2col, then GEMM), and it is slower where eager leaves it for oneDNN. One
thread, cnn_b8's two convolutions (3x3, padding 1), median of 100 calls, eager's default kernel
vs the same call with oneDNN off (Slow2d): 8x3x32x32 -> 16 channels 195 vs 194 us, 8x16x16x16 ->
32 channels 303 vs 549 us; at batch 1 eager picks Slow2d itself (61 us both). Calling
at::convolution gets whichever is faster, with no im2col buffer of our own to manage.

How the call sits in the tensor program. Unlike matmul (library.py), the convolution is taken
before lowering, not after bufferization: its lowering pads the input (tensor.pad, a copy) and
regroups channels, while torch takes padding and groups itself. At the linalg stage the operands
become buffers with
`bufferization.to_buffer read_only` (any layout: the type is fully strided; one per operand
per convolution: codegen/buffer_reads.py says why), the result is a
fresh `memref.alloc` that the calls write, and `bufferization.to_tensor restrict writable` hands
it back to the tensor world; one-shot bufferization keeps all of it, and where the convolution
is the function's result, buffer-results-to-out-params makes that alloc the output itself.
What follows (bias, batch norm, relu) stays our fused loops over that buffer.

A failing call (only out of memory, for static shapes checked at the region's entry) is not
lost: every call's status is or-ed into the module's global STATUS, which the runtime reads
after each call and raises on (runtime.py); torch has printed why. (Threads calling one region
at once share that global: a failure may be reported to another thread's call.)

The calls carry the convolution's location, so `library_nodes` counts its FX node as a library
call for stats().

The gradients (dynamo.conv_grad_input / conv_grad_weight, float32/float64, static) are torch's
convolution_backward through the same shim (aoti_torch_cpu_convolution_backward), one call per
gradient with only that gradient in its output mask, given the output gradient and the other
operand; the operand whose gradient is asked lends only its shape, and our result buffer, which
has it, stands in for it (as torch.nn.grad's functions pass an empty tensor). So eager's backward
kernels run, where the generic rule's forward convolutions ran before (2026-11-26: for cnn_b8's
first layer the weight gradient, a convolution over a 32x32 "kernel", took 700 us against
eager's 318). Gradients this path does not take (half types, which the widening pass must see as
convolutions; library_matmul off) are expanded by their generic rule first (expand_conv_grads,
the pass cpu-expand-conv-grads).
"""

from __future__ import annotations

import ctypes
import functools

from torch_mlir import ir
from torch_mlir.dialects import arith, bufferization, func, llvm, memref

from ...dialects import dynamo as dy
from ...lowering import lower_dynamo_ops
from ...lowering.loops import if_else
from ..attributes import RETAINS
from ..buffer_reads import read_only_buffer
from . import adopted_results, handed_results
from .library import LIBTORCH_CPU, declare, nodes_calling, ops_named, pointer_to

ELEMENT_DTYPE = {"f32": "aoti_torch_dtype_float32", "f64": "aoti_torch_dtype_float64"}
STATUS = "dynamo_library_status"  # the module's global, symbol `_mlir_<STATUS>` (see status_name)
FROM_BLOB, CONVOLUTION = "aoti_torch_create_tensor_from_blob", "aoti_torch_cpu_convolution"
BACKWARD = "aoti_torch_cpu_convolution_backward"
COPY, DELETE = "aoti_torch_copy_", "aoti_torch_delete_tensor_object"
FLASH_ATTENTION = "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu"  # library_attention.py
LINEAR = "aoti_torch_cpu__linear_pointwise"  # oneDNN's matmul (library_linear.py)
# The tensor handles of one call, in their slots' order: its two operands, torch's result (y;
# a backward's three, r0..r2: the unasked two are undefined tensors) and our output buffer;
# attention's third operand and its bias (library_attention.py).
HANDLES = ("x", "w", "y", "out", "r0", "r1", "r2", "v", "b", "data", "strides")  # the last two: what
# adopted_results.py asks of torch's result (its data pointer, its strides array)
# Those each kind of call sets, cleared before it and deleted after it (a call that stops early
# leaves later ones null, which delete ignores).
FORWARD_HANDLES, BACKWARD_HANDLES = ("x", "w", "y", "out"), ("x", "w", "y", "out", "r0", "r1", "r2")


def _signatures() -> dict[str, tuple[list[ir.Type], list[ir.Type]]]:
    """symbol -> (argument types, result types), from torch's shim.h / c_shim_cpu.h."""
    ptr, i64, i32 = llvm.PointerType.get(), ir.IntegerType.get_signless(64), ir.IntegerType.get_signless(32)
    return {
        FROM_BLOB: ([ptr, i64, ptr, ptr, i64, i32, i32, i32, ptr], [i32]),
        CONVOLUTION: ([ptr, ptr, ptr, ptr, i64, ptr, i64, ptr, i64, i32, ptr, i64, i64, ptr], [i32]),
        BACKWARD: ([ptr, ptr, ptr, ptr, i64, ptr, i64, ptr, i64, ptr, i64, i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr], [i32]),
        COPY: ([ptr, ptr, i32], [i32]),
        DELETE: ([ptr], [i32]),
        FLASH_ATTENTION: ([ptr, ptr, ptr, ir.F64Type.get(), i32, ptr, ptr, ptr, ptr], [i32]),
        LINEAR: ([ptr, ptr, ptr, ptr, ptr, i64, ptr, ptr], [i32]),  # X W B* attr scalars n algorithm* -> Y
        **adopted_results.signatures(),
    }


SYMBOLS = frozenset({FROM_BLOB, CONVOLUTION, BACKWARD, COPY, DELETE, FLASH_ATTENTION, LINEAR,
                     *adopted_results.SYMBOLS})


@functools.cache
def _codes() -> dict[str, int]:
    """torch's dtype and device codes (c10 enums), asked of the shim itself."""
    lib = ctypes.CDLL(LIBTORCH_CPU)
    names = {**ELEMENT_DTYPE, "cpu": "aoti_torch_device_type_cpu"}
    return {key: getattr(lib, symbol)() for key, symbol in names.items()}


def status_name() -> str:
    """The status global's symbol: ExecutionEngine.raw_lookup(name) finds `_mlir_<name>`."""
    return "_mlir_" + STATUS


# ----------------------------------------------------------------------------- linalg stage


def eligible(op) -> bool:
    """A dynamo.conv2d (or a gradient of one) torch's kernel can take here: float32/float64, every
    shape static, non-empty."""
    types = [ir.RankedTensorType(v.type) for v in (*_operands(op), op.out)]
    return (str(types[2].element_type) in ELEMENT_DTYPE
            and all(t.has_static_shape and 0 not in t.shape for t in types))


def strided_type(t: ir.RankedTensorType) -> ir.MemRefType:
    """The memref type of `t` with any layout (sizes and strides are read at run time)."""
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    layout = ir.StridedLayoutAttr.get(dynamic, [dynamic] * t.rank)
    return ir.MemRefType.get(t.shape, t.element_type, layout)


def _i64(v) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(64), v)


def _i32(v) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(32), v)


class ShimFrame:
    """One shim call's stack slots, allocated at the function's entry: its int64 arrays (a
    convolution's: each operand's sizes and strides, then stride, padding, dilation, output
    padding), the tensor handles, and a double (attention's scale, library_attention.py)."""

    def __init__(self, entry: ir.Block, rank: int, ints: int | None = None):
        """`ints`: int64 slots (default: a convolution's, 4 operands' sizes and strides (a
        gradient's: the output gradient, the other operand, the result, a shape-only view) and its
        4 windows)."""
        i64 = ir.IntegerType.get_signless(64)
        self.spatial = rank - 2
        with ir.InsertionPoint.at_block_begin(entry):
            self.ints = memref.alloca(ir.MemRefType.get([ints or 8 * rank + 4 * self.spatial], i64), [], [])
            self.handles = memref.alloca(ir.MemRefType.get([len(HANDLES)], i64), [], [])
            self.mask = memref.alloca(ir.MemRefType.get([3], ir.IntegerType.get_signless(32)), [], [])
            self.doubles = memref.alloca(ir.MemRefType.get([1], ir.F64Type.get()), [], [])
        self.used = 0

    def double(self, value: float) -> ir.Value:
        """A pointer to a double holding `value` (a shim's optional double argument)."""
        memref.store(arith.constant(ir.F64Type.get(), value), self.doubles, [arith.constant(ir.IndexType.get(), 0)])
        return pointer_to(self.doubles)

    def array(self, values: list[ir.Value]) -> ir.Value:
        """A pointer to the next len(values) int64 slots, holding `values` (i64 or index)."""
        start, i64 = self.used, ir.IntegerType.get_signless(64)
        for k, v in enumerate(values):
            v = arith.index_cast(i64, v) if isinstance(v.type, ir.IndexType) else v
            memref.store(v, self.ints, [arith.constant(ir.IndexType.get(), start + k)])
        self.used += len(values)
        return pointer_to(self.ints, arith.constant(ir.IndexType.get(), 8 * start))

    def output_mask(self, which: int) -> ir.Value:
        """A pointer to three int32 flags, only gradient `which` asked for (convolution_backward)."""
        for k in range(3):
            memref.store(_i32(int(k == which)), self.mask, [arith.constant(ir.IndexType.get(), k)])
        return pointer_to(self.mask)

    def clear_handles(self, names) -> None:
        for name in names:
            memref.store(_i64(0), self.handles, [arith.constant(ir.IndexType.get(), HANDLES.index(name))])

    def handle_slot(self, name: str) -> ir.Value:
        return pointer_to(self.handles, arith.constant(ir.IndexType.get(), 8 * HANDLES.index(name)))

    def slot_value(self, name: str) -> ir.Value:
        """Slot `name`'s int64."""
        return memref.load(self.handles, [arith.constant(ir.IndexType.get(), HANDLES.index(name))])

    def handle(self, name: str) -> ir.Value:
        return llvm.inttoptr(llvm.PointerType.get(), self.slot_value(name))


def call_shim(name: str, args: list[ir.Value], retains: int | None = None) -> ir.Value:
    """The call's status; `retains`: the index of the operand whose slot keeps the buffer (RETAINS)."""
    status = func.call([ir.IntegerType.get_signless(32)], name, args)
    if retains is not None:
        status.owner.attributes[RETAINS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), retains)
    return status


def wrap_buffer(frame: ShimFrame, buffer: ir.Value, name: str, dims: list[int] | None = None) -> ir.Value:
    """A torch tensor handle over `buffer` (its data, sizes, strides), in slot `name`; the status.
    `dims`: torch's dim i is the buffer's dim dims[i] (an NHWC buffer is shown to torch as the
    NCHW tensor with channels-last strides, a view, no copy); default: the buffer's own order."""
    t = ir.MemRefType(buffer.type)
    _, _, *rest = memref.extract_strided_metadata(buffer)
    dims = dims or list(range(t.rank))
    sizes, strides = frame.array([rest[d] for d in dims]), frame.array([rest[t.rank + d] for d in dims])
    codes = _codes()
    return call_shim(FROM_BLOB, [pointer_to(buffer), _i64(t.rank), sizes, strides, _i64(0),
                             _i32(codes[str(t.element_type)]), _i32(codes["cpu"]), _i32(0), frame.handle_slot(name)],
                 retains=8)  # the handle lives in that slot: the buffer with it


def _emit(frame: ShimFrame, op, x: ir.Value, w: ir.Value, y_type: ir.MemRefType, into: ir.Value | None,
          handed: bool = False) -> ir.Value:
    """The calls computing conv(x, w); the buffer of type y_type holding it. A call runs only if
    every one before it succeeded (a failed one leaves its handle null, which no later call may
    be given); the deletes always run (deleting a null handle does nothing); the status goes to
    STATUS. Channels-last x and y are shown to torch as NCHW views with channels-last strides:
    torch then picks its channels-last kernel, and its result is channels-last too. The result
    is copied into buffer `into`; without one, it is read in place where it is laid out as our
    buffer would be (adopted_results.py; its handle is deleted after the buffer's last use:
    release_adopted_results), else copied into a buffer of ours; `handed`: a result of the
    function itself, whose torch tensor handed_results.py then hands to the caller."""
    stride, padding, dilation = (dy.int_list(a) for a in (op.stride, op.padding, op.dilation))
    groups = ir.IntegerAttr(op.groups).value
    n = frame.spatial
    torch_dims = dy.TO_NCHW if dy.layout_of(op) == "nhwc" else None
    frame.clear_handles(FORWARD_HANDLES)
    status = wrap_buffer(frame, x, "x", torch_dims)
    status = then(status, lambda: wrap_buffer(frame, w, "w", _weight_dims(op)))

    def convolve():
        windows = [frame.array([_i64(v) for v in values]) for values in (stride, padding, dilation, [0] * n)]
        return call_shim(CONVOLUTION, [
            frame.handle("x"), frame.handle("w"), llvm.mlir_zero(llvm.PointerType.get()),
            windows[0], _i64(n), windows[1], _i64(n), windows[2], _i64(n), _i32(0), windows[3], _i64(n),
            _i64(groups), frame.handle_slot("y")])

    status = then(status, convolve)

    def copy_into(y: ir.Value) -> ir.Value:
        copied = then(status, lambda: wrap_buffer(frame, y, "out", torch_dims))
        return then(copied, lambda: call_shim(COPY, [frame.handle("out"), frame.handle("y"), _i32(0)]))

    if into is not None:
        status = copy_into(into)
        for name in FORWARD_HANDLES:
            status = arith.ori(status, call_shim(DELETE, [frame.handle(name)]))
        record_status(status)
        return into
    return _read_in_place(frame, status, "y", y_type, torch_dims, copy_into, FORWARD_HANDLES, None, handed)


def _read_in_place(frame: ShimFrame, status: ir.Value, result: str, y_type: ir.MemRefType, torch_dims,
                   copy_into, handles, fallback: ir.Value | None, handed: bool) -> ir.Value:
    """The buffer holding torch's result (handle slot `result`) after a call with `status`: that
    result itself where it is laid out as our buffer, else `copy_into(buffer)` (`fallback`, or one
    of ours); every handle but the result's deleted now (release_adopted_results deletes it after
    the buffer's last use, or handed_results.py hands it over: `handed`)."""
    dims = torch_dims or list(range(y_type.rank))
    i1 = ir.IntegerType.get_signless(1)
    ok = if_else(arith.cmpi(arith.CmpIPredicate.eq, status, _i32(0)), [i1],
                 lambda: [adopted_results.laid_out_as_ours(frame, frame.handle(result), y_type, dims, call_shim)],
                 lambda: [arith.constant(i1, 0)])[0]
    y = adopted_results.adopt_or_copy(frame, ok, result, y_type, lambda buf: record_status(copy_into(buf)),
                                      call_shim, fallback)
    if handed:
        handed_results.mark(y.owner, permuted=torch_dims is not None)
    for name in handles:
        if name != result:
            status = arith.ori(status, call_shim(DELETE, [frame.handle(name)]))
    record_status(status)
    return y


def _emit_grad(frame: ShimFrame, op, grad: ir.Value, given: ir.Value, y: ir.Value, which: int,
               adopt: bool, handed: bool = False) -> ir.Value:
    """The calls computing gradient `which` (0: input, 1: weight) of the convolution; the buffer
    holding it: torch's convolution_backward, given the output gradient and the other operand;
    the operand whose gradient is asked lends only its shape (as torch.nn.grad's functions do),
    and buffer y has it. The gradient is copied into y, or with `adopt` read in place (and
    `handed` over) as in _emit. Statuses and deletes as in _emit."""
    stride, padding, dilation = (dy.int_list(a) for a in (op.stride, op.padding, op.dilation))
    n = frame.spatial
    # Channels-last: the result's gradient and the input (given, or the gradient asked) are NHWC
    # buffers shown to torch as NCHW views, as in _emit; the weight (or its gradient) is FCHW.
    nhwc = dy.TO_NCHW if dy.layout_of(op) == "nhwc" else None
    given_dims, y_dims = (_weight_dims(op), nhwc) if which == 0 else (nhwc, None)
    frame.clear_handles(BACKWARD_HANDLES)
    status = wrap_buffer(frame, grad, "x", nhwc)
    status = then(status, lambda: wrap_buffer(frame, given, "w", given_dims))
    status = then(status, lambda: wrap_buffer(frame, y, "out", y_dims))
    x, w = ("out", "w") if which == 0 else ("w", "out")
    if nhwc and which == 1:
        # The weight lends its shape to a channels-last call: shown with channels-last strides
        # (y's bytes read as FHWC), or torch would copy y, unwritten, into that layout first.
        status = then(status, lambda: wrap_buffer(frame, _as_fhwc(y), "y", nhwc))
        w = "y"

    def backward():
        windows = [frame.array([_i64(v) for v in values]) for values in (stride, padding, dilation, [0] * n)]
        null = llvm.mlir_zero(llvm.PointerType.get())
        return call_shim(BACKWARD, [
            frame.handle("x"), frame.handle(x), frame.handle(w), null, _i64(0),
            windows[0], _i64(n), windows[1], _i64(n), windows[2], _i64(n), _i32(0), windows[3], _i64(n),
            _i64(ir.IntegerAttr(op.groups).value), frame.output_mask(which), _i64(3),
            frame.handle_slot("r0"), frame.handle_slot("r1"), frame.handle_slot("r2")])

    status = then(status, backward)

    def copy_into(_y: ir.Value) -> ir.Value:  # into y, which handle "out" wraps
        return then(status, lambda: call_shim(COPY, [frame.handle("out"), frame.handle(f"r{which}"), _i32(0)]))

    if adopt:
        return _read_in_place(frame, status, f"r{which}", ir.MemRefType(y.type), y_dims, copy_into,
                              BACKWARD_HANDLES, y, handed)
    status = copy_into(y)
    for name in BACKWARD_HANDLES:
        status = arith.ori(status, call_shim(DELETE, [frame.handle(name)]))
    record_status(status)
    return y


def _weight_dims(op) -> list[int] | None:
    """How torch sees the convolution's weight buffer: an FHWC one as FCHW with channels-last strides."""
    return dy.TO_NCHW if dy.weight_layout_of(op) == "fhwc" else None


def _as_fhwc(weight: ir.Value) -> ir.Value:
    """A dense FCHW weight buffer's bytes as a dense FHWC one (a reinterpretation, no copy)."""
    f, c, h, w = ir.MemRefType(weight.type).shape
    t = ir.MemRefType(weight.type)
    return memref.reinterpret_cast(ir.MemRefType.get([f, h, w, c], t.element_type), weight, [], [], [],
                                   static_offsets=[0], static_sizes=[f, h, w, c],
                                   static_strides=[h * w * c, w * c, c, 1])


def then(status: ir.Value, call) -> ir.Value:
    """`call()`'s status if `status` is success (0), else `status`."""
    ok = arith.cmpi(arith.CmpIPredicate.eq, status, _i32(0))
    return if_else(ok, [status.type], lambda: [call()], lambda: [status])[0]


def record_status(status: ir.Value) -> None:
    """STATUS |= status (0 is success): the runtime reads it after the call."""
    cell = memref.get_global(ir.MemRefType.get([1], status.type), status_name())
    zero = arith.constant(ir.IndexType.get(), 0)
    memref.store(arith.ori(memref.load(cell, [zero]), status), cell, [zero])


def declare_shim(module: ir.Module) -> None:
    for name, (inputs, results) in _signatures().items():
        declare(module, name, inputs, results)
    for op in module.body.operations:
        if op.operation.name == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value == status_name():
            return
    i32 = ir.IntegerType.get_signless(32)
    t = ir.MemRefType.get([1], i32)
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        memref.global_(status_name(), ir.TypeAttr.get(t), sym_visibility="public",
                       initial_value=ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([1], i32),
                                                                    ir.IntegerAttr.get(i32, 0)))


# op name -> (its operands besides the result's gradient, the emitter's `which`)
_GRADS = {"dynamo.conv_grad_input": ("weight", 0), "dynamo.conv_grad_weight": ("x", 1)}


def call_library_convs(module: ir.Module, options) -> None:
    """Before lowering (when library_matmul is on): each eligible dynamo.conv2d becomes torch's
    convolution, and each eligible gradient of one torch's convolution_backward, called on the
    operands' buffers, writing a buffer handed back as its tensor."""
    if not options.target_options.library_matmul:
        return
    for fn in list(module.body.operations):
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        handing = handed_results.hands_over(fn, options)
        for op in ops_named(fn, ("dynamo.conv2d", *_GRADS)):
            view = op.opview
            if not eligible(view):
                continue
            declare_shim(module)
            out = ir.RankedTensorType(view.out.type)
            frame = ShimFrame(fn.regions[0].blocks[0], out.rank)
            y_type = ir.MemRefType.get(out.shape, out.element_type)
            adopt = adopted_results.adoptable(view.out, handing)
            handed = adopt and adopted_results.may_be_returned(view.out)  # returned itself (adoptable)
            if handed:
                handed_results.mark_inputs(fn)
            with ir.InsertionPoint(op), op.location:
                operands = _operands(view)
                a, b = (read_only_buffer(strided_type(ir.RankedTensorType(v.type)), v, op) for v in operands)
                if op.name == "dynamo.conv2d":
                    y = _emit(frame, view, a, b, y_type, None if adopt else memref.alloc(y_type, [], []), handed)
                else:
                    y = _emit_grad(frame, view, a, b, memref.alloc(y_type, [], []), _GRADS[op.name][1], adopt,
                                   handed)
                result = bufferization.to_tensor(out, y, restrict=True, writable=True)
            op.results[0].replace_all_uses_with(result)
            op.erase()


def release_adopted_results(module: ir.Module, options) -> None:
    """After bufferization: the torch handle of each result read in place (adopted_results.py)
    deleted right after the last op using the buffer, its status recorded."""
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        for branch, before in adopted_results.release_points(fn):
            slots, k = adopted_results.handle_of(branch)
            with ir.InsertionPoint(before), branch.location:
                value = memref.load(slots, [arith.constant(ir.IndexType.get(), k)])
                record_status(call_shim(DELETE, [llvm.inttoptr(llvm.PointerType.get(), value)]))


def _operands(view) -> tuple[ir.Value, ir.Value]:
    if view.operation.name == "dynamo.conv2d":
        return view.x, view.weight
    return view.grad, getattr(view, _GRADS[view.operation.name][0])


def expand_conv_grads(module: ir.Module, options) -> None:
    """Each gradient call_library_convs will not take (half types, which the widening pass must
    see as convolutions; library_matmul off) expanded by its generic rule into a dynamo.conv2d."""
    library = options.target_options.library_matmul
    lower_dynamo_ops(module, target="cpu", options=options,
                     only=lambda op: op.name in _GRADS and not (library and eligible(op.opview)))


# ----------------------------------------------------------------------------- after the llvm stage


def library_nodes(module: ir.Module) -> frozenset[str]:
    """FX node names whose convolutions run as torch calls in the final LLVM-dialect module."""
    return nodes_calling(module, {CONVOLUTION, BACKWARD})

