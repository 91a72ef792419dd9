"""Elementwise ops: made from tables (one verifier fits them all), plus compare/select/cast."""

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, tensor_type, shape_of, elem_of, dims_compatible, is_i1


# ----------------------------------------------------------------------------- elementwise ops

# name -> what it computes. Unary ops map a tensor to one of the same type.
UNARY_OPS = {
    "neg": "-x", "abs": "|x|", "exp": "e^x", "exp2": "2^x", "expm1": "e^x - 1",
    "log": "ln x", "log2": "log2 x", "log1p": "ln(1 + x)", "sqrt": "sqrt x", "rsqrt": "1 / sqrt x",
    "reciprocal": "1 / x", "sin": "sin x", "cos": "cos x", "tan": "tan x", "tanh": "tanh x",
    "atan": "atan x", "asin": "asin x", "acos": "acos x", "sinh": "sinh x", "cosh": "cosh x",
    "asinh": "asinh x", "acosh": "acosh x", "atanh": "atanh x",
    "erf": "erf x", "sigmoid": "1 / (1 + e^-x)", "relu": "max(x, 0)",
    "gelu": "x * Phi(x) (exact erf form)", "gelu_tanh": "gelu, tanh approximation",
    "floor": "floor x", "ceil": "ceil x", "round": "round half to even", "trunc": "round toward 0",
    "sign": "sign x", "not": "logical/bitwise not", "isnan": "x != x (result i1)",
    "isinf": "|x| == inf (result i1)",
}
# Ops whose result element type is i1 whatever the operand's.
PREDICATE_UNARY = {"isnan", "isinf"}

# Binary ops take two operands of one type and give that type.
BINARY_OPS = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b (true division)",
    "floordiv": "floor(a / b)", "truncdiv": "trunc(a / b)",
    "rem": "a - floor(a / b) * b (Python remainder)", "fmod": "C fmod (sign of a)",
    "pow": "a ^ b", "max": "max(a, b), NaN-propagating", "min": "min(a, b), NaN-propagating",
    "fmax": "max(a, b), NaN only if both are", "fmin": "min(a, b), NaN only if both are",
    "and": "a & b", "or": "a | b", "xor": "a ^ b", "atan2": "atan2(a, b)",
    "shl": "a << b", "shr": "a >> b (arithmetic)", "copysign": "|a| with b's sign",
}

COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def _verify_unary(self):
    x, out = tensor_type(self.x), tensor_type(self.out)
    _require(dims_compatible(x.shape, out.shape), f"result shape {out} differs from operand {x}")
    name = self.OPERATION_NAME.split(".", 1)[1]
    if name in PREDICATE_UNARY:
        _require(is_i1(out.element_type), "result must be a tensor of i1")
    else:
        _require(x.element_type == out.element_type, f"result type {out} differs from operand {x}")


def _verify_binary(self):
    a, b, out = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.out)
    _require(a.element_type == b.element_type,
             f"operand element types differ ({a.element_type} vs {b.element_type}); insert dynamo.cast")
    _require(dims_compatible(a.shape, b.shape) and dims_compatible(a.shape, out.shape),
             f"operand shapes differ ({a} vs {b} -> {out}); insert dynamo.broadcast")
    _require(out.element_type == a.element_type, "result element type differs from operands'")


def _class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Op"


def _make_op(name: str, annotations: dict, doc: str, verify) -> type:
    namespace = {"__annotations__": annotations, "__doc__": doc, "__module__": __name__,
                 "verify_invariants": _checked(verify)}
    return type(_class_name(name), (Dynamo.Operation,), namespace, name=name, traits=[Pure])


def _unary_doc(name: str, what: str) -> str:
    return (f"Elementwise {what}.\n\n    Example:\n"
            f'      %y = "dynamo.{name}"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n')


def _binary_doc(name: str, what: str) -> str:
    return (f"Elementwise {what}; operands share shape and element type.\n\n    Example:\n"
            f'      %c = "dynamo.{name}"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n')


def make_unary_ops(table: dict, module: str = __name__) -> dict:
    """{name: op class} for a table of unary elementwise ops (name -> what it computes)."""
    operands = {"x": Operand[ir.RankedTensorType], "out": Result[ir.RankedTensorType]}
    return {name: _in_module(_make_op(name, dict(operands), _unary_doc(name, what), _verify_unary), module)
            for name, what in table.items()}


def make_binary_ops(table: dict, module: str = __name__) -> dict:
    """{name: op class} for a table of binary elementwise ops (name -> what it computes)."""
    operands = {"lhs": Operand[ir.RankedTensorType], "rhs": Operand[ir.RankedTensorType],
                "out": Result[ir.RankedTensorType]}
    return {name: _in_module(_make_op(name, dict(operands), _binary_doc(name, what), _verify_binary), module)
            for name, what in table.items()}


def _in_module(cls: type, module: str) -> type:
    cls.__module__ = module
    return cls


UNARY_CLASSES = make_unary_ops(UNARY_OPS)
BINARY_CLASSES = make_binary_ops(BINARY_OPS)
globals().update({cls.__name__: cls for cls in (*UNARY_CLASSES.values(), *BINARY_CLASSES.values())})


class CompareOp(Dynamo.Operation, name="compare", traits=[Pure]):
    """Elementwise comparison giving i1; `predicate` is one of eq ne lt le gt ge.

    Example:
      %m = "dynamo.compare"(%a, %b) {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    """

    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    predicate: ir.StringAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        a, b, out = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.out)
        _require(ir.StringAttr(self.predicate).value in COMPARE_PREDICATES,
                 f"unknown predicate {self.predicate}; expected one of {COMPARE_PREDICATES}")
        _require(a.element_type == b.element_type, "operand element types differ; insert dynamo.cast")
        _require(dims_compatible(a.shape, b.shape) and dims_compatible(a.shape, out.shape),
                 "operand shapes differ; insert dynamo.broadcast")
        _require(is_i1(out.element_type), "result must be a tensor of i1")


class SelectOp(Dynamo.Operation, name="select", traits=[Pure]):
    """`cond ? a : b` elementwise (torch.where).

    Example:
      %r = "dynamo.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    cond: Operand[ir.RankedTensorType]
    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        c, a, b = tensor_type(self.cond), tensor_type(self.lhs), tensor_type(self.rhs)
        _require(is_i1(c.element_type), "condition must be a tensor of i1")
        _require(a.element_type == b.element_type == elem_of(self.out), "branch types differ")
        _require(dims_compatible(c.shape, a.shape) and dims_compatible(a.shape, b.shape),
                 "operand shapes differ; insert dynamo.broadcast")


class CastOp(Dynamo.Operation, name="cast", traits=[Pure]):
    """Converts the element type, with PyTorch's semantics (float->int truncates, x->bool is x != 0).

    Example:
      %y = "dynamo.cast"(%x) : (tensor<4xf32>) -> tensor<4xbf16>
    """

    x: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(dims_compatible(shape_of(self.x), shape_of(self.out)), "cast cannot change the shape")
