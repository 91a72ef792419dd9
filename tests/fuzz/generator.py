"""Draws a random program (tests/fuzz/program.py) from the op tables (tests/fuzz/ops.py).

All randomness goes through a Drawer, so one generator serves hypothesis (which shrinks a failing
program by shrinking its draws: every choice shrinks towards its first option, every `chance`
towards False) and a plain seeded `random.Random` (the run script: fast, no hypothesis machinery).
Every step is evaluated on meta tensors as it is drawn: its shape, dtype and strides are then
exactly eager's, and a step eager would refuse (a `view` of a transposed value, a reduction over a
zero-size dim without identity) is dropped and another drawn.
"""

import math
import random
import re

import torch
import torch.nn.functional as F

from .ops import BOOL, BY_FAMILY, F16, F32, BF16, FLOATS, I64, Op
from .program import Input, Layout, Program, Step, tuple_text

# Entries repeat to weight them; the first is what hypothesis shrinks towards.
MAIN_DTYPES = [F32, F32, F32, F16, BF16, I64, BOOL]
FAMILY_CHOICES = ["unary", "binary", "movement", "reduction", "binary", "movement", "indexing",
                  "matmul", "norm", "unary", "reduction", "indexing", "inplace"]
SCALARS = {"float": ["2.0", "-0.5", "1.5", "0.0", "3"], "int": ["2", "-3", "0", "1"], "bool": ["True", "False"]}
DEFAULT_KIND = {BOOL: "bool", I64: "int"}  # floats: "randn"
MIN_STEPS, MAX_STEPS = 3, 12
# non-contiguous input layouts (program.py's LAYOUTS): kind, the ranks it takes, weight
LAYOUT_CHOICES = [("transposed", lambda r: r >= 2, 2), ("strided", lambda r: r >= 1, 1),
                  ("channels_last", lambda r: r == 4, 2), ("expanded", lambda r: r >= 1, 1)]
# kind -> the dims it acts on: two to swap, one to stride or expand
LAYOUT_DIMS = {
    "transposed": lambda b, rank: tuple(sorted(b.permutation(rank)[:2])),
    "strided": lambda b, rank: (b.d.integer(0, rank - 1),),
    "expanded": lambda b, rank: (b.d.integer(0, rank - 1),),
    "channels_last": lambda b, rank: (),
}


class Drawer:
    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq):
        return seq[self.integer(0, len(seq) - 1)]

    def chance(self, percent: int) -> bool:
        return self.integer(0, 99) >= 100 - percent  # 0, what hypothesis shrinks to, is False


class RandomDrawer(Drawer):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo, hi):
        return self.rng.randint(lo, hi)


class HypothesisDrawer(Drawer):
    def __init__(self, draw):
        self.draw = draw

    def integer(self, lo, hi):
        from hypothesis import strategies as st
        return self.draw(st.integers(lo, hi))


