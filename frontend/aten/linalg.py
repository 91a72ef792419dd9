"""Dense linear algebra on the factorization kernels (dialects/linalg_factor.py): LU with partial
pivoting, Cholesky and triangular solves, and what composes from them with existing ops:
P/L/U unpacking, LU solves, det/slogdet, inverse and general solves.

Everything runs in float64 (float32 inputs are widened and the results rounded once), so the
compiled result is at least as close to the exact one as LAPACK's float32 result; the pivots are
LAPACK's (largest |value|, first on ties). Half types stay eager. Leading dims are broadcast,
then flattened into one batch dim for the kernels.

Not matched: for a singular matrix, inverse/solve results (eager's hold whatever LAPACK's
triangular solves make of a zero pivot); for a matrix that is not positive definite, the
Cholesky factor (eager returns LAPACK's partial factorization; `info` does match). The
non-`_ex` forms check `info` through a with_effects(_linalg_check_errors) node, which stays
eager (a compiled graph cannot raise), so linalg.cholesky/inv/solve/tensorinv/tensorsolve
compile all but that check.
"""

import functools
import math

import torch
from torch.utils._python_dispatch import _disable_current_modes

from ...dialects import dynamo as dy
from ..importer import DYN, fake_value
from ..registry import Unsupported, import_rule
from .args import bind
from .builders import compare, emit_like, gather_along, i64, iota, permute, reduce, select, slice_box

aten = torch.ops.aten
F64 = torch.float64


def _float(ctx, x) -> torch.dtype:
    """x's dtype, which must be float32/float64 with a static shape."""
    dtype = ctx.dtype_of(x)
    if dtype not in (torch.float32, torch.float64):
        raise Unsupported(f"{dtype}: the factorizations compile for float32/float64 only")
    if any(s == DYN for s in ctx.shape_of(x)):
        raise Unsupported("linear algebra with a dynamic dim")
    return dtype


# ----------------------------------------------------------------------------- shape helpers


def _flat(ctx, x, batch=None):
    """[..., r, c] (broadcast to `batch` leading dims first) as [B, r, c]."""
    shape = ctx.shape_of(x)
    batch = list(shape[:-2]) if batch is None else list(batch)
    x = ctx.broadcast(x, batch + shape[-2:])
    return ctx.reshape(x, [math.prod(batch)] + shape[-2:])


def _back(ctx, v, batch, dtype=None):
    """[B, ...] as batch + [...], cast to dtype."""
    v = ctx.reshape(v, list(batch) + ctx.shape_of(v)[1:])
    return ctx.cast(v, dtype) if dtype is not None else v


def _t(ctx, x):
    """Swap the last two dims of a rank-3 tensor."""
    return permute(ctx, x, [0, 2, 1])


def _corner(ctx, x, sizes):
    """The leading `sizes` block of x (a top-left submatrix of each batch)."""
    return slice_box(ctx, x, [0] * len(sizes), sizes)


def _positions(ctx, shape):
    """(row, col) index tensors (i64) of a [B, r, c] shape."""
    return iota(ctx, list(shape), 1), iota(ctx, list(shape), 2)


def _where_index(ctx, x, pred: str, other):
    """x where (col `pred` row) holds, else `other` (a number): triangles and diagonals."""
    rows, cols = _positions(ctx, ctx.shape_of(x))
    return select(ctx, compare(ctx, cols, rows, pred), x, ctx.full(other, ctx.shape_of(x), ctx.dtype_of(x)))


def _eye(ctx, b, n, dtype=F64):
    rows, cols = _positions(ctx, [b, n, n])
    return ctx.cast(compare(ctx, rows, cols, "eq"), dtype)


# ----------------------------------------------------------------------------- kernels


def lu_factor(ctx, a3):
    """(LU, pivots i32, info i32) of [B, m, n] float64."""
    b, m, n = ctx.shape_of(a3)
    i32 = lambda shape: ctx.type_like(a3, torch.int32, shape=shape)
    op = dy.LuFactorOp(a3, lu=ctx.type_like(a3), pivots=i32([b, min(m, n)]), info=i32([b]))
    return op.lu, op.pivots, op.info


