"""The import-rule registry: one rule per ATen overload, mapping an FX node to dynamo ops.

A rule is `rule(ctx, node) -> ir.Value | tuple[ir.Value, ...]` (see importer.ImportContext for
the helpers). It raises `Unsupported(reason)` for argument combinations it does not handle; the
partitioner then keeps that node eager and reports the reason.
"""

from typing import Callable

_RULES: dict[object, Callable] = {}


class Unsupported(Exception):
    """This node cannot be imported (the message says why); it will run eagerly."""


def import_rule(*targets):
    """Register the decorated function as the import rule of every given ATen overload/packet."""

    def add(fn):
        for t in targets:
            for overload in _overloads(t):
                _RULES[overload] = fn
        return fn

    return add


def _overloads(target):
    # An OpOverloadPacket (aten.relu) stands for all of its overloads.
    if hasattr(target, "overloads") and callable(target.overloads):
        return [getattr(target, name) for name in target.overloads()]
    return [target]


def lookup(target) -> Callable | None:
    return _RULES.get(target)


def imported_ops() -> list[str]:
    return sorted(str(t) for t in _RULES)
