"""What surrounds a BLAS matmul (library.py) on the cpu target: its accumulator C.

A linear layer arrives as `matmul(x, W) outs(fill 0)` followed by an elementwise
`add(that, broadcast(bias))` (addmm's decomposition). Run as written, C is written three times
and read twice: the zero fill, the gemm (beta = 0), then a loop re-reading C and the bias to
write a second buffer. `fold_bias` makes the broadcast bias the matmul's accumulator instead:
the gemm then runs with beta = 1 on C preset to the bias (as eager's addmm does), and the add
loop is gone.

`unshare_zero_fills`: CSE makes every matmul of one shape accumulate into the same zero-filled
tensor; bufferization then fills one buffer and copies it before each matmul (the gemm writes
C in place), and call_blas no longer sees a fill right before the matmul, so it keeps beta = 1.
One fill per matmul, made just before it, removes the copies and lets the gemm run with
beta = 0 (it only writes C).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, tensor

from .library import NAMED, ops_named, previous_op


def _owner(value: ir.Value):
    owner = value.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _is_zero_fill(value: ir.Value) -> bool:
    owner = _owner(value)
    if getattr(owner, "name", None) != "linalg.fill":
        return False
    constant = _owner(owner.operands[0])
    if getattr(constant, "name", None) != "arith.constant":
        return False
    attr = constant.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def _identity_add(op: ir.Operation) -> bool:
    """A linalg.generic computing in0 + in1 elementwise: all parallel, every operand read and
    written through the same permutation map (so out[i] = in0[i] + in1[i])."""
    if op.name != "linalg.generic" or len(op.operands) != 3 or len(op.results) != 1:
        return False
    maps = [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]]
    if not all(m.is_permutation and list(m.results) == list(maps[0].results) for m in maps):
        return False
    if any(str(it) != "#linalg.iterator_type<parallel>" for it in op.attributes["iterator_types"]):
        return False
    body = op.regions[0].blocks[0]
    ops = list(body.operations)
    if len(ops) != 2 or ops[0].operation.name != "arith.addf" or ops[1].operation.name != "linalg.yield":
        return False
    add, args = ops[0].operation, list(body.arguments)
    return ({add.operands[0], add.operands[1]} == {args[0], args[1]} and add.operands[0] != add.operands[1]
            and ops[1].operation.operands[0] == add.results[0])


def _single_use(value: ir.Value) -> ir.Operation | None:
    uses = list(value.uses)
    return uses[0].owner if len(uses) == 1 else None


def fold_bias(module: ir.Module) -> int:
    """matmul(a, b) outs(fill 0) + c  ->  matmul(a, b) outs(c), for every such pair (c: the
    other operand of the add, of the matmul's type). Returns how many were folded."""
    folded = 0
    for op in ops_named(module, NAMED):
        out = op.opview.outputs[0]
        if not _is_zero_fill(out):
            continue
        user = _single_use(op.results[0])
        if user is None or not _identity_add(user) or user.results[0].type != op.results[0].type:
            continue
        a, b = user.operands[0], user.operands[1]
        bias = b if a == op.results[0] else a
        if bias == op.results[0] or not (_dominates(bias, op) or _hoist(bias, op)):
            continue
        op.operands[len(op.operands) - 1] = bias
        user.results[0].replace_all_uses_with(op.results[0])
        user.erase()
        folded += 1
    return folded


def _dominates(value: ir.Value, op: ir.Operation) -> bool:
    """The bias is defined before the matmul in the same block (or is a block argument): the
    matmul may use it. The add follows both, so this holds for the decomposition's order; a
    bias computed between the matmul and the add is left alone."""
    owner = _owner(value)
    if not isinstance(owner, ir.Operation):
        return True
    if owner.block != op.block:
        return False
    for other in op.block.operations:
        if other.operation == owner:
            return True
        if other.operation == op:
            return False
    return False


# Ops on values only (no side effects): moving one earlier changes nothing but where its value is
# made. Anything else (a call on buffers: library_conv.py) stays where it is.
_MOVABLE = frozenset({"tensor.empty", "linalg.generic", "linalg.broadcast", "linalg.fill", "tensor.reshape",
                      "tensor.expand_shape", "tensor.collapse_shape", "arith.constant"})


def _hoist(value: ir.Value, op: ir.Operation) -> bool:
    """Move value's defining op (the bias broadcast, made after the matmul) right before `op`,
    when it is in op's block and everything it uses, its body's outer values included, is
    defined before `op` or can be moved there too. Returns whether it moved."""
    owner = _owner(value)
    if not isinstance(owner, ir.Operation) or owner.name not in _MOVABLE or owner.block != op.block:
        return False
    outer = []

    def collect(inner):
        outer.extend(v for v in inner.operands if not _defined_inside(v, owner))
        return ir.WalkResult.ADVANCE

    owner.walk(collect)
    if not all(_dominates(v, op) or _hoist(v, op) for v in outer):  # its tensor.empty, made after too
        return False
    owner.move_before(op)
    return True


def _defined_inside(value: ir.Value, root: ir.Operation) -> bool:
    """Whether `value` is a block argument or a result of an op nested in `root`."""
    owner = value.owner.owner if isinstance(value.owner, ir.Block) else value.owner
    while owner is not None:
        owner = owner.operation if isinstance(owner, ir.OpView) else owner
        if owner == root:
            return True
        owner = owner.parent
    return False


def unshare_zero_fills(module: ir.Module) -> None:
    """Each named matmul accumulating into a zero fill that has other uses, or is not made right
    before it, gets its own fill of a fresh tensor.empty, made right before it (see the module
    docstring); a fill left without uses is erased."""
    for op in ops_named(module, NAMED):
        out = op.opview.outputs[0]
        if not _is_zero_fill(out) or (len(list(out.uses)) == 1 and previous_op(op) == _owner(out)):
            continue
        fill = _owner(out)
        with ir.InsertionPoint(op), op.location:
            t = ir.RankedTensorType(out.type)
            # A dynamic size is the shared fill's, read off it.
            sizes = [tensor.dim(out, arith.constant(ir.IndexType.get(), d)) if n == ir.ShapedType.get_dynamic_size()
                     else n for d, n in enumerate(t.shape)]
            empty = tensor.empty(sizes, t.element_type)
            own = linalg.fill(fill.operands[0], outs=[empty])
        op.operands[len(op.operands) - 1] = own
        if not list(fill.results[0].uses):  # the last matmul sharing it has its own now
            fill.erase()