def permutation(ctx, pivots, size):
    """(perm, inverse) i64 [B, size] of pivots [B, k]."""
    b = ctx.shape_of(pivots)[0]
    t = ctx.type_like(pivots, torch.int64, shape=[b, size])
    op = dy.LuPermutationOp(ctx.cast(pivots, torch.int32), i64(size), perm=t, inverse=t)
    return op.perm, op.inverse


def _rows(ctx, x3, order):
    """Row i of the result is row order[i] of x3 ([B, m, k], order [B, m])."""
    b, m, k = ctx.shape_of(x3)
    index = ctx.broadcast(ctx.reshape(order, [b, m, 1]), [b, m, k])
    return gather_along(ctx, x3, index, 1)


def tri_solve(ctx, a3, b3, upper: bool, unit: bool):
    return dy.TriangularSolveOp(a3, b3, i64(upper), i64(unit), out=ctx.type_like(b3)).out


def lu_solve(ctx, lu3, pivots, b3, adjoint: bool):
    """X with A X = B (A^T X = B when adjoint) for P^T A = L U given as (lu3, pivots)."""
    perm, inverse = permutation(ctx, pivots, ctx.shape_of(lu3)[1])
    if not adjoint:  # L U X = P^T B
        y = tri_solve(ctx, lu3, _rows(ctx, b3, perm), upper=False, unit=True)
        return tri_solve(ctx, lu3, y, upper=True, unit=False)
    lut = _t(ctx, lu3)  # U^T L^T (P^T X) = B
    y = tri_solve(ctx, lut, b3, upper=False, unit=False)
    return _rows(ctx, tri_solve(ctx, lut, y, upper=True, unit=True), inverse)


def _factor(ctx, a):
    """(dtype, batch, LU, pivots, info) of a [..., m, n] tensor, the factors flat ([B, ...])."""
    dtype = _float(ctx, a)
    batch = ctx.shape_of(a)[:-2]
    return (dtype, batch, *lu_factor(ctx, _flat(ctx, ctx.cast(a, F64))))


# ----------------------------------------------------------------------------- LU and unpacking


@import_rule(aten.linalg_lu_factor_ex.default)
def _lu_factor_ex(ctx, node):
    arg = bind(node)
    if not arg.pivot:
        raise Unsupported("LU without pivoting")
    dtype, batch, lu, piv, info = _factor(ctx, ctx.tensor(arg.A))
    return _back(ctx, lu, batch, dtype), _back(ctx, piv, batch), _back(ctx, info, batch)


def _unpack(ctx, lu3, piv, batch, dtype):
    """(P, L, U) with A = P L U."""
    b, m, n = ctx.shape_of(lu3)
    k = min(m, n)
    perm, _ = permutation(ctx, piv, m)
    rows, _ = _positions(ctx, [b, m, m])
    p = ctx.cast(compare(ctx, rows, ctx.broadcast(ctx.reshape(perm, [b, 1, m]), [b, m, m]), "eq"), dtype)
    lower = _where_index(ctx, _corner(ctx, lu3, [b, m, k]), "lt", 0.0)
    lower = _where_index(ctx, lower, "ne", 1.0)
    upper = _where_index(ctx, _corner(ctx, lu3, [b, k, n]), "ge", 0.0)
    return tuple(_back(ctx, v, batch, dtype) for v in (p, lower, upper))


@import_rule(aten.linalg_lu.default)
def _linalg_lu(ctx, node):
    arg = bind(node)
    if not arg.pivot:
        raise Unsupported("LU without pivoting")
    dtype, batch, lu, piv, _ = _factor(ctx, ctx.tensor(arg.A))
    return _unpack(ctx, lu, piv, batch, dtype)


@import_rule(aten.lu_unpack.default)
def _lu_unpack(ctx, node):
    arg = bind(node)
    if not (arg.unpack_data and arg.unpack_pivots):
        raise Unsupported("lu_unpack without data or pivots (empty outputs)")
    lu, piv = ctx.tensor(arg.LU_data), ctx.tensor(arg.LU_pivots)
    dtype = _float(ctx, lu)
    batch = ctx.shape_of(lu)[:-2]
    if ctx.shape_of(piv)[:-1] != batch:
        raise Unsupported("lu_unpack with broadcast pivots")
    piv = ctx.reshape(piv, [math.prod(batch), ctx.shape_of(piv)[-1]])
    return _unpack(ctx, _flat(ctx, ctx.cast(lu, F64)), piv, batch, dtype)


