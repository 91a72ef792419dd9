"""Random ops, compiled: distributions made of elementwise ops on `dynamo.random_bits`.

frontend/seeding.py rewrites each random node to `seeded(op)(seed, stream, *args)`; the rules
here are registered for those seeded forms. Every random tensor is a pure function of (seed,
stream, element index): sub-stream k of a node's stream s is random_bits stream 4*s + k, so a
distribution that needs two uniforms per element (Box-Muller) draws independent ones.
The numbers differ from eager's (a different generator) but follow the same distributions.
"""

import math

import torch

from ...dialects import dynamo as dy
from ..importer import static_shape
from ..registry import Unsupported, import_rule
from ..seeding import random_rule
from .args import bind
from .builders import compare, emit_like, i64, select

aten = torch.ops.aten
I64 = torch.int64
# Random bits in a uniform of each floating type: its significand's width, so that every
# value k / 2^bits is exact there and the uniform stays below 1 (no rounding up).
MANTISSA_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11, torch.bfloat16: 8}


class Sampler:
    """Builds one node's random tensors: shape and compute type fixed, values in `acc`
    (f64 for f64 results, else f32)."""

    def __init__(self, ctx, node, dtype: torch.dtype):
        self.ctx, self.node = ctx, node
        seed, self.stream, *_ = node.args  # seeded(op)(seed, stream, *the op's arguments)
        self.seed = ctx.tensor(seed)
        if not isinstance(self.stream, int):
            raise Unsupported("the stream number must be an int")
        self.shape = list(static_shape(ctx.out_meta(node, 0 if isinstance(node.meta["val"], tuple) else None)))
        if any(s < 0 for s in self.shape):
            raise Unsupported("random ops need static shapes")
        self.dtype = dtype
        self.acc = torch.float64 if dtype == torch.float64 else torch.float32

    # ---- building blocks
    def bits(self, k: int = 0):
        """63 random bits per element (non-negative i64), from sub-stream k."""
        return dy.RandomBitsOp(self.seed, i64(4 * self.stream + k), out=self.ctx.type_like(self.const(0, I64))).out

    def const(self, number, dtype=None):
        return self.ctx.full(number, self.shape, dtype or self.acc)

    def value(self, arg):
        """A distribution parameter (number or tensor) in acc, broadcast to the shape."""
        return self.ctx.operand(arg, self.acc, self.shape)

    def op(self, name: str, *operands):
        return self.ctx.emit(name, *operands, out=operands[0].type)

    def affine(self, x, scale, offset):
        """offset + scale * x, parameters numbers or tensors."""
        return self.op("add", self.op("mul", x, self.value(scale)), self.value(offset))

    # ---- standard distributions (in acc)
    def uniform(self, k: int = 0, bits: int | None = None):
        """[0, 1) in steps of 2^-bits (acc's precision unless given)."""
        bits = bits or MANTISSA_BITS[self.acc]
        top = self.op("shr", self.bits(k), self.const(63 - bits, I64))
        return self.op("mul", self.ctx.cast(top, self.acc), self.const(2.0 ** -bits))

    def open_uniform(self, k: int = 0):
        """(0, 1]: 1 - uniform, safe to take the log of."""
        return self.op("sub", self.const(1.0), self.uniform(k))

    def normal(self):
        """Box-Muller: sqrt(-2 ln u1) cos(2 pi u2) is standard normal for independent uniforms."""
        radius = self.op("sqrt", self.op("mul", self.const(-2.0), self.op("log", self.open_uniform(0))))
        return self.op("mul", radius, self.op("cos", self.op("mul", self.const(2 * math.pi), self.uniform(1))))

    def compare(self, a, b, predicate: str):
        return compare(self.ctx, a, b, predicate)

    def result(self, value):
        return self.ctx.cast(value, self.dtype)


def _bind(node):
    """The ATen op's arguments by name (defaults filled in), from the seeded call."""
    return bind(node, schema=node.target.op._schema, skip=2)


def _uniform_range(s: Sampler, low, high):
    """[low, high): the output type's bits, so that a low of 0 and high of 1 never reach 1."""
    u = s.uniform(bits=min(MANTISSA_BITS.get(s.dtype, 24), MANTISSA_BITS[s.acc]))
    return s.affine(u, high - low, low)


def _randint(s: Sampler, low, high):
    if not all(isinstance(v, int) for v in (low, high)) or high <= low:
        raise Unsupported("randint needs integer bounds low < high")
    drawn = s.op("rem", s.bits(), s.const(high - low, I64))  # bias below 2^-63 * range: negligible
    return s.op("add", drawn, s.const(low, I64))


def _geometric(s: Sampler, p):
    """Trials up to the first success: 1 + floor(ln u / ln(1 - p)) for u in (0, 1]."""
    if not 0 < p < 1:
        raise Unsupported("geometric needs 0 < p < 1")
    trials = s.op("floor", s.op("div", s.op("log", s.open_uniform()), s.const(math.log1p(-p))))
    return s.op("add", trials, s.const(1.0))


def _bernoulli(s: Sampler, p):
    return s.compare(s.uniform(), s.value(p), "lt")


