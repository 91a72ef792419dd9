"""The op tables the generator draws from, one per family.

Every op is a template over names; `build(b, x)` fills it in for a primary operand `x` (a name the
generator picked among values whose dtype the op accepts), drawing whatever else it needs from
the builder `b` (scalars, dims, other operands, fresh inputs). An op that cannot apply returns
None; one that builds something invalid is caught when the builder evaluates it on meta
tensors (exact shapes, dtypes and strides: `view` of a transposed value is refused there, as
eagerly). Ops are listed simplest first: hypothesis shrinks a choice towards its first entry.
"""

from dataclasses import dataclass
from typing import Callable

import torch

from .program import tuple_text

F32, F16, BF16, I64, BOOL = torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool
FLOATS = frozenset({F32, F16, BF16})
NUMERIC = FLOATS | {I64}
ALL = NUMERIC | {BOOL}
INT_LIKE = frozenset({I64, BOOL})


@dataclass(frozen=True)
class Op:
    name: str
    family: str
    dtypes: frozenset                         # the primary operand's dtypes
    build: Callable                           # (builder, x) -> expression or None
    accepts: Callable = lambda m: True        # a condition on the primary operand (meta tensor)
    inplace: bool = False                     # writes its operand: not in gradient programs


def template(text: str) -> Callable:
    return lambda b, x: text.format(x=x)


# --- elementwise -----------------------------------------------------------------------------

# Functions outside their domain (log, sqrt of negatives) are composed with abs so that NaNs do
# not flood every later reduction and hide differences.
UNARY = [
    ("relu", "torch.relu({x})", NUMERIC), ("neg", "-{x}", NUMERIC), ("abs", "torch.abs({x})", NUMERIC),
    ("exp", "torch.exp({x})", FLOATS), ("tanh", "torch.tanh({x})", FLOATS),
    ("sigmoid", "torch.sigmoid({x})", FLOATS), ("gelu", "F.gelu({x})", FLOATS),
    ("gelu_tanh", "F.gelu({x}, approximate='tanh')", FLOATS), ("silu", "F.silu({x})", FLOATS),
    ("sin", "torch.sin({x})", FLOATS), ("cos", "torch.cos({x})", FLOATS), ("erf", "torch.erf({x})", FLOATS),
    ("log1p_abs", "torch.log1p(torch.abs({x}))", FLOATS), ("sqrt_abs", "torch.sqrt(torch.abs({x}))", FLOATS),
    ("rsqrt_abs1", "torch.rsqrt(torch.abs({x}) + 1)", FLOATS), ("reciprocal", "torch.reciprocal({x})", FLOATS),
    ("floor", "torch.floor({x})", FLOATS), ("square", "{x} * {x}", NUMERIC),
    ("clamp", "torch.clamp({x}, -1, 2)", NUMERIC), ("sign", "torch.sign({x})", NUMERIC),
    ("remainder", "torch.remainder({x}, 3)", NUMERIC),
    ("bitwise_not", "torch.bitwise_not({x})", INT_LIKE), ("logical_not", "torch.logical_not({x})", ALL),
]

# name, template over x and y, primary dtypes
BINARY = [
    ("add", "{x} + {y}", ALL), ("mul", "{x} * {y}", ALL), ("sub", "{x} - {y}", NUMERIC),
    ("div", "{x} / {y}", NUMERIC), ("maximum", "torch.maximum({x}, {y})", ALL),
    ("minimum", "torch.minimum({x}, {y})", ALL), ("lt", "{x} < {y}", ALL), ("le", "{x} <= {y}", ALL),
    ("gt", "{x} > {y}", ALL), ("ge", "{x} >= {y}", ALL), ("eq", "{x} == {y}", ALL), ("ne", "{x} != {y}", ALL),
    ("logical_and", "torch.logical_and({x}, {y})", ALL), ("logical_or", "torch.logical_or({x}, {y})", ALL),
    ("bitwise_and", "{x} & {y}", INT_LIKE), ("bitwise_xor", "{x} ^ {y}", INT_LIKE),
    ("atan2", "torch.atan2({x}, {y})", FLOATS),
]
# torch.maximum etc. take no Python scalar
TENSOR_ONLY = {"maximum", "minimum", "logical_and", "logical_or", "atan2"}


