"""Scatters -> serial scf.for loop nests.

Each op starts from a fresh copy of dest and walks the update's iteration space row-major,
carrying the result tensor through the loops as an iter_arg: tensor.extract reads the target,
tensor.insert writes the combined value (one-shot bufferization makes that an in-place store).
Serial, row-major order is the order of PyTorch's CPU kernels, so duplicate targets combine as in
eager. Loops outside a linalg.generic are not for the CUDA pipeline: the rules require "serial_loops",
which cuda lacks; the cuda target has rules of its own for index_put and scatter (torch calls,
codegen/cuda/library_calls.py), and leaves masked_scatter to eager.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from ...dialects import dynamo as dy
from ..loops import loop_nest
from ..registry import register_lowering
from ..scalar import Scalar, const, identity_of, index, is_float, isnan
from .common import dim_value, dim_values, elementwise, fresh_copy, ranked


def _wrap(i: ir.Value, size: ir.Value) -> ir.Value:
    """An integer index as a position in [0, size): negative ones count from the end, as in
    eager; anything else out of range is reduced modulo size, so no store leaves the tensor."""
    n = arith.index_cast(i.type, size)
    r = arith.remsi(i, n)
    r = arith.select(arith.cmpi(arith.CmpIPredicate.slt, r, const(i.type, 0)), arith.addi(r, n), r)
    return arith.index_cast(ir.IndexType.get(), r)


# ----------------------------------------------------------------------------- combines


def _select(cond, a, b):
    """arith.select, on the bit patterns for 16-bit floats: x86 LLVM would promote a bf16/f16
    select through float32 and back with a compiler-rt call the JIT does not have."""
    if not (is_float(a.type) and ir.FloatType(a.type).width == 16):
        return arith.select(cond, a, b)
    bits = ir.IntegerType.get_signless(16)
    picked = arith.select(cond, arith.bitcast(bits, a), arith.bitcast(bits, b))
    return arith.bitcast(a.type, picked)


def _max(old, new):
    """eager's scatter max: a NaN update wins, else std::max(old, new) (keeps old on ties/NaN)."""
    if not is_float(new.type):
        return arith.maxsi(old, new)
    take = arith.cmpf(arith.CmpFPredicate.OLT, old, new)
    return _select(isnan(new).v, new, _select(take, new, old))


def _min(old, new):
    if not is_float(new.type):
        return arith.minsi(old, new)
    take = arith.cmpf(arith.CmpFPredicate.OLT, new, old)
    return _select(isnan(new).v, new, _select(take, new, old))


def _add(a, b):
    return (Scalar(a) + b).v


def _mul(a, b):
    return (Scalar(a) * b).v


# reduce -> (combine(old, new), the combiner whose identity include_self=False starts a target
# from: scalar.IDENTITIES' builders take any element type, so the float op's serves ints too)
COMBINES = {
    "assign": (lambda old, new: new, None),
    "sum": (_add, arith.addf),
    "mean": (_add, arith.addf),
    "prod": (_mul, arith.mulf),
    "amax": (_max, arith.maximumf),
    "amin": (_min, arith.minimumf),
}


# ----------------------------------------------------------------------------- index_put


@register_lowering(dy.IndexPutOp, requires={"serial_loops"})
def _lower_index_put(ctx, op):
    indices = list(op.indices)
    k, nb = len(indices), ranked(indices[0]).rank
    accumulate = ir.IntegerAttr(op.accumulate).value != 0
    dest_sizes = [dim_value(op.dest, d) for d in range(k)]

    def body(ivs, carried):
        (acc,) = carried
        b, rest = ivs[:nb], ivs[nb:]
        target = [_wrap(tensor.extract(i, b), n) for i, n in zip(indices, dest_sizes)] + rest
        v = tensor.extract(op.values, ivs)
        if accumulate:
            v = _add(tensor.extract(acc, target), v)
        return [tensor.insert(v, acc, target)]

    return loop_nest(dim_values(op.values), [fresh_copy(op.dest)], body)[0]


# ----------------------------------------------------------------------------- scatter


@register_lowering(dy.ScatterOp, requires={"serial_loops"})
def _lower_scatter(ctx, op):
    dim = ir.IntegerAttr(op.dim).value
    reduce = ir.StringAttr(op.reduce).value
    include_self = ir.IntegerAttr(op.include_self).value != 0
    elem = ranked(op.out).element_type
    combine, identity = COMBINES[reduce]
    dim_size = dim_value(op.dest, dim)
    bounds = dim_values(op.index)

    def target(ivs):
        coords = list(ivs)
        coords[dim] = _wrap(tensor.extract(op.index, ivs), dim_size)
        return coords

    acc = fresh_copy(op.dest)
    if not include_self and identity is not None:  # targets start from the identity
        start = identity_of(identity, elem)
        acc = loop_nest(bounds, [acc], lambda ivs, c: [tensor.insert(start, c[0], target(ivs))])[0]
    if reduce != "mean":
        def body(ivs, carried):
            t = target(ivs)
            v = combine(tensor.extract(carried[0], t), tensor.extract(op.src, ivs))
            return [tensor.insert(v, carried[0], t)]

        return loop_nest(bounds, [acc], body)[0]
    return _scatter_mean(op, acc, bounds, target, include_self)


def _scatter_mean(op, acc, bounds, target, include_self):
    """Sum and count per target (the count in dest's type, as eager keeps it), then divide where
    the count is not 0 (integers round toward -inf, as eager's floor division)."""
    out_t = ranked(op.out)
    elem = out_t.element_type
    count = elementwise([op.dest], out_t, lambda _: const(elem, 1 if include_self else 0))
    one = const(elem, 1)

    def body(ivs, carried):
        total, n = carried
        t = target(ivs)
        total = tensor.insert(_add(tensor.extract(total, t), tensor.extract(op.src, ivs)), total, t)
        n = tensor.insert(_add(tensor.extract(n, t), one), n, t)
        return [total, n]

    total, n = loop_nest(bounds, [acc, count], body)

    def divide(s, c):
        if is_float(elem):
            zero = arith.cmpf(arith.CmpFPredicate.OEQ, c, const(elem, 0))
            return _select(zero, s, arith.divf(s, c))
        zero = arith.cmpi(arith.CmpIPredicate.eq, c, const(elem, 0))
        return arith.select(zero, s, arith.floordivsi(s, arith.select(zero, one, c)))

    return elementwise([total, n], out_t, divide)


# ----------------------------------------------------------------------------- masked_scatter


@register_lowering(dy.MaskedScatterOp, requires={"serial_loops"})
def _lower_masked_scatter(ctx, op):
    """A running count of the true positions seen so far picks each one's source element; it is
    capped at the last source element (eager raises when the source is too short)."""
    last = arith.subi(dim_value(op.source, 0), index(1))
    zero, one = index(0), index(1)

    def body(ivs, carried):
        acc, k = carried
        m = tensor.extract(op.mask, ivs)
        v = tensor.extract(op.source, [arith.minui(k, last)])
        v = _select(m, v, tensor.extract(acc, ivs))
        return [tensor.insert(v, acc, ivs), arith.addi(k, arith.select(m, one, zero))]

    return loop_nest(dim_values(op.dest), [fresh_copy(op.dest), zero], body)[0]
