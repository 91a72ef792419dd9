"""The `dynamo` dialect: tensor-level ops that ATen graphs are imported into.

Conventions every op keeps (its verifier checks them):
- operands are ranked tensors; broadcasting is explicit (`dynamo.broadcast`), so elementwise ops
  see operands of one shape;
- dtype promotion is already done (`dynamo.cast`), so elementwise operands share one element type;
- dims are static or dynamic (`?`); shapes are checked where both sides are static.

Ops are defined in Python on `mlir.dialects.ext` (IRDL-backed): they are real MLIR ops that print
in generic form and re-parse. Elementwise ops are made from tables (one verifier fits them all);
structured ops are written out below.
"""


from typing import Any, Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Dialect, Operand, Pure, Result, attribute


class Dynamo(Dialect, name="dynamo"):
    """Tensor-level ops of dynamo-mlir (see the module docstring)."""


# ----------------------------------------------------------------------------- verifier helpers


class VerifyError(Exception):
    pass


def _fail(op, message: str) -> bool:
    op.location.emit_error(f"'{op.OPERATION_NAME}' {message}")
    return False


def _checked(check):
    """Turn a function that raises VerifyError into an ext verifier returning bool."""

    def verify_invariants(self) -> bool:
        try:
            check(self)
        except VerifyError as e:
            return _fail(self, str(e))
        return True

    verify_invariants.__doc__ = check.__doc__
    return verify_invariants


def tensor_type(value) -> ir.RankedTensorType:
    t = value.type
    if not isinstance(t, ir.RankedTensorType):
        t = ir.RankedTensorType(t)
    return t


def shape_of(value) -> list[int]:
    return list(tensor_type(value).shape)


def elem_of(value) -> ir.Type:
    return tensor_type(value).element_type


def dims_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    dyn = ir.ShapedType.get_dynamic_size()
    return len(a) == len(b) and all(x == y or dyn in (x, y) for x, y in zip(a, b))


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise VerifyError(message)


def _empty_i64_array():
    return ir.DenseI64ArrayAttr.get([])


def int_list_attribute():
    """A list-of-ints attribute that may be empty (ext drops falsy attributes without this).
    Such fields are keyword-only in the op builder."""
    return attribute(default_factory=_empty_i64_array)


def int_list(attr) -> list[int]:
    """The values of a dense i64 array attribute (how every list attribute here is stored)."""
    return list(ir.DenseI64ArrayAttr(attr))


DYN = ir.ShapedType.get_dynamic_size()


def unit_dim_map(src: Sequence[int], out: Sequence[int]) -> dict[int, int] | None:
    """Result dim -> operand dim when a reshape only inserts/removes size-1 dims, else None."""
    keep_src = [i for i, s in enumerate(src) if s != 1]
    keep_out = [i for i, s in enumerate(out) if s != 1]
    if len(keep_src) != len(keep_out):
        return None
    if any(src[a] != out[b] and DYN not in (src[a], out[b]) for a, b in zip(keep_src, keep_out)):
        return None
    return dict(zip(keep_out, keep_src))


def _verify_sizes(op, out: Sequence[int], carried) -> None:
    """`sizes` holds one value per dynamic result dim, or none when `carried(dim, size)` says
    every dynamic result dim can be read off the operand."""
    dynamic = [d for d, s in enumerate(out) if s == DYN]
    n = len(op.sizes)
    if n:
        _require(n == len(dynamic), f"{n} sizes given for {len(dynamic)} dynamic result dims")
    else:
        missing = [d for d in dynamic if not carried(d, out[d])]
        _require(not missing, f"dynamic result dims {missing} need sizes (no operand dim carries them)")


def with_optional_sizes(cls: type) -> type:
    """Let callers leave `sizes` out (static shapes, or sizes read off the operand)."""
    generated = cls.__init__

    def __init__(self, x, sizes=(), **kwargs):
        generated(self, x, list(sizes), **kwargs)

    __init__.__doc__ = generated.__doc__
    cls.__init__ = __init__
    return cls


def is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1


