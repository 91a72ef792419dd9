"""Elementwise ops: made from one spec table, ELEMENTWISE (one verifier fits them all), plus
compare/select/cast. The lowering (lowering/rules/elementwise.py) and the frontend's ATen maps
(frontend/aten/elementwise.py) read the same table."""

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, tensor_type, shape_of, elem_of, dims_compatible, is_i1


# ----------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class Elementwise:
    """One elementwise op: what every layer needs to know about it, in one place.

    name: the op is dynamo.<name>, class <Name>Op (made below).
    arity: 1 (operand x) or 2 (operands lhs, rhs of one type and shape).
    doc: what it computes (the op's docstring).
    float_body, int_body, bool_body: its scalar body on float, integer and i1 operands, by name:
      "arith.<op>" or "math.<op>" for one MLIR op, else a function of lowering/math/elementwise.py
      (the lowering joins them by name: the dialect does not import the lowering). None: no body
      for that element type. bool_body is for binary ops; a unary op's int body serves i1 too.
    aten: ATen ops (packet names) the generic elementwise import rule maps to this op; empty
      where the op has an import rule of its own (div, pow, gelu, isnan, ...).
    predicate: the result is i1 whatever the operand's element type.
    continuous: the result moves by about a rounding error when an operand does, so in a
      half-precision chain it reads its producers' float32 values and only the chain's stored
      result is rounded (frontend: ImportContext.rounded). Rounding, sign, remainder and
      predicate ops are not: one rounding can move their result by a whole unit, so they read
      the rounded values, as eager does.
    """

    name: str
    arity: int
    doc: str
    float_body: str | None
    int_body: str | None = None
    bool_body: str | None = None
    aten: tuple[str, ...] = ()
    predicate: bool = False
    continuous: bool = True

    @property
    def i1_body(self) -> str | None:
        """The body on i1 operands: a unary op's integer body is written to serve i1 too."""
        return self.bool_body if self.arity == 2 else self.int_body

    @property
    def float_only(self) -> bool:
        """Integer operands are computed in the (floating) result type: no integer body."""
        return self.float_body is not None and self.int_body is None


def _unary(name, doc, float_body, int_body=None, aten=(), predicate=False, continuous=True) -> Elementwise:
    aten = (aten,) if isinstance(aten, str) else aten
    return Elementwise(name, 1, doc, float_body, int_body, None, aten, predicate, continuous and not predicate)


def _binary(name, doc, float_body, int_body=None, bool_body=None, aten=(), continuous=True) -> Elementwise:
    return Elementwise(name, 2, doc, float_body, int_body, bool_body, (aten,) if isinstance(aten, str) else aten,
                       continuous=continuous)


