"""Our MLIR dialect(s), defined in Python on mlir.dialects.ext."""

from torch_mlir import ir

from . import sizes  # noqa: F401  (registers dynamo.dim before the dialect loads)
from .dynamo import Dynamo, all_ops


# namespace -> dialect class: `dynamo` and the dialects plugins add (register_dialect). Every
# context we make loads them all, and the lowering lowers the ops of all of them.
_DIALECTS: dict[str, type] = {Dynamo.DIALECT_NAMESPACE: Dynamo}


class DuplicateDialect(ValueError):
    """Two different dialect classes registered under one namespace."""


def register_dialect(dialect: type) -> type:
    """Add a Python-defined dialect (`class D(Dialect, name=...)` of torch_mlir.dialects.ext) to
    every context dynamo-mlir creates; its ops are lowered like dynamo's (register_lowering).
    Usable as a class decorator. A second, different class for one namespace raises."""
    name = dialect.DIALECT_NAMESPACE
    old = _DIALECTS.get(name)
    if old is not None and old is not dialect:
        raise DuplicateDialect(f"dialect '{name}' is already registered by {old.__module__}.{old.__qualname__}")
    _DIALECTS[name] = dialect
    return dialect


def namespaces() -> frozenset[str]:
    return frozenset(_DIALECTS)


def is_ours(op_name: str) -> bool:
    """Whether an op belongs to a dialect we lower (dynamo or a registered plugin dialect)."""
    return op_name.partition(".")[0] in _DIALECTS


def load(context: ir.Context | None = None) -> None:
    """Load our dialects into the current (or given) MLIR context, once each."""
    context = context or ir.Context.current
    for name, dialect in _DIALECTS.items():
        if not context.is_dialect_loaded(name):
            with context:
                dialect.load()


def new_context() -> ir.Context:
    """An MLIR context with the dynamo dialect loaded.

    Single-threaded: the dialect's verifiers and traits are Python callbacks, which must not be
    entered from MLIR's worker threads (and our per-region modules are small)."""
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    load(ctx)
    return ctx


__all__ = ["Dynamo", "all_ops", "load", "new_context", "register_dialect", "is_ours", "namespaces"]
