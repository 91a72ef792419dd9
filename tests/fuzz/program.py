"""A drawn program: its inputs (how each is made), its steps (one Python expression each), its
outputs; rendered as Python source that is also what runs, so a failure prints exactly the
program that failed, ready to paste into tests/fuzz/test_regressions.py."""

import textwrap
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

# How an input's values are drawn, by kind: a format string over shape, dtype and `high`.
# "positive" feeds running variances; "index" feeds indexing ops (values in [0, high)).
MAKERS = {
    "randn": "torch.randn({shape}, dtype={dtype}, device=device)",
    "positive": "(torch.rand({shape}, dtype={dtype}, device=device) + 0.5)",
    "int": "torch.randint(-4, 5, {shape}, device=device)",
    "index": "torch.randint(0, {high}, {shape}, device=device)",
    "bool": "(torch.rand({shape}, device=device) < 0.5)",
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype)  # "torch.float16": valid source


def tuple_text(items) -> str:
    """A tuple's source: (), (3,), (3, 4)."""
    items = [str(i) for i in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


shape_text = tuple_text


def _swapped(shape, dims):
    s = list(shape)
    s[dims[0]], s[dims[1]] = s[dims[1]], s[dims[0]]
    return s


def _widened(shape, dims):
    return [2 * n + 1 if d == dims[0] else n for d, n in enumerate(shape)]  # every other one, from 1


def _ones_at(shape, dims):
    return [1 if d in dims else n for d, n in enumerate(shape)]


# layout kind -> (the base tensor's shape from the wanted shape and the layout's dims,
#                 the source that makes the wanted view of the base)
LAYOUTS = {
    "contiguous": (lambda shape, dims: shape, lambda shape, dims: ""),
    "transposed": (_swapped, lambda shape, dims: f".transpose({dims[0]}, {dims[1]})"),
    "strided": (_widened, lambda shape, dims: "[" + ":, " * dims[0] + "1::2]"),
    "expanded": (_ones_at, lambda shape, dims: f".expand{tuple_text(shape)}"),
    "channels_last": (lambda shape, dims: shape, lambda shape, dims: ".to(memory_format=torch.channels_last)"),
}


@dataclass(frozen=True)
class Layout:
    """How an input's memory is laid out: a base tensor, then a view of the wanted shape
    (transposed, strided, expanded) or the same values re-laid (channels-last)."""
    kind: str = "contiguous"
    dims: tuple[int, ...] = ()

    def base(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(LAYOUTS[self.kind][0](shape, self.dims))

    def suffix(self, shape: tuple[int, ...]) -> str:
        return LAYOUTS[self.kind][1](shape, self.dims)


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    kind: str = "randn"
    layout: Layout = Layout()
    high: int = 0          # "index" inputs: values in [0, high)
    grad: bool = True      # a float input that gradients are taken for (running stats: not)

    def source(self) -> str:
        make = MAKERS[self.kind].format(shape=shape_text(self.layout.base(self.shape)),
                                        dtype=dtype_name(self.dtype), high=self.high)
        return make + self.layout.suffix(self.shape)


@dataclass(frozen=True)
class Step:
    name: str
    expr: str              # a Python expression over earlier names (torch, F in scope)
    op: str                # the op table's name for it, for summaries


@dataclass
class Program:
    inputs: list[Input] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    dynamic: bool = False
    grad: bool = False
    seed: int = 0

    def fn_source(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        body = [f"    {s.name} = {s.expr}" for s in self.steps]
        return "\n".join([f"def fn({args}):", *body, f"    return {tuple_text(self.outputs)}"])

    def inputs_source(self) -> str:
        body = [f"    {i.name} = {i.source()}" for i in self.inputs]
        names = ", ".join(i.name for i in self.inputs)
        return "\n".join(['def make_inputs(device="cpu"):', f"    torch.manual_seed({self.seed})", *body,
                          f"    return [{names}]"])

    def source(self, test_name: str = "test_case") -> str:
        """The program as a regression test (tests/fuzz/test_regressions.py imports `check`)."""
        no_grad = tuple(i.name for i in self.inputs if not i.grad and i.dtype.is_floating_point)
        call = f"check(fn, make_inputs, dynamic={self.dynamic}, grad={self.grad}" + (
            f", no_grad={no_grad})" if no_grad and self.grad else ")")
        inner = textwrap.indent(self.fn_source() + "\n\n" + self.inputs_source(), "    ")
        return f"def {test_name}():\n{inner}\n\n    {call}\n"

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return "\n" + self.source()

    def function(self):
        return _define(self.fn_source(), "fn")

    def input_maker(self):
        return _define(self.inputs_source(), "make_inputs")

    def ops(self) -> list[str]:
        return [s.op for s in self.steps]


def _define(source: str, name: str):
    scope = {"torch": torch, "F": F}
    exec(compile(source, f"<fuzz {name}>", "exec"), scope)  # noqa: S102 - our own generated source
    return scope[name]