# ----------------------------------------------------------------------------- elementwise ops

# name -> what it computes. Unary ops map a tensor to one of the same type.
UNARY_OPS = {
    "neg": "-x", "abs": "|x|", "exp": "e^x", "exp2": "2^x", "expm1": "e^x - 1",
    "log": "ln x", "log2": "log2 x", "log1p": "ln(1 + x)", "sqrt": "sqrt x", "rsqrt": "1 / sqrt x",
    "reciprocal": "1 / x", "sin": "sin x", "cos": "cos x", "tan": "tan x", "tanh": "tanh x",
    "atan": "atan x", "asin": "asin x", "acos": "acos x", "sinh": "sinh x", "cosh": "cosh x",
    "asinh": "asinh x", "acosh": "acosh x", "atanh": "atanh x",
    "erf": "erf x", "erfinv": "erf^-1 x", "sigmoid": "1 / (1 + e^-x)", "relu": "max(x, 0)",
    "gelu": "x * Phi(x) (exact erf form)", "gelu_tanh": "gelu, tanh approximation",
    "floor": "floor x", "ceil": "ceil x", "round": "round half to even", "trunc": "round toward 0",
    "sign": "sign x", "not": "logical/bitwise not", "isnan": "x != x (result i1)",
    "isinf": "|x| == inf (result i1)",
}
# Ops whose result element type is i1 whatever the operand's.
PREDICATE_UNARY = {"isnan", "isinf"}

# Binary ops take two operands of one type and give that type.
BINARY_OPS = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b (true division)",
    "floordiv": "floor(a / b)", "truncdiv": "trunc(a / b)",
    "rem": "a - floor(a / b) * b (Python remainder)", "fmod": "C fmod (sign of a)",
    "pow": "a ^ b", "max": "max(a, b), NaN-propagating", "min": "min(a, b), NaN-propagating",
    "and": "a & b", "or": "a | b", "xor": "a ^ b", "atan2": "atan2(a, b)",
    "shl": "a << b", "shr": "a >> b (arithmetic)", "copysign": "|a| with b's sign",
}

COMPARE_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def _verify_unary(self):
    x, out = tensor_type(self.x), tensor_type(self.out)
    _require(dims_compatible(x.shape, out.shape), f"result shape {out} differs from operand {x}")
    name = self.OPERATION_NAME.split(".", 1)[1]
    if name in PREDICATE_UNARY:
        _require(is_i1(out.element_type), "result must be a tensor of i1")
    else:
        _require(x.element_type == out.element_type, f"result type {out} differs from operand {x}")


def _verify_binary(self):
    a, b, out = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.out)
    _require(a.element_type == b.element_type,
             f"operand element types differ ({a.element_type} vs {b.element_type}); insert dynamo.cast")
    _require(dims_compatible(a.shape, b.shape) and dims_compatible(a.shape, out.shape),
             f"operand shapes differ ({a} vs {b} -> {out}); insert dynamo.broadcast")
    _require(out.element_type == a.element_type, "result element type differs from operands'")


def _class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Op"


def _make_op(name: str, annotations: dict, doc: str, verify) -> type:
    namespace = {"__annotations__": annotations, "__doc__": doc, "__module__": __name__,
                 "verify_invariants": _checked(verify)}
    return type(_class_name(name), (Dynamo.Operation,), namespace, name=name, traits=[Pure])


def _unary_doc(name: str, what: str) -> str:
    return (f"Elementwise {what}.\n\n    Example:\n"
            f'      %y = "dynamo.{name}"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>\n')


def _binary_doc(name: str, what: str) -> str:
    return (f"Elementwise {what}; operands share shape and element type.\n\n    Example:\n"
            f'      %c = "dynamo.{name}"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n')


