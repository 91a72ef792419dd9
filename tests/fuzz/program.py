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


@dataclass(frozen=True)
class Layout:
    """How an input's memory is laid out: the base tensor is made with `base(shape)`, then
    `suffix` turns it into a view of the wanted shape (transposed, strided, expanded) or
    re-lays it (channels-last)."""
    kind: str = "contiguous"   # contiguous | transposed | strided | expanded | channels_last
    dims: tuple[int, ...] = ()

    def base(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        s = list(shape)
        if self.kind == "transposed":
            i, j = self.dims
            s[i], s[j] = s[j], s[i]
        elif self.kind == "strided":
            s[self.dims[0]] = 2 * s[self.dims[0]] + 1  # every other element, from offset 1
        elif self.kind == "expanded":
            for d in self.dims:
                s[d] = 1
        return tuple(s)

    def suffix(self, shape: tuple[int, ...]) -> str:
        if self.kind == "transposed":
            return f".transpose({self.dims[0]}, {self.dims[1]})"
        if self.kind == "strided":
            return "[" + ":, " * self.dims[0] + "1::2]"
        if self.kind == "expanded":
            return f".expand{shape_text(shape)}"
        if self.kind == "channels_last":
            return ".to(memory_format=torch.channels_last)"
        return ""


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