class Builder:
    """The program being drawn, with a meta tensor for every value so far (name -> tensor)."""

    def __init__(self, d: Drawer, dtype: torch.dtype, grad: bool, allow_zero: bool):
        self.d, self.main_dtype, self.allow_zero = d, dtype, allow_zero
        self.program = Program(grad=grad)
        self.env: dict[str, torch.Tensor] = {}
        # a gradient program is a float32 program: its other operands are f32, int64 or bool
        self.dtypes = [F32, I64, BOOL] if grad else [F32, F16, BF16, I64, BOOL]

    # --- the values so far
    def shape(self, name) -> tuple[int, ...]:
        return tuple(self.env[name].shape)

    def rank(self, name) -> int:
        return self.env[name].dim()

    def dtype(self, name) -> torch.dtype:
        return self.env[name].dtype

    def pick(self, accept) -> str | None:
        """A value `accept`s; most often the newest, so programs chain rather than fan out."""
        names = [n for n in reversed(self.env) if accept(self.env[n])]
        if not names:
            return None
        return names[0] if self.d.chance(55) else self.d.choice(names)

    # --- shapes, dims, scalars
    def size(self) -> int:
        if self.allow_zero and self.d.chance(8):
            return 0
        return 1 if self.d.chance(15) else self.d.integer(2, 7)

    def new_shape(self, max_rank: int = 4) -> tuple[int, ...]:
        rank = self.d.choice([r for r in [2, 1, 3, 0, 4] if r <= max_rank])
        return tuple(self.size() for _ in range(rank))

    def dim(self, rank: int) -> int:
        return self.d.integer(-rank, rank - 1) if rank else self.d.choice([0, -1])

    def dims(self, rank: int) -> str:
        """Distinct dims (some negative) as source: `1` or `(0, -1)`."""
        chosen = self.permutation(rank)[:self.d.integer(1, rank)]
        chosen = [i - rank if self.d.chance(30) else i for i in chosen]
        return str(chosen[0]) if len(chosen) == 1 and self.d.chance(50) else tuple_text(chosen)

    def permutation(self, rank: int) -> list[int]:
        pool, out = list(range(rank)), []
        while pool:
            out.append(pool.pop(self.d.integer(0, len(pool) - 1)))
        return out

    def reshaped(self, shape) -> tuple[int, ...]:
        """Another shape with the same number of elements (one of them -1, sometimes)."""
        numel = math.prod(shape)
        if numel == 0:
            return tuple(0 if i == 0 else self.d.integer(1, 3) for i in self.permutation(self.d.integer(1, 3)))
        dims = [1] * self.d.integer(1, 4)
        for p in prime_factors(numel):
            dims[self.d.integer(0, len(dims) - 1)] *= p
        if self.d.chance(30):
            dims[self.d.integer(0, len(dims) - 1)] = -1
        return tuple(dims)

    def partner_shape(self, shape, enlarge: bool) -> tuple[int, ...]:
        """A shape that broadcasts with `shape`: dims set to 1 or dropped from the front; with
        `enlarge`, size-1 dims may grow and a new leading dim may appear (the result is larger)."""
        out = [1 if self.d.chance(25) else (self.size() if enlarge and s == 1 and self.d.chance(40) else s)
               for s in shape]
        out = out[self.d.integer(0, len(out)):] if out and self.d.chance(25) else out
        return tuple(([self.size()] if enlarge and self.d.chance(12) else []) + out)

    def scalar(self, dtype: torch.dtype) -> str:
        kind = "bool" if dtype == BOOL else "float" if dtype.is_floating_point else "int"
        return self.d.choice(SCALARS[kind])

    # --- operands
    def fresh(self, shape, dtype, kind: str | None = None, high: int = 0, grad: bool = True,
              contiguous: bool = False) -> str:
        """A new input of the program."""
        kind = kind or DEFAULT_KIND.get(dtype, "randn")
        layout = Layout() if contiguous else self.layout(shape)
        item = Input(f"x{len(self.program.inputs)}", tuple(shape), dtype, kind, layout, high, grad)
        self.env[item.name] = _evaluate(item.source(), {"device": "meta"})
        self.program.inputs.append(item)
        return item.name

    def layout(self, shape) -> Layout:
        """Contiguous two times in three; else one of the non-contiguous layouts the rank allows."""
        rank = len(shape)
        kinds = [k for k, takes, weight in LAYOUT_CHOICES for _ in range(weight) if takes(rank)]
        if not kinds or self.d.chance(65):
            return Layout()
        kind = self.d.choice(kinds)
        return Layout(kind, LAYOUT_DIMS[kind](self, rank))

    def other(self, x: str, scalar_ok: bool, enlarge: bool = True) -> str:
        """A second operand for `x`: a scalar, a value already there, or a new input, of a shape
        that broadcasts with x's (never growing x's with `enlarge` off)."""
        shape, dtype = self.shape(x), self.dtype(x)
        if scalar_ok and self.d.chance(30):
            return self.scalar(dtype)
        if self.d.chance(35):
            existing = self.pick(lambda m: fits(tuple(m.shape), shape, enlarge))
            if existing:
                return existing
        other_dtype = self.d.choice(self.dtypes) if self.d.chance(15) else dtype
        return self.fresh(self.partner_shape(shape, enlarge), other_dtype)

    def mask_for(self, x: str, enlarge: bool) -> str:
        shape = self.shape(x)
        if self.d.chance(40):
            existing = self.pick(lambda m: m.dtype == BOOL and fits(tuple(m.shape), shape, enlarge))
            if existing:
                return existing
        return self.fresh(self.partner_shape(shape, enlarge), BOOL)

    # --- steps
    def try_step(self, op: Op, x: str) -> bool:
        """Draw `op` on `x`; keep it (and the inputs it made) iff it evaluates on meta tensors."""
        inputs, env = list(self.program.inputs), dict(self.env)
        expr = op.build(self, x)
        try:
            value = _evaluate(expr, self.env) if expr else None
        except Exception:  # eager would refuse it too: not a program
            value = None
        if not isinstance(value, torch.Tensor):
            self.program.inputs, self.env = inputs, env
            return False
        name = f"v{len(self.program.steps)}"
        self.env[name] = value
        self.program.steps.append(Step(name, expr, op.name))
        return True


def fits(other, shape, enlarge: bool) -> bool:
    try:
        result = torch.broadcast_shapes(other, shape)
    except RuntimeError:
        return False
    return enlarge or tuple(result) == tuple(shape)


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def _evaluate(expr: str, env: dict):
    return eval(expr, {"torch": torch, "F": F}, dict(env))  # noqa: S307 - our own generated source


def generate(d: Drawer) -> Program:
    dtype = d.choice(MAIN_DTYPES)
    b = Builder(d, dtype, grad=dtype == F32 and d.chance(50), allow_zero=d.chance(12))
    for _ in range(d.integer(1, 2)):
        b.fresh(b.new_shape(), dtype)
    wanted, attempts = d.integer(MIN_STEPS, MAX_STEPS), 0
    while len(b.program.steps) < wanted and attempts < 25 * wanted:
        attempts += 1
        op = d.choice(BY_FAMILY[d.choice(FAMILY_CHOICES)])
        if op.inplace and b.program.grad:  # a leaf that requires grad cannot be written in place
            continue
        x = b.pick(lambda m: m.dtype in op.dtypes and op.accepts(m))
        if x is not None:
            b.try_step(op, x)
    program = b.program
    program.outputs = unconsumed(program.steps)
    read = {name for s in program.steps for name in re.findall(r"\bx\d+\b", s.expr)}
    program.inputs = [i for i in program.inputs if i.name in read]
    program.dynamic, program.seed = d.chance(50), d.integer(0, 9999)
    return program


def unconsumed(steps: list[Step]) -> list[str]:
    """The steps no later step reads: every step then reaches an output."""
    used = {name for s in steps for name in re.findall(r"\bv\d+\b", s.expr)}
    return [s.name for s in steps if s.name not in used]


def programs():
    """The hypothesis strategy."""
    from hypothesis import strategies as st
    return st.composite(lambda draw: generate(HypothesisDrawer(draw)))()
