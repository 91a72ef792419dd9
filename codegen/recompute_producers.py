"""Cheap elementwise producers recomputed in each of their consumers, on tensors, before fusion.

Upstream elementwise fusion (linalg-fuse-elementwise-ops) fuses a producer only into its single
user, so a value read by several ops is written to memory and read back by each. For a GPU's
memory-bound kernels that is the cost: a float32 log-softmax of bfloat16 logits (the loss of an
AMP language model, 4096 x 50257) wrote the widened logits and the shifted ones, two float32
copies of the whole matrix, for its max, its sum of exponentials and its result to read back.
Here such a producer is cloned for each consumer that is a linalg.generic (one more use is left
to the original), so the upstream pass fuses one copy into each: the consumers read the
producer's inputs, the bfloat16 logits, instead of its result.

Only producers where recomputing reads no more memory than reading the result: all-parallel
linalg.generic ops with one result, whose full-size inputs (those not broadcast) are together no
wider per element than the result, and whose body is integer or float arithmetic (no
transcendental function evaluated again per consumer).
"""

from __future__ import annotations

from torch_mlir import ir

from .walk import ops_where

_PARALLEL = "#linalg.iterator_type<parallel>"


def _width(t: ir.Type) -> int:
    """Bytes per element of a tensor type (an i1 counts as one)."""
    element = ir.ShapedType(t).element_type
    if isinstance(element, ir.IntegerType):
        return max(1, ir.IntegerType(element).width // 8)
    return ir.FloatType(element).width // 8 if isinstance(element, ir.FloatType) else 8


def _cheap_body(op) -> bool:
    body = op.regions[0].blocks[0]
    return all(o.operation.name.startswith("arith.") or o.operation.name in ("linalg.yield", "linalg.index")
               for o in body.operations)


def _full_size_input_bytes(op) -> int:
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    loops = maps[-1].n_dims
    inputs = list(op.operands)[:len(maps) - 1]
    return sum(_width(v.type) for v, m in zip(inputs, maps) if len(m.results) == loops and m.is_permutation)


def _recomputable(op) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(str(t) != _PARALLEL for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    result = op.results[0]
    if not isinstance(result.type, ir.RankedTensorType) or len(list(result.uses)) < 2:
        return False
    return _cheap_body(op) and _full_size_input_bytes(op) <= _width(result.type)


def _generic_input_uses(value: ir.Value) -> list[tuple[ir.Operation, int]]:
    """(user, operand index) of each use of value as an input of a linalg.generic."""
    uses = []
    for use in value.uses:
        user = use.owner
        if user.name == "linalg.generic":
            n_inputs = len(user.operands) - len(user.results)
            if use.operand_number < n_inputs:
                uses.append((user, use.operand_number))
    return uses


def recompute_cheap_producers(module: ir.Module) -> int:
    """Clone each recomputable producer for its linalg.generic consumers (module docstring);
    returns how many clones were made. Consumers are visited before producers, so a producer
    whose clones read another recomputable one makes that one's uses grow first."""
    clones = 0
    for op in reversed(ops_where(module, _recomputable)):
        result = op.results[0]
        uses = _generic_input_uses(result)
        keep_one = len(uses) == len(list(result.uses))  # every use can take a clone: the original keeps one
        for user, index in uses[1:] if keep_one else uses:
            copy = op.clone(ip=ir.InsertionPoint(user))
            user.operands[index] = copy.results[0]
            clones += 1
    return clones
