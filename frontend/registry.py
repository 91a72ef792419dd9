"""The import-rule registry: one rule per ATen overload, mapping an FX node to dynamo ops.

A rule is `rule(ctx, node) -> ir.Value | tuple[ir.Value, ...]` (see importer.ImportContext and
aten/builders.py for what builds IR, aten/args.py for reading the node's arguments). It raises
`Unsupported(reason)` for argument combinations it does not handle; the partitioner then keeps
that node eager and reports the reason.

Registration cannot silently lose: a second rule for an overload that already has one raises
`DuplicateRule`, unless it says `override=True` (a plugin replacing a core rule on purpose). The
order in which rule modules are imported therefore never decides which rule runs.
"""

from typing import Callable

_RULES: dict[object, Callable] = {}
_GENERATION = [0]  # counts registrations (see generation)


class Unsupported(Exception):
    """This node cannot be imported (the message says why); it will run eagerly."""


class DuplicateRule(ValueError):
    """An import rule was registered for an overload that already has one, without override=True."""


def import_rule(*targets, override: bool = False):
    """Register the decorated function as the import rule of every given ATen overload/packet
    (a packet stands for all of its overloads). `override=True` replaces an existing rule."""

    def add(fn):
        ops = [overload for t in targets for overload in overloads(t)]
        for overload in ops:  # all checked first: a refused registration changes nothing
            _check_free(overload, fn, override)
        _RULES.update(dict.fromkeys(ops, fn))
        _GENERATION[0] += 1
        return fn

    return add


def _check_free(overload, fn, override: bool) -> None:
    old = _RULES.get(overload)
    if old is not None and old is not fn and not override:
        raise DuplicateRule(f"{overload} already has the import rule {_name(old)}; {_name(fn)} "
                            "would replace it (pass override=True to mean that)")


def _name(fn) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def overloads(target):
    # An OpOverloadPacket (aten.relu) stands for all of its overloads.
    if hasattr(target, "overloads") and callable(target.overloads):
        return [getattr(target, name) for name in target.overloads()]
    return [target]


def generation() -> int:
    """Changes whenever a rule is registered: answers derived from the rules (partition.py's
    verdicts) are valid while it stays."""
    return _GENERATION[0]


def lookup(target) -> Callable | None:
    return _RULES.get(target)


def imported_ops() -> list[str]:
    return sorted(str(t) for t in _RULES)
