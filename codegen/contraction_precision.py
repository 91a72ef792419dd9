"""Contractions of half operands on targets that compute them in float32.

A `dynamo.matmul` / `dynamo.conv2d` on bf16 or f16 operands accumulates in float32 and rounds
once, at the store, to its half result (dialects/matmul.py): what cuBLAS, cuDNN and every
tensor-core kernel do, so the cuda target hands such ops to its libraries as they are. A target
whose libraries have no fast half kernels (the cpu target's MKL sgemm, its float32 loops) runs
`contractions_in_float32` first instead: each half contraction becomes one on float32 copies of
its operands, and

- a reader that widens the result back to float32 (`dynamo.cast` to f32: a bias add, the next
  op of a float32 chain) reads the float32 result itself, so the chain rounds once, where it is
  stored, as before the importer left contractions in their operands' type;
- any other reader reads the result rounded to the half type, as the op's semantics say.
"""

from __future__ import annotations

from torch_mlir import ir

from ..dialects import dynamo as dy
from .walk import ops_where

CONTRACTIONS = ("dynamo.matmul", "dynamo.conv2d")


def _is_half(t: ir.Type) -> bool:
    return isinstance(t, (ir.BF16Type, ir.F16Type))


def _with_element(t: ir.Type, elem: ir.Type) -> ir.RankedTensorType:
    r = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(r.shape, elem, r.encoding)


def _widened(op) -> None:
    f32 = ir.F32Type.get()
    result = op.results[0]
    with ir.InsertionPoint(op), op.location:
        operands = [dy.CastOp(v, out=_with_element(v.type, f32)).out for v in op.operands]
        wide = ir.Operation.create(op.name, results=[_with_element(result.type, f32)], operands=operands,
                                   attributes={name: op.attributes[name] for name in op.attributes}).result
        if ir.RankedTensorType(result.type).element_type == f32:  # a float32 result: the sums unrounded
            result.replace_all_uses_with(wide)
            op.erase()
            return
        rounded = dy.CastOp(wide, out=result.type).out
    for use in list(result.uses):
        reader = use.owner
        if reader.name == "dynamo.cast" and ir.RankedTensorType(reader.results[0].type).element_type == f32:
            reader.results[0].replace_all_uses_with(wide)
    result.replace_all_uses_with(rounded)
    for use in list(rounded.uses):
        reader = use.owner
        if reader.name == "dynamo.cast" and not list(reader.results[0].uses):
            reader.erase()
    op.erase()
    if not list(rounded.uses):
        rounded.owner.erase()


def contractions_in_float32(module: ir.Module) -> int:
    """Every matmul / conv2d on half operands computed on float32 copies of them (module
    docstring); returns how many were rewritten."""
    found = ops_where(module, lambda op: op.name in CONTRACTIONS
                      and _is_half(ir.RankedTensorType(op.operands[0].type).element_type))
    for op in found:
        _widened(op)
    return len(found)
