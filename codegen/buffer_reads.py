"""Buffers read through `bufferization.to_buffer`: each one taken right before the op reading it.

Library calls (torch's convolution on cpu, index_put/scatter/attention on cuda) are emitted before
bufferization as `to_buffer(tensor)` feeding a call on memrefs. One-shot bufferization sees the
tensor's last use at the `to_buffer` and nothing of the memref's uses after it: from there on,
the tensor's buffer is free to be written in place by a later op. So a memref read by an op
that is not the very next one can hold other data by the time it is read. CSE makes exactly
that: two identical `to_buffer`s of one tensor (an index feeding two index_puts, an activation
feeding two convolutions) become one, taken before the first call and read again by the second,
after ops that reused the buffer (the bilinear-interpolate backward on cuda: its second index_put
read another index's values, a wrong gradient, or out-of-range indices and a device assert).

`take_buffers_at_use` restores the contract the emitters meant: every `to_buffer` has one use,
and it is the op right after it (other `to_buffer`s of the same op aside). Nothing can write
the buffer in between, since no op sits in between.
"""

from __future__ import annotations

from torch_mlir import ir

TO_BUFFER = "bufferization.to_buffer"


def take_buffers_at_use(module: ir.Module) -> int:
    """Give every use of a `to_buffer` result its own `to_buffer`, made right before the user.
    Returns how many were moved or cloned."""
    found: list[ir.Operation] = []

    def collect(op):
        if op.name == TO_BUFFER:
            found.append(op.operation if isinstance(op, ir.OpView) else op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    changed = 0
    for op in found:
        changed += _split(op)
    return changed


def _split(op: ir.Operation) -> int:
    uses = [(use.owner, use.operand_number) for use in op.results[0].uses]
    if len(uses) == 1 and _next_op_reading(op) == _as_operation(uses[0][0]):
        return 0
    for owner, number in uses:
        owner = _as_operation(owner)
        copy = op.clone(ip=ir.InsertionPoint(owner))
        owner.operands[number] = copy.results[0]
    op.erase()
    return len(uses)


def _next_op_reading(op: ir.Operation) -> ir.Operation | None:
    """The first op after `op` in its block that is not itself a `to_buffer` (the call those
    feed, when several operands are taken one after the other)."""
    after = False
    for other in op.block.operations:
        other = _as_operation(other)
        if other == op:
            after = True
        elif after and other.name != TO_BUFFER:
            return other
    return None


def _as_operation(op) -> ir.Operation:
    return op.operation if isinstance(op, ir.OpView) else op
