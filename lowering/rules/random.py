"""dynamo.random_bits -> one linalg.generic hashing (seed, stream, element index).

The hash is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", 2014): a Weyl sequence state += GAMMA, then a finalizer of xor-shifts and
multiplications that makes every output bit depend on every state bit. Element i of stream s
takes the (i+1)-th output of the SplitMix64 generator whose initial state is the finalized
(seed + (s+1) * GAMMA): a counter-based generator, so elements need no sequential state and any
loop order (or GPU thread) gives the same tensor.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith

from ...dialects import dynamo as dy
from ..registry import register_lowering
from ..scalar import const
from .common import PARALLEL, affine_map, empty, generic, identity, loop_index, ranked

GAMMA = 0x9E3779B97F4A7C15  # 2^64 / golden ratio, odd: the Weyl increment
MIX = ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None))  # (shift, multiplier)


def _i64(value: int) -> int:
    """An unsigned 64-bit constant as the signed value of the same bits."""
    value %= 1 << 64
    return value - (1 << 64) if value >= 1 << 63 else value


def _mix(z: ir.Value) -> ir.Value:
    """SplitMix64's finalizer: z ^= z >> shift, then multiply, for each (shift, multiplier)."""
    for shift, multiplier in MIX:
        z = arith.xori(z, arith.shrui(z, const(z.type, shift)))
        if multiplier is not None:
            z = arith.muli(z, const(z.type, _i64(multiplier)))
    return z


@register_lowering(dy.RandomBitsOp)
def _lower_random_bits(ctx, op):
    out = ranked(op.out)
    i64 = out.element_type
    stream = ir.IntegerAttr(op.stream).value
    strides = [1] * out.rank
    for d in reversed(range(out.rank - 1)):
        strides[d] = strides[d + 1] * out.shape[d + 1]

    def body(seed, _):
        key = _mix(arith.addi(seed, const(i64, _i64((stream + 1) * GAMMA))))
        index = const(i64, 1)  # counters start at 1: the (index+1)-th output
        for d, stride in enumerate(strides):
            i = arith.index_cast(i64, loop_index(d))
            index = arith.addi(index, arith.muli(i, const(i64, stride)))
        state = arith.addi(key, arith.muli(index, const(i64, _i64(GAMMA))))
        return [arith.shrui(_mix(state), const(i64, 1))]  # 63 bits: non-negative as i64

    return generic([op.seed], [empty(out)], [affine_map(out.rank, []), identity(out.rank)],
                   [PARALLEL] * out.rank, body)[0]