def binary(name: str, text: str) -> Callable:
    def build(b, x):
        y = b.other(x, scalar_ok=name not in TENSOR_ONLY)
        return text.format(x=y, y=x) if b.d.chance(25) else text.format(x=x, y=y)
    return build


def where(b, x):
    return f"torch.where({b.mask_for(x, enlarge=True)}, {x}, {b.other(x, scalar_ok=True)})"


# --- reductions ------------------------------------------------------------------------------

def reduce(fn: str, extra: str = "") -> Callable:
    def build(b, x):
        rank = b.rank(x)
        if rank == 0 or b.d.chance(8):
            return f"{fn}({x}{extra})"
        return f"{fn}({x}, dim={b.dims(rank)}, keepdim={b.d.chance(40)}{extra})"
    return build


def var(b, x):
    return reduce("torch.var", f", correction={b.d.choice([1, 0])}")(b, x)


def softmax(fn: str) -> Callable:
    return lambda b, x: f"{fn}({x}, dim={b.dim(b.rank(x))})"


# --- movement --------------------------------------------------------------------------------

def permute(b, x):
    return f"{x}.permute{tuple_text(b.permutation(b.rank(x)))}"


def transpose(b, x):
    rank = b.rank(x)
    return f"{x}.transpose({b.dim(rank)}, {b.dim(rank)})"


def reshape(method: str) -> Callable:
    return lambda b, x: f"{x}.{method}{tuple_text(b.reshaped(b.shape(x)))}"


def flatten(b, x):
    rank = b.rank(x)
    start = b.d.integer(0, rank - 1)
    return f"torch.flatten({x}, {start}, {b.d.integer(start, rank - 1)})"


