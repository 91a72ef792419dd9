"""Loop builders for lowering rules: scf.for, scf.while and scf.if from Python callbacks.

Loop-carried values may be given as ir.Values, Scalars (lowering/scalar.py) or Python numbers
(f64 constants). The callbacks get, and the builders return, each one in the form it was given:
an ir.Value stays a Value, a Scalar or number comes back as a Scalar. So the serial tensor loops
(sort, scatter, linalg) and the scalar math bodies (lowering/math/) share one set of builders.
Callbacks may return any of the three forms.
"""

from typing import Callable, Sequence

from torch_mlir import ir
from torch_mlir.dialects import scf

from .scalar import Scalar, index, value_of


def _forms(given: Sequence) -> Callable[[Sequence[ir.Value]], list]:
    """A function giving ir.Values back in the forms `given` had (Value, or else Scalar)."""
    as_scalar = [not isinstance(x, ir.Value) for x in given]
    return lambda values: [Scalar(v) if s else v for v, s in zip(values, as_scalar)]


def _carried(inits: Sequence) -> tuple[list[ir.Value], Callable[[Sequence[ir.Value]], list]]:
    return [value_of(x) for x in inits], _forms(inits)


def for_range(lb, ub, inits: Sequence, body, step=1) -> list:
    """scf.for over [lb, ub) by step (ints or index values) carrying `inits`;
    body(iv, *carried) -> new carried values."""
    values, forms = _carried(inits)
    loop = scf.ForOp(index(lb), index(ub), index(step), values)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp([value_of(v) for v in body(loop.induction_variable, *forms(loop.inner_iter_args))])
    return forms(loop.results)


def loop_nest(bounds: Sequence, inits: Sequence, body) -> list:
    """for i0 < bounds[0]: for i1 < bounds[1]: ... carried = body([i0, i1, ...], carried)."""

    def level(depth: int, ivs: list, carried: list) -> list:
        if depth == len(bounds):
            return list(body(ivs, carried))
        return for_range(0, bounds[depth], carried, lambda iv, *c: level(depth + 1, ivs + [iv], list(c)))

    return level(0, [], list(inits))


def while_loop(inits: Sequence, cond, body) -> list:
    """scf.while: `cond(*state) -> i1` checked before each `body(*state) -> new state`."""
    values, forms = _carried(inits)
    types = [v.type for v in values]
    loop = scf.WhileOp(types, values)
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        scf.ConditionOp(value_of(cond(*forms(before.arguments))), list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        scf.YieldOp([value_of(v) for v in body(*forms(after.arguments))])
    return forms(loop.results)


def if_else(cond, types: Sequence[ir.Type], then_fn, else_fn) -> list:
    """scf.if giving values of `types`: only the taken branch runs (its loops, too). The
    results come in the forms then_fn returned."""
    op = scf.IfOp(value_of(cond), list(types), has_else=True)
    forms = None
    for block, fn in ((op.then_block, then_fn), (op.else_block, else_fn)):
        with ir.InsertionPoint(block):
            produced = list(fn())
            scf.YieldOp([value_of(v) for v in produced])
        forms = forms or _forms(produced)
    return forms(op.results)
