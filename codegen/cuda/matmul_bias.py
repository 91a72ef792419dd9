"""A matmul's bias add run by cuBLASLt's epilogue: one `torch.addmm` call instead of a GEMM and
a kernel.

A linear layer reaches the gpu stage as a library linalg.matmul writing a fresh buffer C (its
zero fill folded: OVERWRITE), then a linalg.generic adding a bias row to C. That generic is a
pass over M x N elements of its own: on an H200, GPT-2 small's and BERT-base's bias adds took
2-3 ms of a 50 ms sweep (benchmarks/profile_scale.py). torch.addmm(bias, a, b, out=d) with a
contiguous 1-D bias runs the add in the GEMM's epilogue (cuBLASLt's BIAS epilogue, which
F.linear uses in eager), so C is never written.

Folded when: the matmul is 2-D, overwrites C, and C (a fresh allocation) is read only by the
generic, whose body adds the bias to C's element, the bias a contiguous 1-D buffer indexed by
the column, the output a contiguous buffer of C's shape; the output no operand's buffer; and
nothing between the two ops writes the matmul's operands or the bias (the call runs where the
add was). The body is one of:
- `arith.addf` of C's element and the bias's, all of one element type;
- an autocast linear (AMP): half operands, C float32 (the dialect's half matmul sums in float32),
  the bias rounded to the half type, widened and added, the sum rounded to the half output. That
  is what cuBLASLt's epilogue computes for a half addmm (float32 sums plus the half bias, rounded
  once), and what eager's F.linear runs under autocast: the call takes the bias as the half type
  (torch converts a float32 bias when it runs) and writes the half output, so C, twice the
  output's bytes, is neither written nor read back. A half matmul with K or N not a multiple of
  8 is left to library.py's padded path (cuBLAS's unaligned half kernels are 3-5x slower).
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


def _producer_in_body(value: ir.Value, name: str, block: ir.Block):
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != name or owner.operation.block != block:
        return None
    return owner.operation


def _bias_sum(block: ir.Block, c_arg: ir.Value, out_type: ir.Type) -> ir.Value | None:
    """The block argument the body adds to c_arg: the body yields c + bias (one type), or, with
    a half output, truncf(c + extf(bias as the half type)), the bias a half argument or
    truncf of a float32 one; else None."""
    ops = [o.operation for o in block.operations]
    if len(ops[-1].operands) != 1:
        return None
    chain, value, half = [], ops[-1].operands[0], out_type != c_arg.type
    if half:
        trunc = _producer_in_body(value, "arith.truncf", block)
        if trunc is None:
            return None
        chain.append(trunc)
        value = trunc.operands[0]
    add = _producer_in_body(value, "arith.addf", block)
    if add is None or c_arg not in list(add.operands):
        return None
    chain.append(add)
    bias = add.operands[1] if add.operands[0] == c_arg else add.operands[0]
    if half:
        ext = _producer_in_body(bias, "arith.extf", block)
        if ext is None or ext.operands[0].type != out_type:
            return None
        chain.append(ext)
        bias = ext.operands[0]
        rounded = _producer_in_body(bias, "arith.truncf", block)
        if rounded is not None:
            chain.append(rounded)
            bias = rounded.operands[0]
    if not isinstance(bias.owner, ir.Block) or len(ops) != len(chain) + 1:
        return None
    return bias


def _adds_row(generic, c: ir.Value) -> ir.Value | None:
    """The bias buffer if `generic` is out = c + bias[column] (either operand order; see the
    module docstring for the half form), else None."""
    if op_name(generic) != "linalg.generic" or len(generic.opview.inputs) != 2 or len(generic.opview.outputs) != 1:
        return None
    inputs = list(generic.opview.inputs)
    if c not in inputs or inputs[0] == inputs[1]:
        return None
    at = inputs.index(c)
    identity = ir.AffineMap.get_identity(2)
    column = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)])
    maps = _maps(generic)
    if maps[at] != identity or maps[1 - at] != column or maps[2] != identity:
        return None
    block = generic.regions[0].blocks[0]
    bias = _bias_sum(block, block.arguments[at], block.arguments[2].type)
    return inputs[1 - at] if bias is not None and bias == block.arguments[1 - at] else None


def adds_bias_to_matmul(generic) -> bool:
    """Whether `generic` adds a bias row to a linalg.matmul's result as fold_bias_into_matmuls
    folds it (on tensors or buffers): a pass that changes the generic first would lose the fold."""
    for c in list(generic.operands)[:2]:  # (C is one of its two inputs)
        owner = c.owner
        if not isinstance(owner, ir.Block) and owner.operation.name == "linalg.matmul" \
                and _adds_row(generic, c) is not None:
            return True
    return False


def _aligned_half(types: list[ir.MemRefType]) -> bool:
    """Operands and output of one half type, the bias of it or float32 (rounded to it in the body),
    C float32, K and N static multiples of 8."""
    a, b, c, bias, d = types
    half = a.element_type
    if not isinstance(half, (ir.BF16Type, ir.F16Type)) or not isinstance(c.element_type, ir.F32Type):
        return False
    if b.element_type != half or d.element_type != half or bias.element_type not in (half, c.element_type):
        return False
    return all(n != ir.ShapedType.get_dynamic_size() and n % 8 == 0 for n in (a.shape[1], b.shape[1]))


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
    one_type = len({str(t.element_type) for t in types}) == 1
    if not (one_type or _aligned_half(types)) or types[3].rank != 1 or types[4].shape != types[2].shape:
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


def _call_location(matmul, generic) -> ir.Location:
    """The matmul's and the add's graph nodes, with those of the add's body (elementwise fusion
    left the bias's cast and the rounding there, under the consumer's location on the op)."""
    body = [op.location for op in generic.regions[0].blocks[0].operations if op.operation.name != "linalg.yield"]
    return ir.Location.fused([matmul.location, generic.location, *body])


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
        location = _call_location(matmul, generic)
        with ir.InsertionPoint(generic), location:
            call_on_buffers(func_op, ADDMM, [a, b, bias, generic.opview.outputs[0]])
        frees = [use.owner for use in c.uses if use.owner.name == "memref.dealloc"]
        for op in (generic, matmul, *frees):
            op.erase()
        c.owner.erase()
    return len(found)