def slice_(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    start, stop = b.d.integer(-shape[d], shape[d]), b.d.integer(-shape[d], shape[d] + 2)
    step = b.d.choice([1, 2, 3])
    return f"{x}[{':, ' * d}{start}:{stop}:{step}]"


def narrow(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    start = b.d.integer(0, shape[d])
    return f"{x}.narrow({d}, {start}, {b.d.integer(0, shape[d] - start)})"


def select(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    return f"{x}.select({d}, {b.d.integer(-shape[d], shape[d] - 1)})" if shape[d] else None


def cat(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    if b.d.chance(20):
        return f"torch.cat([{x}, {x}], dim={d})"
    other = list(shape)
    other[d] = b.size()
    y = b.fresh(tuple(other), b.dtype(x))
    return f"torch.cat([{x}, {y}], dim={d})" if b.d.chance(60) else f"torch.cat([{y}, {x}], dim={d - len(shape)})"


def expand(b, x):
    # size-1 dims grow; -1 keeps a dim; sometimes one new leading dim
    sizes = [b.d.integer(1, 4) if s == 1 else b.d.choice([s, -1]) for s in b.shape(x)]
    lead = [b.d.integer(1, 3)] if b.d.chance(40) or not sizes else []
    return f"{x}.expand{tuple_text(lead + sizes)}"


def squeeze(b, x):
    shape = b.shape(x)
    ones = [i for i, s in enumerate(shape) if s == 1]
    return f"{x}.squeeze({b.d.choice(ones)})" if ones and b.d.chance(70) else f"{x}.squeeze()"


def unsqueeze(b, x):
    rank = b.rank(x)
    return f"{x}.unsqueeze({b.d.integer(-rank - 1, rank)})"


def flip(b, x):
    return f"torch.flip({x}, {b.dims(b.rank(x))})"


# --- indexing --------------------------------------------------------------------------------

def index_select(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    if not shape[d]:
        return None
    index = b.fresh((b.d.integer(0, 5),), I64, kind="index", high=shape[d])
    return f"torch.index_select({x}, {d}, {index})"


def gather(b, x):
    shape = b.shape(x)
    d = b.d.integer(0, len(shape) - 1)
    if not shape[d]:
        return None
    sizes = tuple(b.d.integer(1, 4) if i == d else b.d.integer(min(s, 1), s) for i, s in enumerate(shape))
    return f"torch.gather({x}, {d}, {b.fresh(sizes, I64, kind='index', high=shape[d])})"


def embedding(b, x):
    rows = b.shape(x)[0]
    index = b.fresh(b.new_shape(max_rank=2), I64, kind="index", high=rows)
    return f"F.embedding({index}, {x})"


def masked_fill(b, x):
    return f"{x}.masked_fill({b.mask_for(x, enlarge=False)}, {b.scalar(b.dtype(x))})"


def index_tensor(b, x):
    index = b.fresh(b.new_shape(max_rank=2), I64, kind="index", high=b.shape(x)[0])
    return f"{x}[{index}]"


# --- matmul ----------------------------------------------------------------------------------

def matmul(b, x):
    shape, dtype = b.shape(x), b.dtype(x)
    if len(shape) >= 2 and b.d.chance(15):
        return f"torch.matmul({x}, {x}.transpose(-2, -1))"
    k, n = shape[-1], b.size()
    batch = shape[:-2] if len(shape) >= 3 and b.d.chance(50) else ()
    y_shape = b.d.choice([(*batch, k, n), (k,)])
    return f"torch.matmul({x}, {b.fresh(y_shape, dtype)})"


def bmm(b, x):
    batch, _, k = b.shape(x)
    return f"torch.bmm({x}, {b.fresh((batch, k, b.size()), b.dtype(x))})"


def addmm(b, x):
    (m, k), dtype = b.shape(x), b.dtype(x)
    n = b.size()
    # a full [m, n] self too: the gemm accumulates into it, which must never write the caller's
    # tensor (codegen/stages.read_only_arguments)
    bias = b.fresh(b.d.choice([(n,), (1, n), (m, 1), (m, n)]), dtype)
    return f"torch.addmm({bias}, {x}, {b.fresh((k, n), dtype)})"


def linear(b, x):
    k, dtype, n = b.shape(x)[-1], b.dtype(x), b.size()
    bias = b.fresh((n,), dtype) if b.d.chance(70) else None
    return f"F.linear({x}, {b.fresh((n, k), dtype)}, {bias})"


# --- norms -----------------------------------------------------------------------------------

def affine(b, shape, dtype, contiguous: bool = False) -> tuple[str | None, str | None]:
    """A norm's optional weight and bias."""
    return tuple(b.fresh(shape, dtype, contiguous=contiguous) if b.d.chance(70) else None for _ in range(2))


def layer_norm(b, x):
    shape = b.shape(x)
    normalized = shape[len(shape) - b.d.integer(1, min(2, len(shape))):]
    w, bias = affine(b, normalized, b.dtype(x))
    return f"F.layer_norm({x}, {tuple_text(normalized)}, {w}, {bias})"


def group_norm(b, x):
    channels = b.shape(x)[1]
    groups = b.d.choice([g for g in range(1, channels + 1) if channels % g == 0])
    w, bias = affine(b, (channels,), b.dtype(x))
    return f"F.group_norm({x}, {groups}, {w}, {bias})"


def batch_norm(b, x):
    channels, dtype = b.shape(x)[1], b.dtype(x)
    # All contiguous: eager's CPU backward (torch 2.13) reads a strided or expanded running_var
    # as if it were contiguous (gradients off by 100x), and with an expanded weight and a 2-d
    # input returns NaN gradients about one run in three (uninitialized memory).
    mean = b.fresh((channels,), dtype, grad=False, contiguous=True)
    variance = b.fresh((channels,), dtype, kind="positive", grad=False, contiguous=True)
    w, bias = affine(b, (channels,), dtype, contiguous=True)
    return f"F.batch_norm({x}, {mean}, {variance}, {w}, {bias}, training=False)"


# --- in place (inputs written: compared after the call with eager's) ------------------------

def inplace_binary(method: str) -> Callable:
    return lambda b, x: f"{x}.{method}({b.other(x, scalar_ok=True, enlarge=False)})"


def writable(m) -> bool:
    """No two elements share memory (an expanded value is not): eager refuses to write those."""
    return all(stride or size <= 1 for size, stride in zip(m.shape, m.stride()))


def rank_at_least(n: int) -> Callable:
    return lambda m: m.dim() >= n


def nonempty_rows(m) -> bool:
    return m.dim() >= 1 and m.shape[0] > 0


def _ops() -> list[Op]:
    ops = [Op(name, "unary", dtypes, template(text)) for name, text, dtypes in UNARY]
    ops += [Op(name, "binary", dtypes, binary(name, text)) for name, text, dtypes in BINARY]
    ops += [Op("where", "binary", ALL, where)]
    at1, at2 = rank_at_least(1), rank_at_least(2)
    ops += [
        Op("sum", "reduction", ALL, reduce("torch.sum")),
        Op("mean", "reduction", FLOATS, reduce("torch.mean")),
        Op("amax", "reduction", NUMERIC, reduce("torch.amax")),
        Op("amin", "reduction", NUMERIC, reduce("torch.amin")),
        # not bfloat16: var/std crash on CPUs without AVX-512-BF16, a known bug (issue 22)
        Op("var", "reduction", FLOATS - {BF16}, var),
        Op("softmax", "reduction", FLOATS, softmax("torch.softmax")),
        Op("log_softmax", "reduction", FLOATS, softmax("torch.log_softmax")),
        Op("permute", "movement", ALL, permute, at2),
        Op("transpose", "movement", ALL, transpose, at2),
        Op("t", "movement", ALL, template("{x}.t()"), lambda m: m.dim() == 2),
        Op("reshape", "movement", ALL, reshape("reshape")),
        Op("view", "movement", ALL, reshape("view")),
        Op("flatten", "movement", ALL, flatten, at1),
        Op("slice", "movement", ALL, slice_, at1),
        Op("narrow", "movement", ALL, narrow, at1),
        Op("select", "movement", ALL, select, at1),
        Op("cat", "movement", ALL, cat, at1),
        Op("expand", "movement", ALL, expand),
        Op("squeeze", "movement", ALL, squeeze),
        Op("unsqueeze", "movement", ALL, unsqueeze),
        Op("flip", "movement", ALL, flip, at1),
        Op("index_select", "indexing", ALL, index_select, at1),
        Op("gather", "indexing", ALL, gather, at1),
        Op("embedding", "indexing", FLOATS, embedding, lambda m: m.dim() == 2 and m.shape[0] > 0),
        Op("masked_fill", "indexing", ALL, masked_fill),
        Op("index", "indexing", ALL, index_tensor, nonempty_rows),
        Op("matmul", "matmul", FLOATS, matmul, at1),
        Op("bmm", "matmul", FLOATS, bmm, lambda m: m.dim() == 3),
        Op("addmm", "matmul", FLOATS, addmm, lambda m: m.dim() == 2),
        Op("linear", "matmul", FLOATS, linear, at1),
        Op("layer_norm", "norm", FLOATS, layer_norm, at1),
        Op("group_norm", "norm", FLOATS, group_norm, lambda m: m.dim() >= 2 and m.shape[1] > 0),
        Op("batch_norm", "norm", FLOATS, batch_norm, at2),
        Op("add_", "inplace", NUMERIC, inplace_binary("add_"), writable, inplace=True),
        Op("mul_", "inplace", NUMERIC, inplace_binary("mul_"), writable, inplace=True),
        Op("relu_", "inplace", NUMERIC, template("{x}.relu_()"), writable, inplace=True),
        Op("clamp_", "inplace", NUMERIC, template("{x}.clamp_(-1, 1)"), writable, inplace=True),
    ]
    return ops


OPS = _ops()
FAMILIES = ["unary", "binary", "movement", "reduction", "indexing", "matmul", "norm", "inplace"]
BY_FAMILY = {f: [op for op in OPS if op.family == f] for f in FAMILIES}
