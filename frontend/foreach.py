"""Decompositions of the `_foreach_*` ops: one op per tensor of the lists.

torch.optim's optimizers run their update as `_foreach_*` ops over all parameters at once (the
default for CUDA parameters: Adam's step is a dozen of them). Each is the same elementwise op on
every element of its list arguments, so it decomposes into those per-tensor ops, which land on
our import rules (and fuse like any other elementwise op). Non-list arguments (a Python scalar, a
shared scalar tensor) are passed to every call; a list of scalars is read element by element.
"""

import torch

aten = torch.ops.aten

# `_foreach_<name>` -> the per-tensor op it applies (the names are torch's own).
PER_TENSOR = (
    "add", "sub", "mul", "div", "addcmul", "addcdiv", "pow", "lerp", "maximum", "minimum",
    "clamp_min", "clamp_max", "neg", "abs", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log",
    "log1p", "log2", "log10", "sigmoid", "tanh", "sin", "cos", "sign", "floor", "ceil", "round",
    "trunc", "frac", "erf", "erfc",
)


# Per-tensor ops with keyword-only arguments the foreach op takes positionally:
# name -> (positional count, the names of the arguments after them).
_KEYWORD_ONLY = {"addcmul": (3, ("value",)), "addcdiv": (3, ("value",))}


def _decompose(name: str):
    op = getattr(aten, name)
    count, keywords = _KEYWORD_ONLY.get(name, (None, ()))

    def per_tensor(*args, **kwargs):
        lists = [a for a in args if isinstance(a, (list, tuple))]
        pick = lambda a, i: a[i] if isinstance(a, (list, tuple)) else a  # noqa: E731

        def call(i):
            values = [pick(a, i) for a in args]
            named = dict(zip(keywords, values[count:])) if count is not None else {}
            return op(*values[:count], **named, **{k: pick(v, i) for k, v in kwargs.items()})

        return [call(i) for i in range(len(lists[0]))]

    return per_tensor


# Overloads left as they are: `out=` variants, and addcmul/addcdiv's `.Tensor`, whose per-element
# scalars come as one tensor (read on the host in eager).
_SKIPPED = ("out", "Tensor_out")
_SKIPPED_OF = {"addcmul": ("Tensor",), "addcdiv": ("Tensor",)}


def decompositions() -> dict:
    """Every functional overload of `_foreach_<name>` (in-place ones are functionalized first)."""
    table = {}
    for name in PER_TENSOR:
        packet = getattr(aten, f"_foreach_{name}", None)
        if packet is None:  # not in this torch version
            continue
        for overload in packet.overloads():
            if overload.endswith(_SKIPPED) or overload in _SKIPPED_OF.get(name, ()):
                continue
            table[getattr(packet, overload)] = _decompose(name)
    return table
