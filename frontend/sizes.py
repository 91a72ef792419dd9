"""Symbolic sizes (torch's sympy expressions over SymInt symbols), made concrete two ways:

- `SizeBuilder` emits them as MLIR `index` arithmetic inside a region, from symbol values the
  region has (a dim of an input tensor, read with `dynamo.dim`, or a SymInt function argument);
- `python_evaluator` compiles them once into a plain Python lambda, so the runtime computes the
  output shapes of a dynamic region per call with a few integer operations (no sympy per call).

Both walk the expression with one table per target, keyed by the sympy class; a class missing
from the table raises Unsupported, so an unknown size never silently becomes a wrong one.
"""

import sympy
import torch
from torch.utils._sympy import functions as symfn
from torch_mlir import ir
from torch_mlir.dialects import arith

from ..dialects import sizes as dsz
from .registry import Unsupported

# sympy class -> Python operator text, applied left to right over the arguments. Sizes are
# non-negative, so Python's floor division and remainder agree with torch's (and with C's).
_PY_OPS = {
    sympy.Add: "+", sympy.Mul: "*", symfn.FloorDiv: "//", symfn.Mod: "%", symfn.PythonMod: "%",
    sympy.Mod: "%", symfn.CleanDiv: "//", symfn.Identity: "+",  # Identity has one argument
}
_PY_CALLS = {sympy.Max: "max", sympy.Min: "min", symfn.Max: "max", symfn.Min: "min"}

# sympy class -> arith builder on index values, folded left to right.
_MLIR_OPS = {
    sympy.Add: arith.addi, sympy.Mul: arith.muli, symfn.FloorDiv: arith.floordivsi,
    symfn.Mod: arith.remsi, symfn.PythonMod: arith.remsi, sympy.Mod: arith.remsi,
    symfn.CleanDiv: arith.divsi, sympy.Max: arith.maxsi, sympy.Min: arith.minsi,
    symfn.Max: arith.maxsi, symfn.Min: arith.minsi, symfn.Identity: arith.addi,
}


def expr_of(size) -> sympy.Expr | int:
    """The sympy expression of a SymInt; a sympy expression stays one, an int stays an int."""
    if isinstance(size, torch.SymInt):
        return size.node.expr
    return size if isinstance(size, sympy.Basic) else int(size)


def _table_entry(table: dict, expr):
    for cls in type(expr).__mro__:
        if cls in table:
            return table[cls]
    return None


def _pow_exponent(expr) -> int:
    if not (isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) >= 1):
        raise Unsupported(f"size expression {expr} is not supported")
    return int(expr.exp)


def python_source(expr, names: dict) -> str:
    """Python text computing `expr`; symbols become the names in `names`."""
    if isinstance(expr, int) or getattr(expr, "is_Integer", False):
        return str(int(expr))
    if isinstance(expr, sympy.Symbol):
        return names[expr]
    args = [python_source(a, names) for a in expr.args]
    if op := _table_entry(_PY_OPS, expr):
        return "(" + f" {op} ".join(args) + ")"
    if call := _table_entry(_PY_CALLS, expr):
        return f"{call}({', '.join(args)})"
    exponent = _pow_exponent(expr)  # anything else (a float size like trunc(2.3 * s0)): Unsupported
    return f"({args[0]} ** {exponent})"


def python_evaluator(symbols: list, exprs_per_output: list[list]):
    """One lambda from the symbols' values to every output's shape (a list of tuples)."""
    names = {s: f"s{i}" for i, s in enumerate(symbols)}
    shapes = ["(" + "".join(python_source(e, names) + ", " for e in exprs) + ")" for exprs in exprs_per_output]
    source = f"lambda {', '.join(names.values())}: [{', '.join(shapes)}]"
    return eval(source, {"max": max, "min": min}), source  # noqa: S307  (text built from our table)


class SizeBuilder:
    """Index values for symbolic sizes in the function being imported.

    Symbols are bound to where their values live (`bind_tensor`, `bind_value`); a size
    expression is built once per function from them and cached, so repeated reshapes to the
    same size share one value. `missing` (optional) makes a value for an unbound symbol: the
    partitioner's dry run uses it to stand in for the argument the real region will get."""

    def __init__(self, missing=None):
        self._tensor_dims: dict = {}  # symbol -> (tensor value, dim)
        self._values: dict = {}  # expression -> index value
        self._missing = missing

    def bind_tensor(self, value: ir.Value, shape) -> None:
        for d, size in enumerate(shape):
            expr = expr_of(size)
            if isinstance(expr, sympy.Symbol):
                self._tensor_dims.setdefault(expr, (value, d))

    def bind_value(self, expr, value: ir.Value) -> None:
        self._values.setdefault(expr, value)

    def index(self, size) -> ir.Value:
        expr = expr_of(size)
        if isinstance(expr, int) or expr.is_Integer:
            return arith.constant(ir.IndexType.get(), int(expr))
        if expr not in self._values:
            self._values[expr] = self._build(expr)
        return self._values[expr]

    def _build(self, expr) -> ir.Value:
        if isinstance(expr, sympy.Symbol):
            return self._symbol(expr)
        if op := _table_entry(_MLIR_OPS, expr):
            values = [self.index(a) for a in expr.args]
            result = values[0]
            for v in values[1:]:
                result = op(result, v)
            return result
        base = self.index(expr.base)
        result = base
        for _ in range(_pow_exponent(expr) - 1):
            result = arith.muli(result, base)
        return result

    def _symbol(self, symbol) -> ir.Value:
        if symbol in self._tensor_dims:
            value, dim = self._tensor_dims[symbol]
            return dsz.DimOp(value, dsz.dim_attr(dim), out=ir.IndexType.get()).out
        if self._missing is None:
            raise Unsupported(f"size symbol {symbol} is carried by no input of the region")
        return self._missing(symbol)


def _settled(size):
    """A size as an int where it is a number (an int, or a SymInt whose expression is one)."""
    return int(size) if isinstance(size, int) or size.node.expr.is_number else size


def _is_zero(size) -> bool:
    """An int 0 (a SymInt is not compared: comparing it would add a guard)."""
    return type(size) is int and size == 0


def specialize_settled_sizes(gm: torch.fx.GraphModule) -> int:
    """Tensor inputs whose SymInt sizes Dynamo settled to a number after they were made (a
    reshape to [5, 1, 7] guards the input's `s0` to 7) get plain int sizes; returns how many.

    Ops traced after the guard already have ints, the placeholders made before it keep SymInts:
    imported as `?` while what they feed is static, the two did not meet (`tensor<?x1xf32>`
    where `tensor<7x1xf32>` was expected: the whole region ran eagerly)."""
    changed = 0
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op != "placeholder" or not isinstance(val, torch._subclasses.fake_tensor.FakeTensor) \
                or not _is_zero(_settled(val.storage_offset())):
            continue  # (a fresh value of a view would lose where in its base it is)
        shape, stride = [_settled(s) for s in val.shape], [_settled(s) for s in val.stride()]
        if all(a is b for a, b in zip((*shape, *stride), (*val.shape, *val.stride()))):
            continue
        with val.fake_mode:
            settled = torch.empty_strided(shape, stride, dtype=val.dtype, device=val.device)
        node.meta["val"] = settled.requires_grad_() if val.requires_grad else settled
        changed += 1
    return changed
