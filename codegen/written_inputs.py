"""A mutated input's new value computed into the input itself, before bufferization.

An optimizer step (torch.optim under Dynamo, functionalized by AOTAutograd) computes each
parameter's and each state tensor's new value, then copies it into its input
(frontend/input_mutations.py). Where the frontend has told a region that result r is input j's
new value, the function carries WRITTEN_INPUTS = [[r, j], ...]; this pass returns r no more and
materializes it in argument j instead (`bufferization.materialize_in_destination`, the argument
made writable), and empty-tensor elimination lets the op that computes it write the argument's
buffer directly. One-shot bufferization's analysis keeps that correct: where another op still
reads the old value after the new one would be written, the new value goes to a buffer of its
own and is copied in at the end, which is what the copy after the region did.

Runs right before bufferizing: canonicalization erases a tensor-form materialize_in_destination
whose result is unused, which is how it is written here.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func

from .attributes import WRITABLE, WRITTEN_ARGUMENTS, WRITTEN_INPUTS
from .functions import defined_functions
from .passes import run_pipeline


def _pairs(fn) -> list[tuple[int, int]]:
    pairs = ir.ArrayAttr(fn.attributes[WRITTEN_INPUTS])
    return [tuple(ir.IntegerAttr(x).value for x in ir.ArrayAttr(pair)) for pair in pairs]


def _writable(fn, arg: int) -> None:
    attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes \
        else [ir.DictAttr.get({})] * len(fn.regions[0].blocks[0].arguments)
    entries = {a.name: a.attr for a in ir.DictAttr(attrs[arg])}
    entries[WRITABLE] = ir.BoolAttr.get(True)
    attrs[arg] = ir.DictAttr.get(entries)
    fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _old_value(block: ir.Block, value: ir.Value, written: set[int]) -> ir.Value:
    """`value`, a returned result, or a copy of it taken at the function's entry where it is an
    argument the function writes: returned as is, that argument's buffer would be written
    before the caller reads it (one-shot bufferization refuses: a 0-d input's mean returned
    beside its in-place square, fuzz seed 13 program 220, ran eagerly)."""
    if not any(value == block.arguments[j] for j in written):
        return value
    with ir.InsertionPoint.at_block_begin(block), ir.Location.unknown():
        return bufferization.AllocTensorOp(value.type, [], copy=value).result  # (sizes: the copied tensor's)


VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice", "tensor.cast", "tensor.reshape")


def _top(op, block: ir.Block):
    """op, or the op of `block` it is nested in; None if neither."""
    while op is not None and op.block != block:
        parent = op.parent
        op = parent.operation if parent is not None and parent.name != "func.func" else None
    return op


def _readers(block: ir.Block, value: ir.Value) -> list:
    """The ops of `block` that read `value` or a view of it."""
    found, stack = [], [value]
    while stack:
        for use in stack.pop().uses:
            op = _top(use.owner.operation, block)
            if op is not None:
                found.append(op)
                if op.name in VIEWS:
                    stack.extend(op.results)
    return found


def _last(ops: list):
    last = ops[0]
    for op in ops[1:]:
        if last.is_before_in_block(op):
            last = op
    return last


def _sink_below_old_readers(block: ir.Block, pairs: list[tuple[int, int]], values: list[ir.Value]) -> None:
    """Move a written result's producer (a linalg.generic, pure) below the last other reader of
    the old values of the arguments it writes, where it can write them in place: above such a
    reader, bufferization gives the new value a buffer of its own and copies it in at the end (an
    AdamW step count's `step + 1`, which the parameter's update reads as `old + 1`: one copy
    kernel per parameter). Only where every user of the producer comes after that reader, and
    the producer reads no argument the function writes but its own (moved below that one's
    writer, it would stage that one instead)."""
    written = {j for _, j in pairs}
    done: list = []
    for r, _ in pairs:
        producer = _owner_op(values[r])
        if producer is None or producer.name != "linalg.generic" or producer.block != block or producer in done:
            continue
        done.append(producer)
        own = {j for r2, j in pairs if _owner_op(values[r2]) == producer}
        if any(v == block.arguments[k] for v in producer.operands for k in written - own):
            continue
        others = [op for j in own for op in _readers(block, block.arguments[j]) if op != producer]
        if not others or _last(others + [producer]) == producer:
            continue
        last = _last(others)
        users = [_top(u.owner.operation, block) for res in producer.results for u in res.uses]
        if all(u is not None and last.is_before_in_block(u) for u in users):
            producer.move_after(last)


def _owner_op(value: ir.Value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _write_in_place(fn) -> None:
    pairs = _pairs(fn)
    block = fn.regions[0].blocks[0]
    ret = block.operations[len(block.operations) - 1]
    _sink_below_old_readers(block, pairs, list(ret.operands))
    values = list(ret.operands)
    written = {r for r, _ in pairs}
    with ir.InsertionPoint(ret), ret.location:
        for r, j in pairs:
            new = values[r]
            if any(new == v for i, v in enumerate(values) if i not in written):
                # Also returned as a result of its own (canonicalization made two results one
                # value: x.t().relu_() returned beside its transpose back, fuzz seed 29 program
                # 289): the op writes the result's buffer and a copy goes into the argument;
                # written into the argument and returned, it failed to bufferize.
                new = bufferization.AllocTensorOp(new.type, [], copy=new).result
            bufferization.MaterializeInDestinationOp(new.type, new, block.arguments[j])
            _writable(fn, j)
    kept = [_old_value(block, v, {j for _, j in pairs}) for i, v in enumerate(values) if i not in written]
    with ir.InsertionPoint(ret), ret.location:
        func.ReturnOp(kept)
    ret.erase()
    inputs = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [v.type for v in kept]))
    del fn.attributes[WRITTEN_INPUTS]
    # Bufferization drops the arguments' WRITABLE: this says which ones the code writes after it.
    fn.attributes[WRITTEN_ARGUMENTS] = ir.DenseI64ArrayAttr.get(sorted({j for _, j in pairs}))


def write_inputs_in_place(module: ir.Module, options=None) -> int:
    """Every function's WRITTEN_INPUTS results materialized in their arguments (module
    docstring); returns how many functions had some."""
    functions = [fn for fn in defined_functions(module) if WRITTEN_INPUTS in fn.attributes]
    with module.context:
        for fn in functions:
            _write_in_place(fn)
    if functions:
        run_pipeline(module, "eliminate-empty-tensors", "buffers", options)
    return len(functions)