UNARY_CLASSES = {
    name: _make_op(name, {"x": Operand[ir.RankedTensorType], "out": Result[ir.RankedTensorType]},
                   _unary_doc(name, what), _verify_unary)
    for name, what in UNARY_OPS.items()
}
BINARY_CLASSES = {
    name: _make_op(name, {"lhs": Operand[ir.RankedTensorType], "rhs": Operand[ir.RankedTensorType],
                          "out": Result[ir.RankedTensorType]},
                   _binary_doc(name, what), _verify_binary)
    for name, what in BINARY_OPS.items()
}
globals().update({cls.__name__: cls for cls in (*UNARY_CLASSES.values(), *BINARY_CLASSES.values())})


class CompareOp(Dynamo.Operation, name="compare", traits=[Pure]):
    """Elementwise comparison giving i1; `predicate` is one of eq ne lt le gt ge.

    Example:
      %m = "dynamo.compare"(%a, %b) {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    """

    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    predicate: ir.StringAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        a, b, out = tensor_type(self.lhs), tensor_type(self.rhs), tensor_type(self.out)
        _require(ir.StringAttr(self.predicate).value in COMPARE_PREDICATES,
                 f"unknown predicate {self.predicate}; expected one of {COMPARE_PREDICATES}")
        _require(a.element_type == b.element_type, "operand element types differ; insert dynamo.cast")
        _require(dims_compatible(a.shape, b.shape) and dims_compatible(a.shape, out.shape),
                 "operand shapes differ; insert dynamo.broadcast")
        _require(is_i1(out.element_type), "result must be a tensor of i1")


class SelectOp(Dynamo.Operation, name="select", traits=[Pure]):
    """`cond ? a : b` elementwise (torch.where).

    Example:
      %r = "dynamo.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    """

    cond: Operand[ir.RankedTensorType]
    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        c, a, b = tensor_type(self.cond), tensor_type(self.lhs), tensor_type(self.rhs)
        _require(is_i1(c.element_type), "condition must be a tensor of i1")
        _require(a.element_type == b.element_type == elem_of(self.out), "branch types differ")
        _require(dims_compatible(c.shape, a.shape) and dims_compatible(a.shape, b.shape),
                 "operand shapes differ; insert dynamo.broadcast")


class CastOp(Dynamo.Operation, name="cast", traits=[Pure]):
    """Converts the element type, with PyTorch's semantics (float->int truncates, x->bool is x != 0).

    Example:
      %y = "dynamo.cast"(%x) : (tensor<4xf32>) -> tensor<4xbf16>
    """

    x: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(dims_compatible(shape_of(self.x), shape_of(self.out)), "cast cannot change the shape")


# ----------------------------------------------------------------------------- shape ops


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


class SliceOp(Dynamo.Operation, name="slice", traits=[Pure]):
    """Strided slice: result[i...] = x[start + i * step ...]; sizes come from the result type.

    Example (every other row):
      %y = "dynamo.slice"(%x) {start = array<i64: 0, 0>, step = array<i64: 2, 1>}
             : (tensor<8x4xf32>) -> tensor<4x4xf32>
    """

    x: Operand[ir.RankedTensorType]
    start: Any
    step: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out = shape_of(self.x), shape_of(self.out)
        start, step = int_list(self.start), int_list(self.step)
        _require(len(start) == len(step) == len(src) == len(out), "start/step/result rank must equal the operand rank")
        dyn = ir.ShapedType.get_dynamic_size()
        for d, (b, s, n, m) in enumerate(zip(start, step, out, src)):
            _require(s >= 1 and b >= 0, f"dim {d}: start must be >= 0 and step >= 1")
            if dyn not in (n, m) and n > 0:
                _require(b + (n - 1) * s < m, f"dim {d}: slice runs past the operand (size {m})")
            if n == dyn:  # the lowering reads a dynamic result size off the operand
                _require(m == dyn and b == 0 and s == 1, f"dim {d}: a dynamic result dim must be the whole operand dim")


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


# ----------------------------------------------------------------------------- reductions

REDUCE_KINDS = ("sum", "prod", "max", "min", "any", "all")


