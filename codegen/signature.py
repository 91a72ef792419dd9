"""What a compiled function takes and returns, in torch terms (shared by every runtime)."""

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]  # -1 marks a dynamic dim
    dtype: torch.dtype

    @property
    def is_static(self) -> bool:
        return all(s >= 0 for s in self.shape)


@dataclass(frozen=True)
class SizeSpec:
    """A size (SymInt) input: an `index` argument of the function, a Python int at run time."""

    symbol: str  # the sympy expression it stands for, for messages and dumps
    is_static = False  # a function with size inputs serves many shapes


@dataclass(frozen=True)
class Signature:
    """A compiled function named `name`: inputs, then outputs (written through out-params)."""

    name: str
    inputs: tuple[TensorSpec | SizeSpec, ...]
    outputs: tuple[TensorSpec, ...]
    # With dynamic dims: the outputs' shapes for given input tensors (evaluated per call).
    output_shapes: Callable[[tuple], list[tuple[int, ...]]] | None = None

    @property
    def is_static(self) -> bool:
        return all(s.is_static for s in (*self.inputs, *self.outputs))