# Adding an elementwise op is one line here (plus its body in lowering/math/elementwise.py when
# it is no single arith/math op).
ELEMENTWISE = {e.name: e for e in [
    # _unary(name, doc, float body, int body=None, aten=(), predicate=False, continuous=True)
    _unary("neg", "-x", "arith.negf", "neg_int", aten="neg"),
    _unary("abs", "|x|", "math.absf", "math.absi", aten="abs"),
    _unary("exp", "e^x", "math.exp", aten="exp"),
    _unary("exp2", "2^x", "math.exp2", aten="exp2"),
    _unary("expm1", "e^x - 1", "expm1", aten="expm1"),
    _unary("log", "ln x", "math.log", aten="log"),
    _unary("log2", "log2 x", "math.log2", aten="log2"),
    _unary("log1p", "ln(1 + x)", "math.log1p", aten="log1p"),
    _unary("sqrt", "sqrt x", "math.sqrt", aten="sqrt"),
    _unary("rsqrt", "1 / sqrt x", "math.rsqrt", aten="rsqrt"),
    _unary("reciprocal", "1 / x", "reciprocal", aten="reciprocal"),
    _unary("sin", "sin x", "math.sin", aten="sin"),
    _unary("cos", "cos x", "math.cos", aten="cos"),
    _unary("tan", "tan x", "math.tan", aten="tan"),
    _unary("tanh", "tanh x", "math.tanh", aten="tanh"),
    _unary("atan", "atan x", "math.atan", aten="atan"),
    _unary("asin", "asin x", "math.asin", aten="asin"),
    _unary("acos", "acos x", "math.acos", aten="acos"),
    _unary("sinh", "sinh x", "math.sinh", aten="sinh"),
    _unary("cosh", "cosh x", "math.cosh", aten="cosh"),
    _unary("asinh", "asinh x", "math.asinh", aten="asinh"),
    _unary("acosh", "acosh x", "math.acosh", aten="acosh"),
    _unary("atanh", "atanh x", "math.atanh", aten="atanh"),
    _unary("erf", "erf x", "math.erf", aten="erf"),
    _unary("sigmoid", "1 / (1 + e^-x)", "sigmoid", aten="sigmoid"),
    _unary("relu", "max(x, 0)", "relu", "relu_int", aten="relu"),
    _unary("gelu", "x * Phi(x) (exact erf form)", "gelu"),
    _unary("gelu_tanh", "gelu, tanh approximation", "gelu_tanh"),
    _unary("floor", "floor x", "math.floor", "same", aten="floor", continuous=False),
    _unary("ceil", "ceil x", "math.ceil", "same", aten="ceil", continuous=False),
    _unary("round", "round half to even", "math.roundeven", "same", aten="round", continuous=False),
    _unary("trunc", "round toward 0", "math.trunc", "same", aten="trunc", continuous=False),
    _unary("sign", "sign x", "sign", "sign_int", aten="sign", continuous=False),
    _unary("not", "logical/bitwise not", None, "bitwise_not", aten="bitwise_not"),
    _unary("isnan", "x != x (result i1)", "isnan", "never", predicate=True),
    _unary("isinf", "|x| == inf (result i1)", "isinf", "never", predicate=True),
    # _binary(name, doc, float body, int body=None, bool body=None, aten=(), continuous=True)
    _binary("add", "a + b", "arith.addf", "arith.addi", "arith.ori", aten="add"),
    _binary("sub", "a - b", "arith.subf", "arith.subi", aten="sub"),
    _binary("mul", "a * b", "arith.mulf", "arith.muli", "arith.andi", aten="mul"),
    _binary("div", "a / b (true division)", "arith.divf"),
    _binary("floordiv", "floor(a / b)", "floordiv", "arith.floordivsi", continuous=False),
    _binary("truncdiv", "trunc(a / b)", "truncdiv", "arith.divsi", continuous=False),
    _binary("rem", "a - floor(a / b) * b (Python remainder)", "rem", "rem_int", aten="remainder", continuous=False),
    _binary("fmod", "C fmod (sign of a)", "arith.remf", "arith.remsi", aten="fmod", continuous=False),
    _binary("pow", "a ^ b", "math.powf"),
    _binary("max", "max(a, b), NaN-propagating", "arith.maximumf", "arith.maxsi", "arith.ori", aten="maximum"),
    _binary("min", "min(a, b), NaN-propagating", "arith.minimumf", "arith.minsi", "arith.andi", aten="minimum"),
    # IEEE maxNum/minNum: a NaN operand yields the other one, as C's fmax/fmin (torch.fmax).
    _binary("fmax", "max(a, b), NaN only if both are", "arith.maxnumf", "arith.maxsi", "arith.ori", aten="fmax"),
    _binary("fmin", "min(a, b), NaN only if both are", "arith.minnumf", "arith.minsi", "arith.andi", aten="fmin"),
    _binary("and", "a & b", None, "arith.andi", "arith.andi", aten=("bitwise_and", "logical_and")),
    _binary("or", "a | b", None, "arith.ori", "arith.ori", aten=("bitwise_or", "logical_or")),
    _binary("xor", "a ^ b", None, "arith.xori", "arith.xori", aten=("bitwise_xor", "logical_xor")),
    _binary("atan2", "atan2(a, b)", "math.atan2", aten="atan2"),
    _binary("shl", "a << b", None, "arith.shli", aten="bitwise_left_shift"),
    _binary("shr", "a >> b (arithmetic)", None, "arith.shrsi", aten="bitwise_right_shift"),
    _binary("copysign", "|a| with b's sign", "math.copysign", aten="copysign", continuous=False),
    _binary("logaddexp2", "log2(2^a + 2^b)", "logaddexp2", aten="logaddexp2"),
]}

# name -> what it computes, per arity (the tables the op classes are made from)
UNARY_OPS = {e.name: e.doc for e in ELEMENTWISE.values() if e.arity == 1}
BINARY_OPS = {e.name: e.doc for e in ELEMENTWISE.values() if e.arity == 2}
# Ops whose result element type is i1 whatever the operand's.
PREDICATE_UNARY = {e.name for e in ELEMENTWISE.values() if e.predicate}

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
