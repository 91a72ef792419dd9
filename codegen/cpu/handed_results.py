"""A library call's result that is a result of the function handed to the caller as torch's own
tensor, instead of copied into the caller's buffer (library_conv.py, adopted_results.py).

Why. A training forward returns its convolutions' results (the activations its backward reads), and
a backward its weight gradients. The caller allocates each result's buffer, and library_conv copied
torch's result into it: on ResNet-50 at batch 2 (CPU, 2 threads) 53 such copies in the forward
and 53 in the backward a step, each into freshly allocated memory, where inductor returns torch's
tensor itself. With this, the step makes 70 aten::copy_ calls (inductor's: 71), not 159
(`benchmarks/profile_training_step.py --workload train_resnet50_b2_sgd --copy-shapes`); alone
in its process it took 374.8 against 392.7 ms (benchmarks/results/handed_results_cpu_2026-11-28.md).

How.
- library_conv.call_library_convs marks the function (INPUT_COUNT: how many inputs it has) and
  reads a result that is returned itself in place like any other (adopted_results.adopt_or_copy,
  the branch marked HANDED): where torch's tensor is laid out as our buffer would be, the code reads
  it there, else from a copy in a buffer of ours.
- After bufferization (`hand_over_results`), buffer-results-to-out-params has copied that branch's
  value into an out-param. That copy becomes: the result's torch handle stored in a new argument of
  the function (an int64 per result, after the out-params), its stack slot cleared, so that
  release_adopted_results's delete, which comes later, finds nothing. The out-param is no longer
  written. A result nothing else reads (a weight gradient) needs no buffer of ours either: its
  branch, which only chose what our readers read, is erased.
- The module lists the results handed over (HANDED_RESULTS). The cpu runtime allocates no buffer
  for them (it passes a null pointer), passes that array zeroed, and after the call takes each
  handle as the result (torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr). A tensor whose
  strides are not those the function's caller was told (channels-last for an NHWC result, else
  dense) is copied into such a tensor there: what torch returns is its kernel's choice.
Allocating those buffers per call, unwritten, was not free either: in a one-off run of the step
(round-robin with eager's and inductor's in one process) glibc trimmed and regrew its heap
around them, 8096 page faults a step against none for the other two.

Only in a function of static sizes (the dynamic runtime passes no such array), with the cpu option
hand_over_results.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, memref

from ..attributes import HANDED_RESULTS, INPUT_COUNT, NHWC_RESULTS
from ..functions import append_argument
from .adopted_results import handle_of

# On an adopt_or_copy branch whose value the function returns itself: whether torch sees the
# buffer's dims in another order (an NHWC buffer shown as NCHW with channels-last strides).
HANDED = "dynamo_mlir.handed"


def hands_over(fn, options) -> bool:
    """Whether function `fn` (tensor level) may hand library results over: the option is on and
    every argument and result has a static shape."""
    if not getattr(options.target_options, "hand_over_results", False):
        return False
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    return all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape
               for t in (*ftype.inputs, *ftype.results))


def mark_inputs(fn) -> None:
    """Record on `fn` how many inputs it has (before buffer-results-to-out-params adds its out-params)."""
    count = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
    fn.attributes[INPUT_COUNT] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), count)


def mark(branch: ir.Operation, permuted: bool) -> None:
    """Mark adopt_or_copy `branch` as a returned value's (HANDED)."""
    branch.attributes[HANDED] = ir.BoolAttr.get(permuted)


def _handed_copies(module: ir.Module, fn, inputs: int) -> list[tuple[ir.Operation, ir.Operation, int]]:
    """(memref.copy, its HANDED branch, the out-param's result index) for each branch whose value
    is copied, by exactly one copy, into an out-param nothing else uses, and whose torch tensor
    the caller takes as it is: in torch's dim order the buffer's, or (NHWC buffers shown as NCHW)
    a result the caller takes as an NCHW tensor with channels-last strides (NHWC_RESULTS)."""
    attrs = module.operation.attributes
    nhwc = set(ir.DenseI64ArrayAttr(attrs[NHWC_RESULTS])) if NHWC_RESULTS in attrs else set()
    found = []
    for op in fn.regions[0].blocks[0].operations:
        if op.name != "scf.if" or HANDED not in op.attributes:
            continue
        copies = [use.owner for use in op.results[0].uses if use.owner.name == "memref.copy"]
        if len(copies) != 1 or copies[0].operands[0] != op.results[0]:
            continue
        target = copies[0].operands[1]
        if not (isinstance(target.owner, ir.Block) and ir.BlockArgument(target).arg_number >= inputs
                and len(list(target.uses)) == 1):
            continue
        k = ir.BlockArgument(target).arg_number - inputs
        if ir.BoolAttr(op.attributes[HANDED]).value == (k in nhwc):
            found.append((copies[0], op, k))
    return found


def hand_over_results(module: ir.Module, options) -> None:
    """After bufferization and release_adopted_results (see the module's docstring)."""
    for fn in module.body.operations:
        if fn.operation.name != "func.func" or INPUT_COUNT not in fn.attributes or not fn.regions[0].blocks:
            continue
        inputs = ir.IntegerAttr(fn.attributes[INPUT_COUNT]).value
        found = _handed_copies(module, fn, inputs)
        if not found:
            continue
        outputs = len(fn.regions[0].blocks[0].arguments) - inputs
        with fn.location:
            handles = append_argument(fn, ir.MemRefType.get([outputs], ir.IntegerType.get_signless(64)))
        for copy, branch, k in found:
            slots, slot = handle_of(branch)
            index = lambda v: arith.constant(ir.IndexType.get(), v)  # noqa: E731
            with ir.InsertionPoint(copy), copy.location:
                memref.store(memref.load(slots, [index(slot)]), handles, [index(k)])
                memref.store(arith.constant(ir.IntegerType.get_signless(64), 0), slots, [index(slot)])
            copy.erase()
            if not list(branch.results[0].uses):
                # Read by nothing else (a weight gradient): the branch only chose the buffer our
                # readers read (copying a result laid out otherwise): dead work. The runtime makes
                # torch's tensor the promised layout itself if it must.
                branch.operation.erase()
        module.operation.attributes[HANDED_RESULTS] = ir.DenseI64ArrayAttr.get(sorted(k for _, _, k in found))
