"""The lowering-rule registry: one rule per dynamo op, optionally overridden per target.

A rule is `rule(op) -> ir.Value | list[ir.Value]`, called with the insertion point and location
set just before `op`; it builds linalg/tensor/arith/math IR computing op's results. A rule
registered for a target wins over the generic one (JAX's `register_lowering`).

Registration cannot silently lose: a second rule for a key that already has one raises
DuplicateLoweringRule unless it says `override=True` (import order must not decide which rule runs).
"""

from typing import Callable

Rule = Callable[..., object]

_RULES: dict[tuple[str, str | None], Rule] = {}


class NoLoweringRule(NotImplementedError):
    def __init__(self, op_name: str, target: str | None):
        where = f" for target '{target}'" if target else ""
        super().__init__(
            f"no lowering rule for '{op_name}'{where}: register one with "
            f"dynamo_mlir.lowering.register_lowering('{op_name}', rule)"
        )


class DuplicateLoweringRule(ValueError):
    def __init__(self, op_name: str, target: str | None):
        where = f" for target '{target}'" if target else ""
        super().__init__(f"'{op_name}' already has a lowering rule{where}; pass override=True to replace it")


def _op_name(op) -> str:
    return op if isinstance(op, str) else op.OPERATION_NAME


def register_lowering(op, rule: Rule | None = None, *, target: str | None = None, override: bool = False):
    """Register `rule` for `op` (an op class or its name, or a list of them); usable as a decorator."""
    names = [_op_name(o) for o in (op if isinstance(op, (list, tuple)) else [op])]

    def add(fn: Rule) -> Rule:
        for name in names:
            if (name, target) in _RULES and not override:
                raise DuplicateLoweringRule(name, target)
        for name in names:
            _RULES[(name, target)] = fn
        return fn

    return add(rule) if rule is not None else add


def lookup(op_name: str, target: str | None) -> Rule:
    rule = _RULES.get((op_name, target)) or _RULES.get((op_name, None))
    if rule is None:
        raise NoLoweringRule(op_name, target)
    return rule


def lowered_ops(target: str | None = None) -> list[str]:
    return sorted({name for (name, t) in _RULES if t in (None, target)})
