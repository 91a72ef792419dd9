"""Data movement: explicit broadcast (static or like another tensor), reshape, permute, slice,
concat, pad: ops that move elements without computing new values."""

from typing import Any, Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Operand, Pure, Result

from .base import Dynamo, _checked, _require, tensor_type, shape_of, elem_of, dims_compatible, int_list, int_list_attribute, DYN, unit_dim_map, _verify_sizes, with_optional_sizes


@with_optional_sizes
class BroadcastOp(Dynamo.Operation, name="broadcast", traits=[Pure]):
    """Explicit broadcast: operand dim i becomes result dim `dims[i]` (size equal, or 1 -> n).
    `sizes` (index values) give the result's dynamic dims, one per `?` in order; they may be
    left out when every `?` result dim is an operand dim of size `?` (its size is read there).

    Example (a row vector to a matrix, then to a matrix with a dynamic row count):
      %y = "dynamo.broadcast"(%x) {dims = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0>}
             : (tensor<8xf32>) -> tensor<4x8xf32>
      %z = "dynamo.broadcast"(%x, %n) {dims = array<i64: 1>, operandSegmentSizes = array<i32: 1, 1>}
             : (tensor<8xf32>, index) -> tensor<?x8xf32>
    """

    x: Operand[ir.RankedTensorType]
    sizes: Sequence[Operand[ir.IndexType]]
    out: Result[ir.RankedTensorType]
    dims: Any = int_list_attribute()

    @_checked
    def verify_invariants(self):
        src, out, dims = shape_of(self.x), shape_of(self.out), int_list(self.dims)
        _require(len(dims) == len(src), f"dims {dims} must name one result dim per operand dim")
        _require(dims == sorted(set(dims)) and all(0 <= d < len(out) for d in dims),
                 f"dims {dims} must be increasing and within the result rank {len(out)}")
        for i, d in enumerate(dims):
            _require(src[i] in (1, out[d]) or ir.ShapedType.get_dynamic_size() in (src[i], out[d]),
                     f"operand dim {i} (size {src[i]}) cannot broadcast to size {out[d]}")
        _require(elem_of(self.x) == elem_of(self.out), "broadcast cannot change the element type")
        carried = {d: src[i] for i, d in enumerate(dims)}
        _verify_sizes(self, out, lambda d, _: carried.get(d) == DYN)


@with_optional_sizes
class ReshapeOp(Dynamo.Operation, name="reshape", traits=[Pure]):
    """Reinterprets a (row-major) tensor with another shape of the same element count.
    `sizes` (index values) give the result's dynamic dims, one per `?` in order; they may be
    left out when the reshape only inserts or removes size-1 dims (each `?` is an operand's `?`).

    Example (static, then flattening two dynamic dims):
      %y = "dynamo.reshape"(%x) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4x8xf32>) -> tensor<32xf32>
      %z = "dynamo.reshape"(%x, %bt) {operandSegmentSizes = array<i32: 1, 1>}
             : (tensor<?x?x64xf32>, index) -> tensor<?x64xf32>
    """

    x: Operand[ir.RankedTensorType]
    sizes: Sequence[Operand[ir.IndexType]]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out = tensor_type(self.x), tensor_type(self.out)
        if src.has_static_shape and out.has_static_shape:
            n_src = 1
            for s in src.shape:
                n_src *= s
            n_out = 1
            for s in out.shape:
                n_out *= s
            _require(n_src == n_out, f"element count changes ({src} -> {out})")
        _require(src.element_type == out.element_type, "reshape cannot change the element type")
        unit_map = unit_dim_map(list(src.shape), list(out.shape)) or {}
        _verify_sizes(self, list(out.shape), lambda d, _: src.shape[unit_map[d]] == DYN if d in unit_map else False)


