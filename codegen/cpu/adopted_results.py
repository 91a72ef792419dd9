"""A torch call's result read in place as our buffer, instead of copied into one (library_conv.py).

Why. torch's convolution returns a tensor of its own; library_conv used to copy it into a buffer
of ours (aoti_torch_copy_). On ResNet-50 at batch 2 (CPU, 2 threads) aten::copy_ was 18% of a
compiled call's self time under torch.profiler (a one-off script, not kept; one run, the machine
busy with another job): 53 such copies a call, and 17 of torch's own making 3x3 weights
channels-last. Reading the result
where it is saves a pass over every convolution's output: ResNet-50 118.3 against 121.6 and 136.5
against 145.4 ms in two runs (benchmarks/conv_results_in_place.py, 2026-11-28).

How. At the linalg stage, where the copy was, an `scf.if` yields the result's memref:
- adopted when the call succeeded and torch's result is laid out as our buffer would be (the
  dense strides of our buffer's dims in the order torch sees them: an NHWC buffer is shown to
  torch as NCHW with channels-last strides): a memref built over torch's data
  pointer (an LLVM memref descriptor through `builtin.unrealized_conversion_cast`, which the
  LLVM lowering folds away);
- otherwise a buffer of ours the result is copied into, as before.
That buffer is allocated outside the branch, so the deallocation pipeline frees it (or memory
planning places it) unconditionally: a buffer allocated in the branch would make ownership
conditional, and the runtime helper the pipeline then emits takes dynamic memrefs, which the
bare-pointer calling convention refuses for the whole module. The adopted memref is not owned.
torch's tensor handle is deleted right after the last op reading the buffer
(library_conv.release_adopted_results, after bufferization: memory_plan's live intervals), so
torch's allocator has the memory back for the next convolution's result, as when it was copied;
kept until the return instead, 53 live results a call made glibc map fresh pages for each:
ResNet-50 (batch 2, 2 threads) took 135.7 ms against 114.2 copying (one run of the same script).

A result that may reach the function's results through views (reshape, slice, permute,
broadcast) is not adopted: returning it would copy it into the caller's buffer anyway, while the
copy path writes the caller's buffer itself (buffer-results-to-out-params makes that buffer the
output). One returned itself is adopted where the function hands such results over
(handed_results.py): then the caller takes torch's tensor, and nothing is copied.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, llvm, memref, scf

from .memory_plan import live_interval

# Ops through which a dynamo value may still alias its operand once bufferized.
VIEWS = frozenset({"dynamo.reshape", "dynamo.slice", "dynamo.permute", "dynamo.broadcast"})

GET_DATA_PTR, GET_STRIDES = "aoti_torch_get_data_ptr", "aoti_torch_get_strides"
SYMBOLS = (GET_DATA_PTR, GET_STRIDES)
ADOPTED = "dynamo_mlir.adopted"  # on each adopt_or_copy branch, for release_adopted_results


def signatures() -> dict:
    """symbol -> (argument types, result types), from torch's shim.h."""
    ptr, i32 = llvm.PointerType.get(), ir.IntegerType.get_signless(32)
    return {GET_DATA_PTR: ([ptr, ptr], [i32]), GET_STRIDES: ([ptr, ptr], [i32])}


def _returns(value: ir.Value, through_views: bool) -> bool:
    """Whether `value` is a result of its function (itself; with `through_views`, a view of it)."""
    seen, todo = set(), [value]
    while todo:
        v = todo.pop()
        for use in v.uses:
            owner = use.owner
            if owner.name == "func.return" and (through_views or v == value):
                return True
            if through_views and owner.name in VIEWS and owner not in seen:
                seen.add(owner)
                todo.extend(owner.results)
    return False


def may_be_returned(value: ir.Value) -> bool:
    """Whether `value` (a dynamo op's result) or a view of it may be a result of its function."""
    return _returns(value, through_views=True)


def returned_itself(value: ir.Value) -> bool:
    """Whether `value` is a result of its function and no view of it is."""
    return _returns(value, through_views=False) and not any(
        _returns(r, through_views=True) for use in value.uses if use.owner.name in VIEWS for r in use.owner.results)


def adoptable(value: ir.Value, handing: bool) -> bool:
    """Whether a library call's result `value` may be read in place: when it is no result of its
    function, or (`handing`: the function hands results over) is one itself, not through a view."""
    return not may_be_returned(value) or (handing and returned_itself(value))


