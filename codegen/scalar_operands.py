"""A linalg.generic input that is one scalar packed into a tensor, read as that scalar.

A mean over a dim of symbolic length divides by the dim's size made a float: `dynamo.numel`
lowers to `tensor.from_elements %n : tensor<f32>`, which the generics read through a broadcast
indexing map. Bufferized, that is a one-element buffer on the device which the host fills on
every call (an allocation and a fill kernel before the kernels that read it). Read as the scalar
itself, the value is captured by the loop body, and GPU outlining passes it to the kernel as an
argument the host computes from the call's sizes. The inputs left unread are erased by
linalg-fuse-elementwise-ops (its erase-unused-operands patterns), which the pass list runs next.
"""

from __future__ import annotations

from torch_mlir import ir

from .walk import ops_where


def _scalar_source(value: ir.Value) -> ir.Value | None:
    """The scalar a one-element `tensor.from_elements` packs, else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "tensor.from_elements":
        return None
    operands = list(owner.operation.operands)
    return operands[0] if len(operands) == 1 else None


def read_scalars_directly(module: ir.Module) -> int:
    """In every linalg.generic, the block argument of a broadcast input packed by a one-element
    from_elements replaced by the packed scalar. Returns how many inputs were rewritten."""
    count = 0
    for op in ops_where(module, lambda o: o.operation.name == "linalg.generic"):
        generic = op.opview
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        args = list(op.regions[0].blocks[0].arguments)
        for i, value in enumerate(generic.inputs):
            scalar = _scalar_source(value)
            broadcast = all(isinstance(e, ir.AffineConstantExpr) for e in maps[i].results)
            if scalar is not None and broadcast and list(args[i].uses):
                args[i].replace_all_uses_with(scalar)
                count += 1
    return count
