"""A library call's operand as a buffer: `bufferization.to_buffer`, one per read, never shared.

Library calls (torch's convolution on cpu, index_put/scatter/attention on cuda) are emitted
before bufferization as `to_buffer(tensor)` feeding a call on memrefs (or pointers taken from
them). One-shot bufferization sees the tensor's last use at the `to_buffer` and nothing of the
memref's uses after it: from there on, the tensor's buffer is free to be written in place by a
later op. That is right only if the memref is read before any later op runs. CSE breaks it:
`to_buffer` is pure, so two reads of one tensor (an activation feeding a block's main path and
its projection shortcut, an index feeding two index_puts) became one, taken before the first
call, together with every pure op derived from it (strided metadata, pointers), and the second
call read memory bufferization had meanwhile given to another value (ResNet-50 on cpu: the
shortcut convolution read its block's input after the main path's relu was written over it;
the bilinear-interpolate backward on cuda: its index_puts read another index's values, wrong
gradients, or out-of-range indices and a device assert).

`read_only_buffer` tags each read with its number among its function's reads
(`dynamo_mlir.read = k`): reads that differ in an attribute are not CSE'd, so each call's read
stays where its call is. The number counts the function's reads, not the tensor's: two tensors
CSE merges later (two broadcasts of one index) would otherwise bring two reads numbered 0.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import bufferization

from .attributes import READ

TO_BUFFER = "bufferization.to_buffer"


def read_only_buffer(memref_type: ir.Type, value: ir.Value, user) -> ir.Value:
    """A read-only buffer of tensor `value` for one library call, made at the current insertion
    point (right before the ops that read it), distinct from every other read in the function
    holding `user` (the op the call replaces)."""
    number = _reads_in(_function_of(user))
    read = bufferization.ToBufferOp(memref_type, value, read_only=True)
    read.attributes[READ] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), number)
    return read.result


def _function_of(op) -> ir.Operation:
    op = op.operation if isinstance(op, ir.OpView) else op
    while op.name != "func.func":
        op = op.parent
    return op.operation if isinstance(op, ir.OpView) else op


def _reads_in(function: ir.Operation) -> int:
    count = [0]

    def visit(op):
        if op.name == TO_BUFFER and READ in op.attributes:
            count[0] += 1
        return ir.WalkResult.ADVANCE

    function.walk(visit)
    return count[0]