def _exponential(s: Sampler, lambd):
    """-ln(1 - u) / lambda, u in [0, 1)."""
    return s.op("div", s.op("neg", s.op("log", s.open_uniform())), s.value(lambd))


def _cauchy(s: Sampler, median, sigma):
    """median + sigma tan(pi (u - 1/2))."""
    angle = s.op("mul", s.op("sub", s.uniform(), s.const(0.5)), s.const(math.pi))
    return s.affine(s.op("tan", angle), sigma, median)


# ATen overload -> sample(sampler, bound arguments) -> values (cast to the result type after).
DISTRIBUTIONS = {
    aten.rand.default: lambda s, a: _uniform_range(s, 0.0, 1.0),
    aten.rand_like.default: lambda s, a: _uniform_range(s, 0.0, 1.0),
    aten.randn.default: lambda s, a: s.normal(),
    aten.randn_like.default: lambda s, a: s.normal(),
    aten.randint.default: lambda s, a: _randint(s, 0, a.high),
    aten.randint.low: lambda s, a: _randint(s, a.low, a.high),
    aten.randint_like.default: lambda s, a: _randint(s, 0, a.high),
    aten.randint_like.low_dtype: lambda s, a: _randint(s, a.low, a.high),
    aten.uniform.default: lambda s, a: _uniform_range(s, a["from"], a.to),
    aten.normal.Tensor_float: lambda s, a: s.affine(s.normal(), a.std, a.mean),
    aten.normal.float_Tensor: lambda s, a: s.affine(s.normal(), a.std, a.mean),
    aten.normal.Tensor_Tensor: lambda s, a: s.affine(s.normal(), a.std, a.mean),
    aten.normal.float_float: lambda s, a: s.affine(s.normal(), a.std, a.mean),
    aten.normal_functional.default: lambda s, a: s.affine(s.normal(), a.std, a.mean),
    aten.log_normal.default: lambda s, a: s.op("exp", s.affine(s.normal(), a.std, a.mean)),
    aten.bernoulli.default: lambda s, a: _bernoulli(s, a.self),
    aten.bernoulli.p: lambda s, a: _bernoulli(s, a.p),
    aten.bernoulli.Tensor: lambda s, a: _bernoulli(s, a.p),
    aten.exponential.default: lambda s, a: _exponential(s, a.lambd),
    aten.geometric.default: lambda s, a: _geometric(s, a.p),
    aten.cauchy.default: lambda s, a: _cauchy(s, a.median, a.sigma),
}


# Ops whose values are integers (or 0/1): any result type holds them.
INTEGER_VALUED = {aten.randint, aten.randint_like, aten.bernoulli}


@random_rule(*DISTRIBUTIONS)
def _sample(ctx, node):
    dtype = ctx.out_meta(node).dtype
    if dtype not in MANTISSA_BITS and node.target.op.overloadpacket not in INTEGER_VALUED:
        raise Unsupported(f"{node.target} into {dtype}")
    s = Sampler(ctx, node, dtype)
    return s.result(DISTRIBUTIONS[node.target.op](s, _bind(node)))


@random_rule(aten.rrelu_with_noise_functional.default)
def _rrelu(ctx, node):
    """Training rrelu: x * r for x <= 0 with r ~ U[lower, upper) (the noise), else x (noise 1).
    In eval mode it is a leaky relu of slope (lower + upper) / 2, and the noise is unchanged."""
    a = _bind(node)
    s = Sampler(ctx, node, ctx.out_meta(node, 0).dtype)
    x = s.value(a.self)
    negative = s.compare(x, s.const(0.0), "le")
    if not a.training:
        slope = s.const((a.lower + a.upper) / 2)
        return s.result(select(ctx, negative, s.op("mul", x, slope), x)), ctx.tensor(a.noise)
    r = _uniform_range(s, a.lower, a.upper)
    noise = select(ctx, negative, r, s.const(1.0))
    return s.result(s.op("mul", x, noise)), ctx.cast(noise, ctx.out_meta(node, 1).dtype)


@import_rule(aten.rrelu_with_noise_backward.default)
def _rrelu_backward(ctx, node):
    """rrelu's gradient: in training grad times the noise the forward drew (no randomness
    here); in eval mode a leaky relu's, grad for x > 0 else grad * (lower + upper) / 2."""
    a = bind(node)
    lower, upper = a.lower, a.upper
    dtype = ctx.out_meta(node).dtype
    grad = ctx.cast(ctx.tensor(a.grad_output), dtype)
    if a.training and upper - lower > 1e-6:
        return emit_like(ctx, "mul", grad, ctx.cast(ctx.tensor(a.noise), dtype))
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    wide = ctx.cast(grad, acc)
    scaled = ctx.cast(emit_like(ctx, "mul", wide, ctx.full((lower + upper) / 2, ctx.shape_of(wide), acc)), dtype)
    x = ctx.tensor(a.self)
    positive = compare(ctx, x, ctx.full(0, ctx.shape_of(x), ctx.dtype_of(x)), "gt")
    return select(ctx, positive, grad, scaled)