@import_rule(aten.linalg_lu_solve.default)
def _linalg_lu_solve(ctx, node):
    arg = bind(node)
    lu, piv, rhs = ctx.tensor(arg.LU), ctx.tensor(arg.pivots), ctx.tensor(arg.B)
    left, adjoint = bool(arg.left), bool(arg.adjoint)
    dtype = _float(ctx, lu)
    _float(ctx, rhs)
    batch = list(torch.broadcast_shapes(tuple(ctx.shape_of(lu)[:-2]), tuple(ctx.shape_of(rhs)[:-2])))
    lu3 = _flat(ctx, ctx.cast(lu, F64), batch)
    piv2 = ctx.reshape(ctx.broadcast(piv, batch + ctx.shape_of(piv)[-1:]), [math.prod(batch), ctx.shape_of(piv)[-1]])
    b3 = _flat(ctx, ctx.cast(rhs, F64), batch)
    if left:
        return _back(ctx, lu_solve(ctx, lu3, piv2, b3, adjoint), batch, dtype)
    # X A = B  <=>  A^T X^T = B^T
    return _back(ctx, _t(ctx, lu_solve(ctx, lu3, piv2, _t(ctx, b3), not adjoint)), batch, dtype)


# ----------------------------------------------------------------------------- det, slogdet


def _diagonal(ctx, lu3):
    """[B, n] diagonal of a square [B, n, n] (a select then a sum of exact zeros)."""
    return reduce(ctx, _where_index(ctx, lu3, "eq", 0.0), "sum", [2], False)


def _pivot_sign(ctx, piv):
    """+-1.0 [B]: the parity of the row swaps pivots [B, n] describe."""
    b, n = ctx.shape_of(piv)
    step = iota(ctx, [b, n], 1)
    one_based = emit_like(ctx, "add", step, ctx.full(1, [b, n], torch.int64))
    moved = compare(ctx, ctx.cast(piv, torch.int64), one_based, "ne")
    flips = select(ctx, moved, ctx.full(-1.0, [b, n], F64), ctx.full(1.0, [b, n], F64))
    return reduce(ctx, flips, "prod", [1], False)


def _square(ctx, node, transposed: bool = False):
    """_factor of node's square matrix argument, or of its transpose."""
    a = ctx.tensor(bind(node).A)
    shape = ctx.shape_of(a)
    if shape[-1] != shape[-2]:
        raise Unsupported("not a square matrix")
    if transposed:
        a = permute(ctx, a, list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2])
    return _factor(ctx, a)


# Ops whose LU factors are outputs (for their backward), and the factors' place among them.
_LU_OUTPUT = {aten._linalg_det.default: 1, aten._linalg_slogdet.default: 2, aten._linalg_solve_ex.default: 1}


@functools.cache
def _eager_factors_transpose(op) -> bool:
    """Whether eager's `op` returns the LU factors of A^T for a contiguous real A, sparing LAPACK
    a copy into column-major order (torch 2.13 does so for det and slogdet, det(A^T) = det(A),
    not for solve). Its backward, traced by AOTAutograd from the same fake tensors, then solves
    with them as A^T's. Asked once, of a matrix whose two factorizations differ."""
    with _disable_current_modes():
        a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64)
        lu = op(*([a, a] if op is aten._linalg_solve_ex.default else [a]))[_LU_OUTPUT[op]]
        return torch.equal(lu, torch.linalg.lu_factor(a.mT).LU)


def _factors_transpose(node) -> bool:
    """Whether node's LU output must be that of A^T (see _eager_factors_transpose): factors of A
    where eager's are A^T's made det's backward give the cofactor matrix transposed."""
    return _eager_factors_transpose(node.target) and fake_value(bind(node).A).is_contiguous()


def _det_factor(ctx, node):
    """_square for _linalg_det/_linalg_slogdet: the factors eager returns."""
    return _square(ctx, node, transposed=_factors_transpose(node))


