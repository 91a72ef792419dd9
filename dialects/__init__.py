"""Our MLIR dialect(s), defined in Python on mlir.dialects.ext."""

from torch_mlir import ir

from . import sizes  # noqa: F401  (registers dynamo.dim before the dialect loads)
from .dynamo import Dynamo, all_ops


def load(context: ir.Context | None = None) -> None:
    """Load the dynamo dialect into the current (or given) MLIR context, once."""
    context = context or ir.Context.current
    if not context.is_dialect_loaded(Dynamo.DIALECT_NAMESPACE):
        with context:
            Dynamo.load()


def new_context() -> ir.Context:
    """An MLIR context with the dynamo dialect loaded.

    Single-threaded: the dialect's verifiers and traits are Python callbacks, which must not be
    entered from MLIR's worker threads (and our per-region modules are small)."""
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    load(ctx)
    return ctx


__all__ = ["Dynamo", "all_ops", "load", "new_context"]
