"""One copy of a broadcast per consumer, so that elementwise fusion can fold each into its loop.

A scalar in an elementwise formula (GPT-2's gelu_new: 0.5, 0.044715, sqrt(2/pi), 1.0) reaches
linalg as a `linalg.generic` broadcasting a 0-d constant to the full shape, and CSE makes every
layer's copy of it one value. linalg-fuse-elementwise-ops fuses a producer into its consumer
only when the producer has that one use, so a shared broadcast is left alone: bufferization
then writes the full-size constant tensor (2x64x512 floats per scalar in GPT-2) and every
consumer's loop reads it back. Cloned per use before fusion, each copy is fused into its
consumer and becomes a scalar operand in the loop body: no buffer, no loads.

Only pure broadcasts are cloned (one input of lower rank, a body that yields it): each clone
costs nothing once fused, and at worst (a consumer that is not fusable, a matmul accumulator)
as much as the copy bufferization would have made of a shared value written in place.
"""

from __future__ import annotations

from torch_mlir import ir

from .library import ops_named

_PARALLEL = "#linalg.iterator_type<parallel>"


def _is_broadcast(op: ir.Operation) -> bool:
    """A linalg.generic whose one input, of fewer dims than its output, is yielded as is."""
    if len(op.operands) != 2 or len(op.results) != 1:
        return False
    if any(str(it) != _PARALLEL for it in op.attributes["iterator_types"]):
        return False
    maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
    if len(maps[0].results) >= len(maps[1].results):
        return False
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    return (len(ops) == 1 and ops[0].operation.name == "linalg.yield"
            and ops[0].operation.operands[0] == body.arguments[0])


def clone_shared_broadcasts(module: ir.Module) -> int:
    """Give every use of a shared pure broadcast but the first its own copy, made right before
    the user. Returns how many copies were made."""
    made = 0
    for op in ops_named(module, ("linalg.generic",)):
        if not _is_broadcast(op):
            continue
        for use in list(op.results[0].uses)[1:]:
            user, index = use.owner, use.operand_number
            user = user.operation if isinstance(user, ir.OpView) else user
            copy = op.clone(ip=ir.InsertionPoint(user))
            user.operands[index] = copy.results[0]
            made += 1
    return made
