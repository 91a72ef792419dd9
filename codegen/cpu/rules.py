"""CPU-specific lowering rules (they win over the generic ones for target "cpu").

matmul: the generic rule emits linalg.matmul, whose loops run i, j, k: the innermost loop walks
B down a column (stride N) and reduces into one scalar, which LLVM does not vectorize. Here the
loop order is i, k, j: the innermost loop streams a row of B into a row of C, contiguous and
independent across j, so LLVM's loop vectorizer turns it into SIMD FMAs.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith

from ...dialects import dynamo as dy
from ...lowering import register_lowering
from ...lowering.rules.common import PARALLEL, REDUCTION, affine_map, generic, matmul_init, ranked
from ...lowering.scalar import const, is_float


@register_lowering(dy.MatmulOp, target="cpu")
def lower_matmul_ikj(op):
    out = ranked(op.out)
    elem = out.element_type
    acc = matmul_init(op, const(elem, 0))
    add, mul = (arith.addf, arith.mulf) if is_float(elem) else (arith.addi, arith.muli)
    if out.rank == 2:  # loops (i, k, j)
        maps = [affine_map(3, [0, 1]), affine_map(3, [1, 2]), affine_map(3, [0, 2])]
        iterators = [PARALLEL, REDUCTION, PARALLEL]
    else:  # loops (b, i, k, j)
        maps = [affine_map(4, [0, 1, 2]), affine_map(4, [0, 2, 3]), affine_map(4, [0, 1, 3])]
        iterators = [PARALLEL, PARALLEL, REDUCTION, PARALLEL]
    return generic([op.lhs, op.rhs], [acc], maps, iterators, lambda a, b, c: [add(c, mul(a, b))])[0]