class ReduceOp(Dynamo.Operation, name="reduce", traits=[Pure]):
    """Reduces `dims` away with `kind` (sum prod max min any all); max/min propagate NaN.

    Example (row sums):
      %y = "dynamo.reduce"(%x) {kind = "sum", dims = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    dims: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out, dims = shape_of(self.x), shape_of(self.out), int_list(self.dims)
        _require(ir.StringAttr(self.kind).value in REDUCE_KINDS, f"unknown kind; expected one of {REDUCE_KINDS}")
        _require(dims == sorted(set(dims)) and all(0 <= d < len(src) for d in dims), f"bad dims {dims}")
        kept = [s for i, s in enumerate(src) if i not in dims]
        _require(dims_compatible(kept, out), f"result shape {out} must be the operand's without dims {dims}")
        _require(elem_of(self.x) == elem_of(self.out), "reduce keeps the element type; cast first")


class ArgReduceOp(Dynamo.Operation, name="arg_reduce", traits=[Pure]):
    """Index (i64) of the first max (`kind = "max"`) or min along `dim`, which is removed.

    Example:
      %i = "dynamo.arg_reduce"(%x) {kind = "max", dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4xi64>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        src, out, dim = shape_of(self.x), shape_of(self.out), ir.IntegerAttr(self.dim).value
        _require(ir.StringAttr(self.kind).value in ("max", "min"), "kind must be max or min")
        _require(0 <= dim < len(src) and dims_compatible(src[:dim] + src[dim + 1:], out), "result shape mismatch")
        _require(str(elem_of(self.out)) == "i64", "result must be i64")


# ----------------------------------------------------------------------------- contractions, windows


class MatmulOp(Dynamo.Operation, name="matmul", traits=[Pure]):
    """Matrix product [M,K] x [K,N] -> [M,N], or batched [B,M,K] x [B,K,N] -> [B,M,N].

    Example:
      %c = "dynamo.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    """

    lhs: Operand[ir.RankedTensorType]
    rhs: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        a, b, c = shape_of(self.lhs), shape_of(self.rhs), shape_of(self.out)
        _require(len(a) == len(b) == len(c) and len(a) in (2, 3), "operands must both be rank 2 or rank 3")
        _require(dims_compatible([a[-1]], [b[-2]]), f"contraction sizes differ ({a[-1]} vs {b[-2]})")
        _require(dims_compatible(a[:-1] + [b[-1]], c) and dims_compatible(a[:-2], b[:-2]), "result shape mismatch")
        _require(elem_of(self.lhs) == elem_of(self.rhs) == elem_of(self.out), "element types differ")


class Conv2dOp(Dynamo.Operation, name="conv2d", traits=[Pure]):
    """2-D convolution, NCHW input, FCHW weight (C = in channels / groups); no bias (add it after).

    Example:
      %y = "dynamo.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>,
             dilation = array<i64: 1, 1>, groups = 1 : i64}
             : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
    """

    x: Operand[ir.RankedTensorType]
    weight: Operand[ir.RankedTensorType]
    stride: Any
    padding: Any
    dilation: Any
    groups: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, w, y = shape_of(self.x), shape_of(self.weight), shape_of(self.out)
        groups = ir.IntegerAttr(self.groups).value
        _require(len(x) == len(w) == len(y) == 4, "input, weight and result must be rank 4 (NCHW/FCHW)")
        _require(groups >= 1 and x[1] == w[1] * groups and w[0] % groups == 0, f"channels do not match groups={groups}")
        for name in ("stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == 2, f"{name} must have 2 entries")
        for i in (0, 1):
            k = (w[2 + i] - 1) * int_list(self.dilation)[i] + 1
            expect = (x[2 + i] + 2 * int_list(self.padding)[i] - k) // int_list(self.stride)[i] + 1
            _require(y[2 + i] == expect, f"spatial dim {i}: expected size {expect}, got {y[2 + i]}")
        _require(y[0] == x[0] and y[1] == w[0], "result batch/channels mismatch")


class Pool2dOp(Dynamo.Operation, name="pool2d", traits=[Pure]):
    """2-D max or average pooling over NCHW (`kind` = "max" | "avg"); avg divides by the window
    size, padding included (PyTorch's count_include_pad=True).

    Example:
      %y = "dynamo.pool2d"(%x) {kind = "max", kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>,
             padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>}
             : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32>
    """

    x: Operand[ir.RankedTensorType]
    kind: ir.StringAttr
    kernel: Any
    stride: Any
    padding: Any
    dilation: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, y = shape_of(self.x), shape_of(self.out)
        _require(ir.StringAttr(self.kind).value in ("max", "avg"), "kind must be max or avg")
        _require(len(x) == len(y) == 4 and x[:2] == y[:2], "input and result must be NCHW with equal N, C")
        for name in ("kernel", "stride", "padding", "dilation"):
            _require(len(int_list(getattr(self, name))) == 2, f"{name} must have 2 entries")


class GatherOp(Dynamo.Operation, name="gather", traits=[Pure]):
    """Row gather (embedding, index_select on dim 0): result[i..., j...] = x[idx[i...], j...].

    Example:
      %e = "dynamo.gather"(%table, %ids) : (tensor<100x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
    """

    x: Operand[ir.RankedTensorType]
    indices: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        x, idx, y = shape_of(self.x), shape_of(self.indices), shape_of(self.out)
        _require(isinstance(elem_of(self.indices), ir.IntegerType), "indices must be integers")
        _require(dims_compatible(idx + x[1:], y), f"result must be indices' shape {idx} + {x[1:]}")


class GatherAlongOp(Dynamo.Operation, name="gather_along", traits=[Pure]):
    """torch.gather: result[..., i, ...] = x[..., idx[..., i, ...], ...] along `dim`.

    Example:
      %y = "dynamo.gather_along"(%x, %idx) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
    """

    x: Operand[ir.RankedTensorType]
    indices: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(len(shape_of(self.x)) == len(shape_of(self.indices)), "x and indices must have one rank")
        _require(dims_compatible(shape_of(self.indices), shape_of(self.out)), "result takes the indices' shape")


# ----------------------------------------------------------------------------- values


class ConstantOp(Dynamo.Operation, name="constant", traits=[Pure]):
    """A tensor literal (a splat for fills).

    Example:
      %z = "dynamo.constant"() {value = dense<0.0> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
    """

    value: Any
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(ir.DenseElementsAttr(self.value).type == self.out.type, "value type must equal the result type")


class IotaOp(Dynamo.Operation, name="iota", traits=[Pure]):
    """start + step * index along `dim` (torch.arange when rank 1).

    Example:
      %r = "dynamo.iota"(%start, %step) {dim = 0 : i64} : (tensor<i64>, tensor<i64>) -> tensor<8xi64>
    """

    start: Operand[ir.RankedTensorType]
    step: Operand[ir.RankedTensorType]
    dim: ir.IntegerAttr
    out: Result[ir.RankedTensorType]

    @_checked
    def verify_invariants(self):
        _require(0 <= ir.IntegerAttr(self.dim).value < len(shape_of(self.out)), "dim out of range")
        _require(shape_of(self.start) == shape_of(self.step) == [], "start and step are 0-d tensors")
        _require(elem_of(self.start) == elem_of(self.step) == elem_of(self.out), "element types differ")


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


class NumelOp(Dynamo.Operation, name="numel", traits=[Pure]):
    """The product of `x`'s sizes along `dims` as a 0-d tensor of the result's element type
    (a mean's divisor when some of those sizes are dynamic).

    Example:
      %n = "dynamo.numel"(%x) {dims = array<i64: 1>} : (tensor<4x?xf32>) -> tensor<f32>
    """

    x: Operand[ir.RankedTensorType]
    out: Result[ir.RankedTensorType]
    dims: Any = int_list_attribute()

    @_checked
    def verify_invariants(self):
        _require(shape_of(self.out) == [], "result must be 0-d")
        _require(all(0 <= d < len(shape_of(self.x)) for d in int_list(self.dims)), "dims out of range")


def all_ops() -> list[type]:
    """Every op class of the dialect, for listings and docs."""
    return list(Dynamo.operations)