@import_rule(aten._linalg_det.default)
def _det(ctx, node):
    dtype, batch, lu, piv, _ = _det_factor(ctx, node)
    det = emit_like(ctx, "mul", reduce(ctx, _diagonal(ctx, lu), "prod", [1], False), _pivot_sign(ctx, piv))
    return ctx.cast(ctx.reshape(det, batch), dtype), _back(ctx, lu, batch, dtype), _back(ctx, piv, batch)


@import_rule(aten._linalg_slogdet.default)
def _slogdet(ctx, node):
    dtype, batch, lu, piv, _ = _det_factor(ctx, node)
    diag = _diagonal(ctx, lu)
    f = lambda name, x: emit_like(ctx, name, x)  # noqa: E731
    sign = emit_like(ctx, "mul", reduce(ctx, f("sign", diag), "prod", [1], False), _pivot_sign(ctx, piv))
    logabs = reduce(ctx, f("log", f("abs", diag)), "sum", [1], False)
    return (ctx.cast(ctx.reshape(sign, batch), dtype), ctx.cast(ctx.reshape(logabs, batch), dtype),
            _back(ctx, lu, batch, dtype), _back(ctx, piv, batch))


# ----------------------------------------------------------------------------- inverse, solve


@import_rule(aten.linalg_inv_ex.default)
def _inv_ex(ctx, node):
    dtype, batch, lu, piv, info = _square(ctx, node)
    b, n, _ = ctx.shape_of(lu)
    return _back(ctx, lu_solve(ctx, lu, piv, _eye(ctx, b, n), False), batch, dtype), _back(ctx, info, batch)


@import_rule(aten._linalg_solve_ex.default)
def _solve_ex(ctx, node):
    arg = bind(node)
    a, rhs = ctx.tensor(arg.A), ctx.tensor(arg.B)
    left = bool(arg.left)
    if _factors_transpose(node):
        raise Unsupported("this torch's _linalg_solve_ex returns the factors of A^T")
    dtype, a_batch, lu, piv, info = _square(ctx, node)
    _float(ctx, rhs)
    a_shape, b_shape = ctx.shape_of(a), ctx.shape_of(rhs)
    vector = len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape == a_shape[:-1])
    if vector and not left:
        raise Unsupported("solve with a vector right-hand side and left=False")
    rhs = ctx.cast(rhs, F64)
    if vector:
        rhs = ctx.reshape(rhs, b_shape + [1])
    batch = list(torch.broadcast_shapes(tuple(a_batch), tuple(ctx.shape_of(rhs)[:-2])))
    n = a_shape[-1]
    lu_b = _flat(ctx, ctx.reshape(lu, list(a_batch) + [n, n]), batch)
    piv_b = ctx.reshape(ctx.broadcast(ctx.reshape(piv, list(a_batch) + [n]), batch + [n]), [math.prod(batch), n])
    b3 = _flat(ctx, rhs, batch)
    x = lu_solve(ctx, lu_b, piv_b, b3, False) if left else _t(ctx, lu_solve(ctx, lu_b, piv_b, _t(ctx, b3), True))
    x = _back(ctx, x, batch, dtype)
    if vector:
        x = ctx.reshape(x, ctx.shape_of(x)[:-1])
    return x, _back(ctx, lu, a_batch, dtype), _back(ctx, piv, a_batch), _back(ctx, info, a_batch)


# ----------------------------------------------------------------------------- triangular solves


def _tri(ctx, a, rhs, upper: bool, left: bool, unit: bool):
    """linalg.solve_triangular with broadcast batches, computed in float64."""
    dtype = _float(ctx, a)
    _float(ctx, rhs)
    batch = list(torch.broadcast_shapes(tuple(ctx.shape_of(a)[:-2]), tuple(ctx.shape_of(rhs)[:-2])))
    a3, b3 = _flat(ctx, ctx.cast(a, F64), batch), _flat(ctx, ctx.cast(rhs, F64), batch)
    if left:
        return _back(ctx, tri_solve(ctx, a3, b3, upper, unit), batch, dtype)
    x = tri_solve(ctx, _t(ctx, a3), _t(ctx, b3), not upper, unit)  # A^T X^T = B^T
    return _back(ctx, _t(ctx, x), batch, dtype)


