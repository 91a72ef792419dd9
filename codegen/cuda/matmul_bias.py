"""A matmul's bias add run by cuBLASLt's epilogue: one `torch.addmm` call instead of a GEMM and
a kernel.

A linear layer reaches the gpu stage as a library linalg.matmul writing a fresh buffer C (its
zero fill folded: OVERWRITE), then a linalg.generic adding a bias row to C. That generic is a
pass over M x N elements of its own: on an H200, GPT-2 small's and BERT-base's bias adds took
2-3 ms of a 50 ms sweep (benchmarks/profile_scale.py). torch.addmm(bias, a, b, out=d) with a
contiguous 1-D bias runs the add in the GEMM's epilogue (cuBLASLt's BIAS epilogue, which
F.linear uses in eager), so C is never written.

Folded when: the matmul is 2-D, overwrites C, and C (a fresh allocation) is read only by the
generic, whose body is one `arith.addf` of C's element and the bias's, the bias a contiguous
1-D buffer indexed by the column, the output a contiguous buffer of C's shape; all of one
element type (a half matmul accumulates into float32: cuBLAS's mixed kernels take no bias);
the output no operand's buffer; and nothing between the two ops writes the matmul's operands or
the bias (the call runs where the add was).
"""

from __future__ import annotations

from torch_mlir import ir

from ..attributes import OVERWRITE
from ..memref_copies import is_identity_layout
from .library_calls import ADDMM, call_on_buffers
from ..gpu.loopnest import op_name, root_of
from .host_ops import host_ops, written_between


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in op.opview.indexing_maps]


def _adds_row(generic, c: ir.Value) -> ir.Value | None:
    """The bias buffer if `generic` is out = c + bias[column] (either operand order), else None."""
    if op_name(generic) != "linalg.generic" or len(generic.opview.inputs) != 2 or len(generic.opview.outputs) != 1:
        return None
    inputs = list(generic.opview.inputs)
    if c not in inputs or inputs[0] == inputs[1]:
        return None
    at = inputs.index(c)
    bias = inputs[1 - at]
    identity = ir.AffineMap.get_identity(2)
    column = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    maps = _maps(generic)
    if maps[at] != identity or maps[1 - at] != column or maps[2] != identity:
        return None
    block = generic.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    if len(ops) != 2 or ops[0].name != "arith.addf" or ops[1].operands[0] != ops[0].results[0]:
        return None
    if set(ops[0].operands) != {block.arguments[0], block.arguments[1]}:
        return None
    return bias


def _foldable(matmul, generic) -> ir.Value | None:
    """The bias when `generic` (the next op touching the matmul's output) folds into it."""
    a, b = matmul.opview.inputs
    c = matmul.opview.outputs[0]
    if OVERWRITE not in matmul.attributes or op_name(c) != "memref.alloc":
        return None
    bias = _adds_row(generic, c)
    if bias is None:
        return None
    d = generic.opview.outputs[0]
    types = [ir.MemRefType(v.type) for v in (a, b, c, bias, d)]
    if len({str(t.element_type) for t in types}) != 1 or types[3].rank != 1 or types[4].shape != types[2].shape:
        return None
    if not (is_identity_layout(bias.type) and is_identity_layout(d.type)):
        return None
    if root_of(d) in {root_of(v) for v in (a, b, bias)}:
        return None
    if any(u.name != "memref.dealloc" and u != matmul and u != generic for u in (use.owner for use in c.uses)):
        return None
    if any(written_between(root_of(v), matmul, generic) for v in (a, b, bias)):
        return None
    return bias


def fold_bias_into_matmuls(func_op) -> int:
    """Every foldable matmul + bias add of `func_op` -> one torch.addmm call. Returns how many."""
    ops = host_ops(func_op)
    found = []  # (matmul, generic, bias), found first: a rewrite erases ops later in `ops`
    for j, matmul in enumerate(ops):
        if matmul.name != "linalg.matmul":
            continue
        c = matmul.opview.outputs[0]
        generic = next((o for o in ops[j + 1:] if any(v == c for v in o.operands)), None)
        bias = _foldable(matmul, generic) if generic is not None else None
        if bias is not None:
            found.append((matmul, generic, bias))
    for matmul, generic, bias in found:
        c = matmul.opview.outputs[0]
        a, b = matmul.opview.inputs
        location = ir.Location.fused([matmul.location, generic.location])
        with ir.InsertionPoint(generic), location:
            call_on_buffers(func_op, ADDMM, [a, b, bias, generic.opview.outputs[0]])
        frees = [use.owner for use in c.uses if use.owner.name == "memref.dealloc"]
        for op in (generic, matmul, *frees):
            op.erase()
        c.owner.erase()
    return len(found)
