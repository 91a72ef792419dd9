"""The `dynamo` dialect object and the helpers every op's verifier uses."""

from typing import Sequence

from torch_mlir import ir
from torch_mlir.dialects.ext import Dialect, attribute


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


# ----------------------------------------------------------------------------- data layout
# conv2d and pool2d read and write NCHW unless they carry the optional attribute `layout =
# "nhwc"` (channels-last: logical dims N, H, W, C; the cpu target's channels_last pass sets it).
# It is a plain discardable attribute, so IR without it parses and means what it always meant.

LAYOUTS = ("nchw", "nhwc")
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]  # dynamo.permute perms between the two


def layout_of(op) -> str:
    """An op's data layout: its `layout` attribute, "nchw" when absent."""
    attrs = op.operation.attributes
    return ir.StringAttr(attrs["layout"]).value if "layout" in attrs else "nchw"


def weight_layout_of(op) -> str:
    """A convolution's weight layout: its `weight_layout` attribute ("fhwc": channels-last, set
    with layout = "nhwc" where a channels-last copy of the weight exists), "fchw" when absent."""
    attrs = op.operation.attributes
    return ir.StringAttr(attrs["weight_layout"]).value if "weight_layout" in attrs else "fchw"


def as_nchw(shape: Sequence[int], layout: str) -> list[int]:
    """A shape in NC... order, whatever layout it is stored in."""
    return [shape[p] for p in TO_NCHW] if layout == "nhwc" else list(shape)


def _verify_layout(op, rank: int) -> str:
    """The op's layout, checked: a known name, and channels-last only for 4-d tensors."""
    layout = layout_of(op)
    _require(layout in LAYOUTS, f"layout must be one of {LAYOUTS}, got {layout!r}")
    _require(layout == "nchw" or rank == 4, "layout nhwc is for 4-d tensors only")
    return layout


def _verify_weight_layout(op, rank: int) -> str:
    """A convolution's weight layout, checked: "fchw", or "fhwc" for a 4-d weight; as a layout
    name of as_nchw ("nchw"/"nhwc")."""
    layout = weight_layout_of(op)
    _require(layout in ("fchw", "fhwc"), f"weight_layout must be fchw or fhwc, got {layout!r}")
    _require(layout == "fchw" or rank == 4, "weight_layout fhwc is for 4-d weights only")
    return "nhwc" if layout == "fhwc" else "nchw"


def is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1