def dense_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def _i64(v: int) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(64), v)


def _load_i64(pointer: ir.Value, index: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    at = llvm.getelementptr(llvm.PointerType.get(), pointer, [], [index], i64, []) if index else pointer
    return llvm.load(i64, at)


def laid_out_as_ours(frame, handle: ir.Value, t: ir.MemRefType, dims: list[int], call_shim) -> ir.Value:
    """i1: torch's tensor `handle` has, in torch's dim i, the stride of our dense buffer's dim
    dims[i] (its data pointer is its first element's: a storage offset is in it). Scratch slot
    "strides" of `frame`."""
    ours = dense_strides(list(t.shape))
    status = call_shim(GET_STRIDES, [handle, frame.handle_slot("strides")])
    strides = frame.handle("strides")  # the tensor's own int64 array
    ok = arith.cmpi(arith.CmpIPredicate.eq, status, arith.constant(status.type, 0))
    for i, d in enumerate(dims):
        if t.shape[d] != 1:  # a unit dim's stride is anything
            ok = arith.andi(ok, arith.cmpi(arith.CmpIPredicate.eq, _load_i64(strides, i), _i64(ours[d])))
    return ok


def over_pointer(pointer: ir.Value, t: ir.MemRefType) -> ir.Value:
    """A memref of static, identity-layout type `t` over `pointer` (not owned)."""
    i64, ptr = ir.IntegerType.get_signless(64), llvm.PointerType.get()
    rank = t.rank
    array = ir.Type.parse(f"!llvm.array<{rank} x i64>")
    struct = llvm.StructType.get_literal([ptr, ptr, i64, array, array])
    d = llvm.mlir_undef(struct)
    d = llvm.insertvalue(d, pointer, [0])
    d = llvm.insertvalue(d, pointer, [1])
    d = llvm.insertvalue(d, _i64(0), [2])
    for k, (size, stride) in enumerate(zip(t.shape, dense_strides(list(t.shape)))):
        d = llvm.insertvalue(d, _i64(size), [3, k])
        d = llvm.insertvalue(d, _i64(stride), [4, k])
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[t], operands=[d]).result


def adopt_or_copy(frame, ok: ir.Value, handle_name: str, t: ir.MemRefType, copy_into, call_shim,
                  fallback: ir.Value | None = None) -> ir.Value:
    """The memref holding torch's result in slot `handle_name`: over its data where `ok`, else
    `fallback` (default: a buffer allocated here), which `copy_into(buffer)` fills."""
    if fallback is None:  # outside the branch: planned memory, freed unconditionally
        fallback = memref.alloc(t, [], [])
    branch = scf.IfOp(ok, [t], has_else=True)
    branch.attributes[ADOPTED] = ir.UnitAttr.get()
    with ir.InsertionPoint(branch.then_block):
        call_shim(GET_DATA_PTR, [frame.handle(handle_name), frame.handle_slot("data")])
        scf.YieldOp([over_pointer(frame.handle("data"), t)])
    with ir.InsertionPoint(branch.else_block):
        copy_into(fallback)
        scf.YieldOp([fallback])
    return branch.results[0]


def handle_of(branch: ir.Operation) -> tuple[ir.Value, int]:
    """(the stack slots, the slot index) of the torch handle whose result `branch` (an
    adopt_or_copy scf.if) reads in place, from the data-pointer call in its first region."""
    call = next(op for op in branch.regions[0].blocks[0].operations
                if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == GET_DATA_PTR)
    load = call.operands[0].owner.operands[0].owner  # llvm.inttoptr of memref.load slots[k]
    return load.operands[0], ir.IntegerAttr(load.operands[1].owner.attributes["value"]).value


def release_points(fn: ir.Operation) -> list[tuple[ir.Operation, ir.Operation]]:
    """(adopt_or_copy branch, the op to release its handle before) for each branch in `fn`'s
    body: the op after the last one using the buffer or anything derived from it
    (memory_plan.live_interval), or the return where it is never used or escapes."""
    block = fn.regions[0].blocks[0]
    ops = list(block.operations)
    positions = {op: k for k, op in enumerate(ops)}
    found = []
    for op in ops:
        if op.name == "scf.if" and ADOPTED in op.attributes:
            interval = live_interval(op, positions)
            found.append((op, ops[interval[1] + 1] if interval else ops[-1]))
    return found
