"""Sizes the host schedule knows only at run time, as small expressions over its buffers.

A kernel over buffers with symbolic sizes (codegen/gpu/tiled.py) is launched on a grid computed
from those sizes, and takes them as `index` arguments (codegen/gpu/kernel_abi.py). The host
function computes them with memref.dim, memref.extract_strided_metadata and index arithmetic;
the host schedule reads that arithmetic once into expressions (plain data: they are stored in the
compile cache with the rest of the schedule) and evaluates them on every call from the tensors in
its slots. What is known at compile time folds to an int as it is read.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable, Union

from torch_mlir import ir


@dataclass(frozen=True)
class Dim:
    """Size `dim` of the tensor in `slot` (an argument of the host function)."""

    slot: int
    dim: int

    def __str__(self):
        return f"dim(%{self.slot}, {self.dim})"

    __repr__ = __str__


@dataclass(frozen=True)
class Arg:
    """The `index` argument in `slot` (a size no input tensor carries, passed as an int)."""

    slot: int

    def __str__(self):
        return f"%{self.slot}"

    __repr__ = __str__


@dataclass(frozen=True)
class Apply:
    """An index op (its MLIR name; arith.cmpi with its predicate) on expressions."""

    op: str
    operands: tuple

    def __str__(self):
        return f"{self.op.split('.')[-1]}({', '.join(map(str, self.operands))})"

    __repr__ = __str__


Expr = Union[int, float, Dim, Arg, Apply]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


_CMP = {"eq": operator.eq, "ne": operator.ne, "slt": operator.lt, "sle": operator.le, "sgt": operator.gt,
        "sge": operator.ge, "ult": operator.lt, "ule": operator.le, "ugt": operator.gt, "uge": operator.ge}

# MLIR index op -> what it computes on Python ints (index values here are sizes, never negative
# where the unsigned forms are used).
APPLY = {
    "arith.addi": operator.add, "arith.subi": operator.sub, "arith.muli": operator.mul,
    "arith.divsi": _trunc_div, "arith.divui": operator.floordiv, "arith.floordivsi": operator.floordiv,
    "arith.ceildivsi": _ceil_div, "arith.ceildivui": _ceil_div,
    "arith.remsi": lambda a, b: a - b * _trunc_div(a, b), "arith.remui": operator.mod,
    "arith.minsi": min, "arith.maxsi": max, "arith.minui": min, "arith.maxui": max,
    "arith.select": lambda c, a, b: a if c else b, "arith.index_cast": lambda a: a,
    "arith.index_castui": lambda a: a,
    **{f"arith.cmpi.{name}": fn for name, fn in _CMP.items()},
    # A size made a float (a mean's count over a dim of symbolic length), stored into a buffer.
    "arith.sitofp": float, "arith.uitofp": float,
}
_FLOAT_RESULTS = ("arith.sitofp", "arith.uitofp")


def _result(op: str, value):
    return float(value) if op in _FLOAT_RESULTS else int(value)


def apply(op: str, operands) -> Expr:
    """`op` on `operands`, folded to an int when they all are."""
    if op not in APPLY:
        raise KeyError(op)
    if all(isinstance(x, (int, float)) for x in operands):
        return _result(op, APPLY[op](*operands))
    identity = _IDENTITIES.get(op)
    if identity is not None and len(operands) == 2 and identity in operands:  # x * 1, x + 0
        return operands[1] if operands[0] == identity else operands[0]
    return Apply(op, tuple(operands))


_IDENTITIES = {"arith.muli": 1, "arith.addi": 0}


def product(values) -> Expr:
    out: Expr = 1
    for v in values:
        out = apply("arith.muli", (out, v))
    return out


def evaluate(expr: Expr, bufs) -> int:
    """The value of `expr` for the tensors in `bufs` (slot -> tensor)."""
    if isinstance(expr, (int, float)):
        return expr
    if isinstance(expr, Dim):
        return bufs[expr.slot].shape[expr.dim]
    if isinstance(expr, Arg):
        return int(bufs[expr.slot])
    return _result(expr.op, APPLY[expr.op](*(evaluate(x, bufs) for x in expr.operands)))


def evaluator(exprs) -> Callable[[list], tuple]:
    """One function computing all of `exprs` for a call's tensors: `evaluate`'s values, each
    shared subexpression computed once. A launch evaluates some twenty sizes per call (its
    arguments and its grid); walking each expression's tree every call cost more host time than
    the kernel launch itself. The function is Python source generated from the expressions, so
    the per-call cost is that of the arithmetic."""
    names: dict = {}
    lines: list[str] = []
    env = {f"_op{i}": fn for i, fn in enumerate(APPLY.values())}
    op_names = {op: f"_op{i}" for i, op in enumerate(APPLY)}

    def name_of(expr) -> str:
        if isinstance(expr, (int, float)):
            return repr(expr)
        if expr not in names:
            if isinstance(expr, Dim):
                code = f"b[{expr.slot}].shape[{expr.dim}]"
            elif isinstance(expr, Arg):
                code = f"int(b[{expr.slot}])"
            else:
                args = ", ".join(name_of(x) for x in expr.operands)
                cast = "float" if expr.op in _FLOAT_RESULTS else "int"
                code = f"{cast}({op_names[expr.op]}({args}))"
            names[expr] = f"v{len(names)}"
            lines.append(f"    {names[expr]} = {code}")
        return names[expr]

    results = [name_of(x) for x in exprs]
    source = "def sizes(b):\n" + "\n".join(lines) + f"\n    return ({''.join(r + ', ' for r in results)})\n"
    exec(compile(source, "<host sizes>", "exec"), env)
    return env["sizes"]


def is_static(*exprs) -> bool:
    return all(isinstance(x, int) for x in exprs)


def is_expression(value) -> bool:
    """Whether `value` (a launch's scalar argument, a size) is known only per call."""
    return isinstance(value, (Dim, Arg, Apply))


def affine_apply(expr, dims: list, symbols: list) -> Expr:
    """An affine expression (affine.apply's map result) on expressions of its dims and symbols."""
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    for kind, op in ((ir.AffineAddExpr, "arith.addi"), (ir.AffineMulExpr, "arith.muli"),
                     (ir.AffineModExpr, "arith.remui"), (ir.AffineFloorDivExpr, "arith.floordivsi"),
                     (ir.AffineCeilDivExpr, "arith.ceildivsi")):
        if isinstance(expr, kind):
            return apply(op, (affine_apply(expr.lhs, dims, symbols), affine_apply(expr.rhs, dims, symbols)))
    raise KeyError(f"affine expression {expr}")