class PermuteOp(Dynamo.Operation, name="permute", traits=[Pure]):
    """Transposes dims: result dim i is operand dim `perm[i]`.

    Example:
      %y = "dynamo.permute"(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    x: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]
    perm: Any = int_list_attribute()

    @_checked
    def verify_invariants(self):
        src, out, perm = shape_of(self.x), shape_of(self.out), int_list(self.perm)
        _require(sorted(perm) == list(range(len(src))), f"perm {perm} is not a permutation of rank {len(src)}")
        _require(dims_compatible([src[p] for p in perm], out), f"result shape {out} does not match perm {perm}")


def _bounds_optional(cls: type) -> type:
    """SliceOp(x, start, step, offsets=(), sizes=(), out=...): static slices are built as before
    the run-time bounds came, with the operands that carry those left out."""
    generated = cls.__init__

    def __init__(self, x, start, step, offsets=(), sizes=(), **kwargs):
        generated(self, x, list(offsets), list(sizes), start=start, step=step, **kwargs)

    __init__.__doc__ = generated.__doc__
    cls.__init__ = __init__
    return cls


@_bounds_optional
class SliceOp(Dynamo.Operation, name="slice", traits=[Pure]):
    """Strided slice: result[i...] = x[start + i * step ...].

    Static bounds: sizes come from the result type; a `?` result dim with no `sizes` is the rest
    of the operand's `?` dim from `start`, step 1. Bounds known only at run time (a slice by
    SymInts) follow tensor.extract_slice: a `start` entry `?` (MLIR's dynamic marker) takes the
    next value of `offsets`, and `sizes` give the result's `?` dims, one per `?` in order. The
    importer computes them with Python's slicing rules, so the box stays inside the operand:
    the verifier can check only what is static.

    Examples (every other row; then rows [%o, %o + %n) of a dynamic operand):
      %y = "dynamo.slice"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, start = array<i64: 0, 0>,
             step = array<i64: 2, 1>} : (tensor<8x4xf32>) -> tensor<4x4xf32>
      %z = "dynamo.slice"(%x, %o, %n) {operandSegmentSizes = array<i32: 1, 1, 1>,
             start = array<i64: -9223372036854775808, 0>, step = array<i64: 1, 1>}
             : (tensor<?x4xf32>, index, index) -> tensor<?x4xf32>
    """

    x: Operand[ir.RankedTensorType]
    offsets: Sequence[Operand[ir.IndexType]]
    sizes: Sequence[Operand[ir.IndexType]]
    out: Result[ir.RankedTensorType]
    start: Any
    step: Any

    @_checked
    def verify_invariants(self):
        src, out = shape_of(self.x), shape_of(self.out)
        start, step = int_list(self.start), int_list(self.step)
        _require(len(start) == len(step) == len(src) == len(out), "start/step/result rank must equal the operand rank")
        _require(len(self.offsets) == start.count(DYN), f"{len(self.offsets)} offsets given for {start.count(DYN)} `?` starts")
        for d, (b, s, n, m) in enumerate(zip(start, step, out, src)):
            _require(s >= 1 and (b >= 0 or b == DYN), f"dim {d}: start must be >= 0 and step >= 1")
            if DYN not in (b, n, m) and n > 0:
                _require(b + (n - 1) * s < m, f"dim {d}: slice runs past the operand (size {m})")
        if len(self.sizes):
            _require(len(self.sizes) == out.count(DYN), f"{len(self.sizes)} sizes given for {out.count(DYN)} dynamic result dims")
            return
        for d, (b, s, n, m) in enumerate(zip(start, step, out, src)):
            if n == DYN:  # without sizes, the lowering reads a dynamic result size off the operand
                _require(m == DYN and s == 1 and b != DYN,
                         f"dim {d}: a dynamic result dim without sizes must be the operand's dim from a static start, step 1")


class ConcatOp(Dynamo.Operation, name="concat", traits=[Pure]):
    """Concatenates two tensors along `dim` (n-ary concatenation is a chain of these: IRDL binds
    one type to all elements of a variadic operand, so a variadic form would force equal shapes).

    Example:
      %y = "dynamo.concat"(%a, %b) {dim = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
    """

    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        dim, out = ir.IntegerAttr(self.dim).value, shape_of(self.out)
        _require(0 <= dim < len(out), f"dim {dim} out of range for rank {len(out)}")
        for v in (self.lhs, self.rhs):
            s = shape_of(v)
            _require(len(s) == len(out) and dims_compatible(s[:dim] + s[dim + 1:], out[:dim] + out[dim + 1:]),
                     f"operand {tensor_type(v)} does not match result {tensor_type(self.out)} off dim {dim}")
            _require(elem_of(v) == elem_of(self.out), "operand element types differ")
        a, b = shape_of(self.lhs)[dim], shape_of(self.rhs)[dim]
        if ir.ShapedType.get_dynamic_size() not in (a, b, out[dim]):
            _require(a + b == out[dim], f"result dim {dim} must be {a} + {b}")


class PadOp(Dynamo.Operation, name="pad", traits=[Pure]):
    """Pads with a scalar (0-d tensor) value: `low[i]`/`high[i]` elements before/after dim i.

    Example:
      %y = "dynamo.pad"(%x, %zero) {low = array<i64: 1>, high = array<i64: 2>}
             : (tensor<4xf32>, tensor<f32>) -> tensor<7xf32>
    """

    x: Operand[ir.RankedTensorType]
    value: Operand[ir.RankedTensorType]
    low: Any
    high: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out = shape_of(self.x), shape_of(self.out)
        low, high = int_list(self.low), int_list(self.high)
        _require(len(low) == len(high) == len(src) == len(out), "low/high must have one entry per dim")
        _require(shape_of(self.value) == [] and elem_of(self.value) == elem_of(self.x), "value must be a 0-d tensor of the element type")
        _require(all(v >= 0 for v in low + high), "negative padding is a slice, not a pad")
        _require(dims_compatible([s + lo + hi for s, lo, hi in zip(src, low, high)], out), "result shape mismatch")


# ----------------------------------------------------------------------------- dynamic sizes
# Ops whose result sizes are not all known statically read them off an operand at run time.


class BroadcastLikeOp(Dynamo.Operation, name="broadcast_like", traits=[Pure]):
    """`dynamo.broadcast` whose result takes the shape of `like` (its `?` dims included):
    operand dim i becomes result dim `dims[i]`. Used where a broadcast adds a dynamic dim.

    Example:
      %y = "dynamo.broadcast_like"(%b, %x) {dims = array<i64: 1>}
             : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    """

    x: Operand[ir.RankedTensorType]
    like: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]
    dims: Any = int_list_attribute()

    @_checked
    def verify_invariants(self):
        src, out, dims = shape_of(self.x), shape_of(self.out), int_list(self.dims)
        _require(dims_compatible(shape_of(self.like), out), "result shape must be like's")
        _require(len(dims) == len(src) and dims == sorted(set(dims)) and all(0 <= d < len(out) for d in dims),
                 f"dims {dims} must be increasing, one per operand dim, within the result rank")
        _require(elem_of(self.x) == elem_of(self.out), "broadcast cannot change the element type")
