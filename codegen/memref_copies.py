"""`memref.copy` between strided memrefs lowers to a call of `memrefCopy` from MLIR's runner-utils
library, which the torch-mlir wheel does not ship. Rewriting those copies as `linalg.copy` lets
them become plain loops like everything else (identity-layout copies stay: they become memcpy)."""

from torch_mlir import ir
from torch_mlir.dialects import linalg


def is_identity_layout(t: ir.Type) -> bool:
    """Whether memref type t is laid out row-major with no offset (its layout map the identity)."""
    layout = ir.MemRefType(t).layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(layout.value.n_dims)


def copies_to_linalg(module: ir.Module) -> ir.Module:
    copies = []

    def visit(op):
        if op.name == "memref.copy":
            copies.append(op.opview)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        src, dst = op.operands[0], op.operands[1]
        if is_identity_layout(src.type) and is_identity_layout(dst.type):
            continue
        with ir.InsertionPoint(op), op.location:
            linalg.copy(src, outs=[dst])
        op.erase()
    return module


def erase_self_copies(module: ir.Module) -> int:
    """Every memref.copy of a buffer onto itself erased (one-shot bufferization leaves one for an
    insert_slice whose source was computed in place: codegen/padded_producers.py; this MLIR's
    canonicalizer keeps them). Returns how many."""
    copies = []

    def visit(op):
        if op.name == "memref.copy" and op.operands[0] == op.operands[1]:
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        op.erase()
    return len(copies)