@import_rule(aten.linalg_solve_triangular.default)
def _solve_triangular(ctx, node):
    arg = bind(node)
    a, rhs = ctx.tensor(arg.self), ctx.tensor(arg.B)
    return _tri(ctx, a, rhs, bool(arg.upper), bool(arg.left), bool(arg.unitriangular))


@import_rule(aten.triangular_solve.default)
def _triangular_solve(ctx, node):
    arg = bind(node)
    rhs, a = ctx.tensor(arg.self), ctx.tensor(arg.A)
    upper, unit = bool(arg.upper), bool(arg.unitriangular)
    if arg.transpose:  # A^T X = B: the transposed matrix and the other triangle
        rank = len(ctx.shape_of(a))
        a_t = permute(ctx, a, list(range(rank - 2)) + [rank - 1, rank - 2])
        x = _tri(ctx, a_t, rhs, not upper, True, unit)
    else:
        x = _tri(ctx, a, rhs, upper, True, unit)
    return x, a  # cloned_coefficient: A itself


# ----------------------------------------------------------------------------- Cholesky


def cholesky(ctx, a, upper: bool):
    """(factor [B, n, n] float64, info [B] i32, batch, dtype): L, or U = L^T read from A's upper
    triangle (A^T's lower one), as LAPACK's potrf reads only the triangle it is asked for."""
    dtype = _float(ctx, a)
    batch = ctx.shape_of(a)[:-2]
    a3 = _flat(ctx, ctx.cast(a, F64))
    if upper:
        a3 = _t(ctx, a3)
    op = dy.CholeskyOp(a3, l=ctx.type_like(a3), info=ctx.type_like(a3, torch.int32, shape=ctx.shape_of(a3)[:1]))
    factor = _t(ctx, op.l) if upper else op.l
    return factor, op.info, batch, dtype


@import_rule(aten.linalg_cholesky_ex.default)
def _cholesky_ex(ctx, node):
    arg = bind(node)
    factor, info, batch, dtype = cholesky(ctx, ctx.tensor(arg.self), bool(arg.upper))
    return _back(ctx, factor, batch, dtype), _back(ctx, info, batch)


@import_rule(aten.cholesky.default)
def _cholesky(ctx, node):
    arg = bind(node)
    factor, _, batch, dtype = cholesky(ctx, ctx.tensor(arg.self), bool(arg.upper))
    return _back(ctx, factor, batch, dtype)


def _cholesky_solve(ctx, rhs3, factor3, upper: bool):
    """X with A X = B for A = L L^T (factor lower) or U^T U (factor upper)."""
    if upper:
        y = tri_solve(ctx, _t(ctx, factor3), rhs3, upper=False, unit=False)
        return tri_solve(ctx, factor3, y, upper=True, unit=False)
    y = tri_solve(ctx, factor3, rhs3, upper=False, unit=False)
    return tri_solve(ctx, _t(ctx, factor3), y, upper=True, unit=False)


@import_rule(aten.cholesky_solve.default)
def _cholesky_solve_rule(ctx, node):
    arg = bind(node)
    rhs, factor, upper = ctx.tensor(arg.self), ctx.tensor(arg.input2), bool(arg.upper)
    dtype = _float(ctx, factor)
    _float(ctx, rhs)
    batch = list(torch.broadcast_shapes(tuple(ctx.shape_of(factor)[:-2]), tuple(ctx.shape_of(rhs)[:-2])))
    f3, b3 = _flat(ctx, ctx.cast(factor, F64), batch), _flat(ctx, ctx.cast(rhs, F64), batch)
    return _back(ctx, _cholesky_solve(ctx, b3, f3, upper), batch, dtype)


@import_rule(aten.cholesky_inverse.default)
def _cholesky_inverse(ctx, node):
    arg = bind(node)
    factor, upper = ctx.tensor(arg.self), bool(arg.upper)
    dtype = _float(ctx, factor)
    batch = ctx.shape_of(factor)[:-2]
    f3 = _flat(ctx, ctx.cast(factor, F64))
    b, n, _ = ctx.shape_of(f3)
    return _back(ctx, _cholesky_solve(ctx, _eye(ctx, b, n), f3, upper), batch, dtype)
