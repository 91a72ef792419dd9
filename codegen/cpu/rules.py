"""CPU-specific lowering rules (they win over the generic ones for target "cpu").

matmul: with library_matmul, a matmul MKL can take (library.blas_can_take) is the generic rule's
named linalg.matmul / batch_matmul, which the loops stage turns into an sgemm_/dgemm_ call
(library.call_blas). Otherwise: the generic rule emits linalg.matmul, whose loops run i, j, k: the innermost loop walks
B down a column (stride N) and reduces into one scalar, which LLVM does not vectorize. Here the
loop order is i, k, j: the innermost loop streams a row of B into a row of C, contiguous and
independent across j, so LLVM's loop vectorizer turns it into SIMD FMAs.

A float matmul over a long K is also blocked: each element of C is one running sum over K
products, and like a long reduction (lowering/rules/reduction.py) that loses accuracy as K grows
(a weight gradient sums over the whole batch: 16384 samples gave 10x eager's error). So K is cut
into chunks of MATMUL_K_BLOCK: an scf.for over the chunks computes each chunk's product into a
zeroed tile (i, k, j as above) and adds the tile to C.

expm1: one math.expm1, which the loops stage's fast_math step (fastmath.py) expands: a float32
polynomial with fast_math on, else Kahan's formula on libm's exp and log (the generic body). It
never reaches convert-math-to-llvm, whose exp(x) - 1 loses every digit of a small x.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, math, tensor

from ...dialects import dynamo as dy
from ...lowering import register_lowering, registry
from ...lowering.loops import for_range
from ...lowering.rules.common import (PARALLEL, REDUCTION, affine_map, elementwise, empty, generic, identity,
                                      matmul_init, ranked, slice_dim)
from ...lowering.scalar import const, index, is_float
from . import library

MATMUL_K_BLOCK = 128  # the most products one running sum of C adds up before the chunk's tile is added


@register_lowering(dy.MatmulOp, target="cpu")
def lower_matmul_ikj(ctx, op):
    if ctx.target_option("library_matmul") and library.blas_can_take(op):  # the loops stage calls MKL
        return registry.lookup("dynamo.matmul", None)(ctx, op)  # the generic rule: a named linalg.matmul
    elem, k = ranked(op.out).element_type, ranked(op.lhs).shape[-1]
    zero = matmul_init(op, const(elem, 0))
    if not is_float(elem) or (k != ir.ShapedType.get_dynamic_size() and k <= MATMUL_K_BLOCK):
        return _ikj(op.lhs, op.rhs, zero)
    return _k_blocked(op.lhs, op.rhs, zero)


def _ikj(lhs, rhs, acc) -> ir.Value:
    """acc + lhs @ rhs as one generic with loops (i, k, j), or (b, i, k, j) when batched."""
    add, mul = (arith.addf, arith.mulf) if is_float(ranked(acc).element_type) else (arith.addi, arith.muli)
    if ranked(acc).rank == 2:
        maps = [affine_map(3, [0, 1]), affine_map(3, [1, 2]), affine_map(3, [0, 2])]
        iterators = [PARALLEL, REDUCTION, PARALLEL]
    else:
        maps = [affine_map(4, [0, 1, 2]), affine_map(4, [0, 2, 3]), affine_map(4, [0, 1, 3])]
        iterators = [PARALLEL, PARALLEL, REDUCTION, PARALLEL]
    return generic([lhs, rhs], [acc], maps, iterators, lambda a, b, c: [add(c, mul(a, b))])[0]


def _k_blocked(lhs, rhs, zero) -> ir.Value:
    """lhs @ rhs as the sum of its K chunks' products: whole chunks in an scf.for, the rest last.
    The loop carries the tile too, so that one buffer serves every chunk."""
    k_dim = ranked(lhs).rank - 1
    k = ranked(lhs).shape[k_dim]
    if k == ir.ShapedType.get_dynamic_size():
        k = tensor.dim(lhs, index(k_dim))
        whole = arith.muli(arith.divui(k, index(MATMUL_K_BLOCK)), index(MATMUL_K_BLOCK))
        rest = arith.subi(k, whole)
    else:
        whole, rest = k - k % MATMUL_K_BLOCK, k % MATMUL_K_BLOCK
    total, tile = for_range(0, whole, [zero, empty(ranked(zero), zero)], step=MATMUL_K_BLOCK,
                            body=lambda k0, total, tile: _add_chunk(lhs, rhs, total, tile, k0, MATMUL_K_BLOCK))
    if isinstance(rest, int) and rest == 0:
        return total
    # The last chunk's add reads the total as an input, not as its init: linalg's elementwise
    # fusion would fuse an add that reads its init into a consumer that broadcasts the sum (a
    # second matmul: C @ B2 reads C[b, i] for every j), keeping the add's result as an output
    # indexed without j; bufferized in place, that output then took the tile once per j (C @ B2
    # came out with C doubled, and more, for a dynamic K below MATMUL_K_BLOCK).
    tile = _chunk_product(lhs, rhs, tile, index(whole), rest)
    return elementwise([total, tile], ranked(total), arith.addf)


def _add_chunk(lhs, rhs, total, tile, start, size) -> list[ir.Value]:
    """[total + lhs[.., start:start+size] @ rhs[.., start:start+size, :], the tile it used],
    added in place into the total (in the loop: it carries the total in one buffer)."""
    tile = _chunk_product(lhs, rhs, tile, start, size)
    t = ranked(total)
    total = generic([tile], [total], [identity(t.rank)] * 2, [PARALLEL] * t.rank, lambda p, c: [arith.addf(c, p)])[0]
    return [total, tile]


def _chunk_product(lhs, rhs, tile, start, size) -> ir.Value:
    """lhs[.., start:start+size] @ rhs[.., start:start+size, :], summed in `tile` zeroed first."""
    k_dim = ranked(lhs).rank - 1
    a, b = slice_dim(lhs, k_dim, start, size), slice_dim(rhs, k_dim - 1, start, size)
    return _ikj(a, b, linalg.fill(const(ranked(tile).element_type, 0), outs=[tile]))


@register_lowering(dy.Expm1Op, target="cpu")
def lower_expm1(ctx, op):
    return elementwise([op.x], ranked(op.out), math.expm1)
