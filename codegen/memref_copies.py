"""`memref.copy` between strided memrefs lowers to a call of `memrefCopy` from MLIR's runner-utils
library, which the torch-mlir wheel does not ship. Rewriting those copies as `linalg.copy` lets
them become plain loops like everything else (identity-layout copies stay: they become memcpy)."""

from torch_mlir import ir
from torch_mlir.dialects import linalg


def _is_identity(t: ir.Type) -> bool:
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
        if _is_identity(src.type) and _is_identity(dst.type):
            continue
        with ir.InsertionPoint(op), op.location:
            linalg.copy(src, outs=[dst])
        op.erase()
    return module
