"""dynamo-mlir: an MLIR-based compiler backend for torch.compile.

    import torch
    model = torch.compile(model, backend="mlir")   # no import of this package needed
    import dynamo_mlir; print(dynamo_mlir.explain())  # what the last compiles did

`explain()`, `stats()` and `reset()` report on every graph compiled since the last reset().
"""

from dynamo_mlir.frontend.stats import explain, reset, stats

__all__ = ["explain", "stats", "reset"]
