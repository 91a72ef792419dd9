"""The `make_linalg` stage: every dynamo op replaced by the IR its registered rule builds."""

import logging

from torch_mlir import ir

from ..dialects import is_ours
from . import registry

log = logging.getLogger("dynamo_mlir")


class LoweringError(RuntimeError):
    """A rule failed; the message names the op, its location and the target."""

    def __init__(self, message: str, op: str):
        super().__init__(message)
        self.op = op


# A rule may build ops of our dialects (an extension op expanded into dynamo ops); they are
# lowered in the next round. More rounds than this means rules that expand into each other.
MAX_ROUNDS = 8


def _dynamo_ops(module: ir.Module, only=None) -> list[ir.OpView]:
    """The ops of our dialects (dynamo's and the registered plugin dialects') in program order;
    `only`: just the ops it accepts (a predicate on ops)."""
    found = []

    def visit(op):
        if is_ours(op.name) and (only is None or only(op)):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _as_value(produced) -> ir.Value:
    """Rules may return a builder's op (e.g. linalg.matmul(...)) instead of its value."""
    if isinstance(produced, ir.Value):
        return produced
    return (produced.operation if hasattr(produced, "operation") else produced).result


def lower_dynamo_ops(module: ir.Module, target: str | None = None, options=None, only=None) -> ir.Module:
    """Rewrite, in place and in program order, each op of our dialects with its lowering rule,
    until none is left (a rule may expand an op into other ops of ours). Rules get a
    LoweringContext of `target` and `options` (the compile's, bound to the target). `only`: a
    predicate on ops, to lower those it accepts and leave the rest (and the dynamo ops their
    rules build, unless it accepts them too) for a later stage."""
    ctx = registry.context_for(target, options)
    for _ in range(MAX_ROUNDS):
        ops = _dynamo_ops(module, only)
        if not ops:
            return module
        _lower_round(ops, ctx)
    left = sorted({op.name for op in _dynamo_ops(module, only)})
    if left:
        raise LoweringError(f"lowering rules kept producing {left} after {MAX_ROUNDS} rounds (target {target}): "
                            "a rule expands into an op whose rule expands back", left[0])
    return module


def _lower_round(ops: list, ctx: registry.LoweringContext) -> None:
    target = ctx.target
    for op in ops:
        op = op.opview
        rule = registry.lookup(op.name, target)
        try:
            with ir.InsertionPoint(op), op.location:
                produced = rule(ctx, op)
        except Exception as e:  # a rule bug: say which op it was, keep the cause
            raise LoweringError(f"lowering '{op.name}' at {op.location} (target {target}): {e}", op.name) from e
        values = [_as_value(v) for v in (produced if isinstance(produced, (list, tuple)) else [produced])]
        for old, new in zip(op.results, values):
            old.replace_all_uses_with(new)
        op.erase()
