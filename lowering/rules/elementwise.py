"""Elementwise ops -> one linalg.generic each, whose scalar body the elementwise spec
(dialects/elementwise.py, ELEMENTWISE) names per element type class; compare/select/cast."""

from torch_mlir import ir
from torch_mlir.dialects import arith, math

from ...dialects import dynamo as dy
from ..math import elementwise as bodies
from ..registry import register_lowering
from ..scalar import convert, is_bool, is_float
from .common import elementwise, op_kind, ranked

FLOAT_COMPARE = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE"}
SIGNED_COMPARE = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
UNSIGNED_COMPARE = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}

# Where the spec's body names point: "arith.x" and "math.x" are MLIR op builders, a bare name
# is a function of the math library's elementwise bodies.
_NAMESPACES = {"arith": arith, "math": math, "": bodies}


def _resolve(name: str | None):
    """A spec body name -> its builder; a typo fails here, when the rules are registered."""
    if name is None:
        return None
    namespace, _, fn = name.rpartition(".")
    return getattr(_NAMESPACES[namespace], fn)


# op name -> (float body, integer body, i1 body)
BODIES = {e.name: (_resolve(e.float_body), _resolve(e.int_body), _resolve(e.i1_body)) for e in dy.ELEMENTWISE.values()}


def _body(op, elem: ir.Type):
    float_fn, int_fn, bool_fn = BODIES[op_kind(op)]
    fn = float_fn if is_float(elem) else bool_fn if is_bool(elem) else int_fn
    if fn is None:
        raise NotImplementedError(f"{op.name} has no scalar rule for element type {elem}")
    return fn


def _lower_unary(ctx, op):
    return elementwise([op.x], ranked(op.out), _body(op, ranked(op.x).element_type))


def _lower_binary(ctx, op):
    return elementwise([op.lhs, op.rhs], ranked(op.out), _body(op, ranked(op.lhs).element_type))


register_lowering(list(dy.UNARY_CLASSES.values()), _lower_unary)
register_lowering(list(dy.BINARY_CLASSES.values()), _lower_binary)


@register_lowering(dy.CompareOp)
def _lower_compare(ctx, op):
    pred, elem = ir.StringAttr(op.predicate).value, ranked(op.lhs).element_type
    if is_float(elem):
        p = getattr(arith.CmpFPredicate, FLOAT_COMPARE[pred])
        fn = lambda a, b: arith.cmpf(p, a, b)
    else:
        table = UNSIGNED_COMPARE if is_bool(elem) else SIGNED_COMPARE
        p = getattr(arith.CmpIPredicate, table[pred])
        fn = lambda a, b: arith.cmpi(p, a, b)
    return elementwise([op.lhs, op.rhs], ranked(op.out), fn)


@register_lowering(dy.SelectOp)
def _lower_select(ctx, op):
    return elementwise([op.cond, op.lhs, op.rhs], ranked(op.out), arith.select)


@register_lowering(dy.CastOp)
def _lower_cast(ctx, op):
    dst = ranked(op.out).element_type
    return elementwise([op.x], ranked(op.out), lambda x: convert(x, dst))
