"""The target-specific lowering (cpu and cuda): fused.rms_norm straight to linalg, as three ops
over the rows instead of the generic expansion's chain of core ops:

  1. a reduction over each row: sum(float(x)^2) into a float32 accumulator;
  2. per row: inv = rsqrt(sum / n + eps) (row-sized, computed once per row, not per element);
  3. one elementwise generic: out = T(float(w) * float(T(float(x) * inv))), reading x, the row's
     inv and the weight.

x is read twice and the result written once. On cpu these become two loop nests (plus the
row-sized one); on cuda the row fusion (codegen/gpu/rowfuse.py: a fill, a row reduction, a
per-row op and a full-row elementwise op over the same rows) makes them one kernel, one block
per row, the row read from memory once."""

from torch_mlir import ir
from torch_mlir.dialects import arith, linalg, math, tensor

from dynamo_mlir import plugin

from .dialect import RMSNormOp, eps_of

PARALLEL, REDUCTION = "parallel", "reduction"
# Partial sums per row on cpu, the first that divides the row: 4 AVX2 vectors of f32 in flight.
LANES = (32, 16, 8, 4, 2, 1)


def _ranked(value) -> ir.RankedTensorType:
    return ir.RankedTensorType(value.type)


def _empty(shape, elem):
    return tensor.empty(list(shape), elem)


def _map(rank: int, dims) -> ir.AffineMapAttr:
    return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in dims]))


def _generic(inputs, init, maps, iterators, body):
    op = linalg.GenericOp([init.type], list(inputs), [init], ir.ArrayAttr.get(maps),
                          ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in iterators]))
    block = op.regions[0].blocks.append(*[_ranked(v).element_type for v in (*inputs, init)])
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(*block.arguments)])
    return op.results[0]


def _to(value, elem):
    """Float conversion to elem (extend or round to nearest even), none when already elem."""
    width = lambda t: ir.FloatType(t).width  # noqa: E731
    if value.type == elem:
        return value
    return arith.extf(elem, value) if width(elem) > width(value.type) else arith.truncf(elem, value)


def _zeros(shape, f32):
    zero = arith.constant(f32, ir.FloatAttr.get(f32, 0.0))
    return linalg.fill(zero, outs=[_empty(shape, f32)])


def _square_add(a, acc):
    f32 = acc.type
    return arith.addf(acc, arith.mulf(_to(a, f32), _to(a, f32)))


def _row_sums(x, f32):
    """sum(float(x)^2) over the last dim: one reduction generic into a zero-filled accumulator
    per row (the form cuda's row fusion recognizes: trailing reduction, f32 output)."""
    t = _ranked(x)
    rank = t.rank
    return _generic([x], _zeros(t.shape[:-1], f32), [_map(rank, range(rank)), _map(rank, range(rank - 1))],
                    [PARALLEL] * (rank - 1) + [REDUCTION], _square_add)


def lanes_for(n: int) -> int:
    return next(lanes for lanes in LANES if n % lanes == 0)


def _lane_sums(x, f32):
    """sum(float(x)^2) over the last dim in `lanes` independent partial sums per row, then those
    summed. A single accumulator is a serial chain of adds the compiler may not reorder (float
    addition does not reassociate) and cannot vectorize; lanes are independent, so the inner
    loop over them vectorizes, and partial sums are also more accurate than one long chain.

    Loops (rows..., chunk, lane): x[rows, chunk * lanes + lane] adds into acc[rows, lane]. The
    chunk loop's size comes from an unread operand of shape [n / lanes] (a linalg loop's range
    must be some operand's dim; x's index is not a plain dim)."""
    t = _ranked(x)
    rank, n = t.rank, t.shape[-1]
    lanes = lanes_for(n)
    rows = list(range(rank - 1))
    loops = rank + 1
    chunk, lane = ir.AffineDimExpr.get(rank - 1), ir.AffineDimExpr.get(rank)
    x_map = ir.AffineMapAttr.get(ir.AffineMap.get(loops, 0, [ir.AffineDimExpr.get(d) for d in rows] + [chunk * lanes + lane]))
    chunks = tensor.empty([n // lanes], f32)
    partial = _generic([x, chunks], _zeros(t.shape[:-1] + [lanes], f32),
                       [x_map, _map(loops, [rank - 1]), _map(loops, rows + [rank])],
                       [PARALLEL] * (rank - 1) + [REDUCTION, PARALLEL], lambda a, _, acc: _square_add(a, acc))
    add = lambda p, acc: arith.addf(acc, p)  # noqa: E731
    return _generic([partial], _zeros(t.shape[:-1], f32), [_map(rank, range(rank)), _map(rank, rows)],
                    [PARALLEL] * (rank - 1) + [REDUCTION], add)


def _inverse_rms(sums, n: int, eps: float, f32):
    """rsqrt(sum / n + eps) per row (divided, not multiplied by 1/n: eager's mean divides)."""
    rank = _ranked(sums).rank
    n_c, eps_c = (arith.constant(f32, ir.FloatAttr.get(f32, v)) for v in (float(n), eps))
    body = lambda s, _: math.rsqrt(arith.addf(arith.divf(s, n_c), eps_c))  # noqa: E731
    return _generic([sums], _empty(_ranked(sums).shape, f32), [_map(rank, range(rank))] * 2,
                    [PARALLEL] * rank, body)


def _scale(x, inv, weight, f32):
    t = _ranked(x)
    rank, elem = t.rank, t.element_type

    def body(a, r, w, _):
        normed = _to(arith.mulf(_to(a, f32), r), elem)  # rounded once to x's type, as eager does
        return _to(arith.mulf(_to(w, f32), _to(normed, f32)), elem)

    maps = [_map(rank, range(rank)), _map(rank, range(rank - 1)), _map(rank, [rank - 1]), _map(rank, range(rank))]
    return _generic([x, inv, weight], _empty(t.shape, elem), maps, [PARALLEL] * rank, body)


def _lowering(row_sums):
    def lower(ctx, op):
        f32 = ir.F32Type.get()
        n = _ranked(op.x).shape[-1]
        inv = _inverse_rms(row_sums(op.x, f32), n, eps_of(op), f32)
        return _scale(op.x, inv, op.weight, f32)

    return lower


lower_cpu = _lowering(_lane_sums)
lower_cuda = _lowering(_row_sums)

# Targets must exist before a rule names them: get_target loads the registered ones.
RULES = {"cpu": lower_cpu, "cuda": lower_cuda}
for _name, _rule in RULES.items():
    plugin.get_target(_name)
    plugin.register_lowering(RMSNormOp, _rule, target=_name)
