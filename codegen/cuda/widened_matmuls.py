"""cuda-widened-matmuls-on-half: a float32 matmul of two widened half tensors, on the half ones.

`dynamo.matmul(cast(a), cast(b)) -> f32`, where a and b are bf16 (or both f16) widened by
`dynamo.cast` (and then maybe reshaped, permuted, broadcast or sliced: those are replayed on
the half tensor), becomes `dynamo.matmul(a, b) -> f32`: half operands with a float32 result, the
float32 sums unrounded (dialects/matmul.py). cuBLAS then runs its half tensor-core kernels with
float32 output instead of float32 kernels on CUDA cores, and the result is the same numbers up
to the order of the sums: a product of two half values is exact in float32 (and in TF32, so
torch's allow_tf32 changes nothing here), and both accumulate in float32.

Where such matmuls come from: the scores and the probabilities' gradient of a half-precision
training graph's attention (frontend/half_attention.py), and user code that calls .float() on
half tensors before a matmul. The widening casts are erased where nothing else reads them.
"""

from __future__ import annotations

from torch_mlir import ir

from ..walk import ops_where

_HALF = (ir.BF16Type, ir.F16Type)
# Ops that only move or repeat elements: between the widening cast and the matmul (a 4-d matmul
# reaches us as a bmm of reshaped, broadcast operands) they may as well move the half values.
LAYOUT = ("dynamo.reshape", "dynamo.permute", "dynamo.broadcast", "dynamo.slice")


def _producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if not isinstance(owner, ir.Operation) and hasattr(owner, "operation"):
        owner = owner.operation
    return owner if isinstance(owner, ir.Operation) else None


def _widening_chain(value: ir.Value) -> list[ir.Operation] | None:
    """[cast, layout ops...]: the ops from a dynamo.cast of a half tensor to `value`, through
    layout ops only; None where `value` is no such widened half tensor."""
    chain = []
    op = _producer(value)
    while op is not None and op.name in LAYOUT:
        chain.append(op)
        op = _producer(op.operands[0])
    if op is None or op.name != "dynamo.cast":
        return None
    if not isinstance(ir.RankedTensorType(op.operands[0].type).element_type, _HALF):
        return None
    return [op] + chain[::-1]


def _half_of(chain: list[ir.Operation], before: ir.Operation) -> ir.Value:
    """The chain's layout ops replayed on the half tensor (at `before`): the value the matmul
    reads instead of the widened one."""
    value = chain[0].operands[0]
    elem = ir.RankedTensorType(value.type).element_type
    with ir.InsertionPoint(before), before.location:
        for op in chain[1:]:
            t = ir.RankedTensorType(op.results[0].type)
            value = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(t.shape, elem, t.encoding)],
                                        operands=[value, *list(op.operands)[1:]],
                                        attributes={name: op.attributes[name] for name in op.attributes}).result
    return value


def _candidate(op: ir.Operation) -> bool:
    if op.name != "dynamo.matmul" or not isinstance(ir.RankedTensorType(op.results[0].type).element_type, ir.F32Type):
        return False
    chains = [_widening_chain(v) for v in op.operands]
    return all(c is not None for c in chains) and \
        chains[0][0].operands[0].type.element_type == chains[1][0].operands[0].type.element_type


def _erase_unused(chain: list[ir.Operation]) -> None:
    for op in reversed(chain):
        if list(op.results[0].uses):
            return
        op.erase()


def widened_matmuls_on_half(module: ir.Module) -> int:
    """Every such matmul reading the half tensors (module docstring); returns how many."""
    found = ops_where(module, _candidate)
    for op in found:
        chains = [_widening_chain(v) for v in op.operands]
        for i, chain in enumerate(chains):
            op.operands[i] = _half_of(chain, op)
        for chain in chains:
            _erase_unused(chain)
    return len(found)
