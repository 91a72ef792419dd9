"""A bufferized linalg op described as a loop nest the kernel builders can map onto a GPU.

Every operand is reached through its *root* buffer, flattened to 1-D, plus the view's static
strides and offset: kernels then take one bare pointer per buffer and do their own index
arithmetic, which is what lets them decide on 16-byte vector accesses (they know the strides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from torch_mlir import ir
from torch_mlir.dialects import arith, memref

from ..views import view_root
from ..zero_size import row_major_strides

PARALLEL, REDUCTION = "parallel", "reduction"
# Ops that only make or reinterpret buffers: the host schedule turns them into torch views.
VIEW_OPS = ("memref.subview", "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast",
            "memref.cast", "memref.reshape", "memref.transpose")


def op_name(x) -> str | None:
    """The op name of an op, an OpView, or the op defining a value (None for block arguments)."""
    if isinstance(x, ir.Value):
        x = x.owner
    return None if isinstance(x, ir.Block) else x.operation.name


def root_of(value: ir.Value) -> ir.Value:
    """The buffer a view chain starts from (an argument, an allocation or a global)."""
    return view_root(value, through=VIEW_OPS)


class Unsupported(NotImplementedError):
    """The cuda target cannot map this op (the message says why)."""


@dataclass
class Access:
    """One operand: `flat[offset + sum(strides[j] * exprs[j](loop indices))]`."""

    value: ir.Value          # the memref in the host function
    exprs: list              # ir.AffineExpr per operand dim
    shape: list[int]
    strides: list[int]
    offset: int
    elem: ir.Type
    flat: ir.Value | None = None  # 1-D view of the root, made in the host before the launch

    def dims_used(self) -> set[int]:
        used: set[int] = set()
        for e in self.exprs:
            used |= affine_dims(e)
        return used

    def inner_stride(self, dim: int) -> int | None:
        """Elements between consecutive iterations of loop `dim`; None where an index is not
        linear in it (a blocked sum's `c * block + i` is, with coefficient 1 for i)."""
        stride = 0
        for e, s in zip(self.exprs, self.strides):
            coefficient = linear_coefficient(e, dim)
            if coefficient is None:
                return None
            stride += coefficient * s
        return stride


@dataclass
class LoopNest:
    """sizes/iterators of the loops; body(ins, outs, index_of) -> values yielded per output."""

    name: str
    sizes: list[int]
    iterators: list[str]
    inputs: list[Access]
    outputs: list[Access]
    body: Callable[[Sequence[ir.Value], Sequence[ir.Value], Callable[[int], ir.Value]], list[ir.Value]]
    combiners: list[ir.Operation | None]  # per output: the reduction's combining op, if one
    out_used: list[bool]                  # per output: whether the body reads the old value
    # Roots of the buffers the body reads by memref.load at computed positions (a gather: flip,
    # index, embedding), which no indexing map describes.
    gathers: list[ir.Value] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return len(self.sizes)


def affine_dims(e) -> set[int]:
    if isinstance(e, ir.AffineDimExpr):
        return {e.position}
    if isinstance(e, ir.AffineBinaryExpr):
        b = e
        return affine_dims(b.lhs) | affine_dims(b.rhs)
    return set()


def linear_coefficient(e, dim: int) -> int | None:
    """How much `e` moves per step of loop `dim`, if it is linear in it (sums of dims and
    constants, times constants); None otherwise (a mod or a division of it)."""
    if isinstance(e, ir.AffineDimExpr):
        return int(e.position == dim)
    if isinstance(e, ir.AffineConstantExpr) or dim not in affine_dims(e):
        return 0
    if isinstance(e, ir.AffineAddExpr):
        lhs, rhs = linear_coefficient(e.lhs, dim), linear_coefficient(e.rhs, dim)
        return None if lhs is None or rhs is None else lhs + rhs
    if isinstance(e, ir.AffineMulExpr):
        for term, factor in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            if isinstance(factor, ir.AffineConstantExpr):
                inner = linear_coefficient(term, dim)
                return None if inner is None else inner * factor.value
    return None


def eval_affine(e, index_of: Callable[[int], ir.Value]) -> ir.Value:
    """Index arithmetic for dim/constant/add/mul/mod exprs (the forms linalg's ops produce here;
    mod: a blocked sum's last block wrapping around, lowering/rules/reduction.py)."""
    index = ir.IndexType.get()
    if isinstance(e, ir.AffineDimExpr):
        return index_of(e.position)
    if isinstance(e, ir.AffineConstantExpr):
        return arith.constant(index, e.value)
    if isinstance(e, ir.AffineAddExpr):
        b = e
        return arith.addi(eval_affine(b.lhs, index_of), eval_affine(b.rhs, index_of))
    if isinstance(e, ir.AffineMulExpr):
        b = e
        return arith.muli(eval_affine(b.lhs, index_of), eval_affine(b.rhs, index_of))
    if isinstance(e, ir.AffineModExpr):  # indices and the constant modulus are non-negative
        b = e
        return arith.remui(eval_affine(b.lhs, index_of), eval_affine(b.rhs, index_of))
    raise Unsupported(f"affine expression {e} in an indexing map")


def layout(t: ir.MemRefType) -> tuple[list[int], int]:
    if t.has_static_shape and 0 in t.shape:  # no element to address: MLIR gives no static strides
        return row_major_strides(list(t.shape)), 0
    strides, offset = t.get_strides_and_offset()
    if any(s == ir.ShapedType.get_dynamic_stride_or_offset() for s in [*strides, offset]):
        raise Unsupported(f"dynamic strides or offset in {t}")
    return list(strides), offset


def access(value: ir.Value, amap: ir.AffineMap) -> Access:
    t = ir.MemRefType(value.type)
    if not t.has_static_shape:
        raise Unsupported(f"dynamic shape {t} (the cuda target compiles static shapes)")
    strides, offset = layout(t)
    return Access(value, list(amap.results), list(t.shape), strides, offset, t.element_type)


def loop_sizes(n_loops: int, accesses: Sequence[Access]) -> list[int]:
    sizes: list[int | None] = [None] * n_loops
    for a in accesses:
        for e, s in zip(a.exprs, a.shape):
            if isinstance(e, ir.AffineDimExpr):
                sizes[e.position] = s
    if any(s is None for s in sizes):
        raise Unsupported("a loop size is not an operand dim")
    return sizes  # type: ignore[return-value]


# ----------------------------------------------------------------------------- bodies


def _lookup(mapping: dict, v: ir.Value) -> ir.Value:
    return mapping[v] if v in mapping else materialize(v)


def materialize(v: ir.Value) -> ir.Value:
    """A host scalar used by a kernel, re-made inside it: constants are copied (outlining would
    pass float constants as arguments), and a scalar read in the host (tensor.extract of a 0-d
    tensor) is re-read inside the kernel, so the host schedule never reads device memory."""
    if op_name(v) == "arith.constant":
        return arith.constant(v.type, v.owner.attributes["value"])
    # A scalar read in the host (tensor.extract of a 0-d tensor) is re-read inside the kernel,
    # so the host schedule never has to copy a device value back.
    if op_name(v) == "memref.load":
        load = v.owner.opview
        return memref.load(load.memref, list(load.indices))
    return v


def clone_region_body(block: ir.Block) -> Callable:
    """A body builder that re-creates `block`'s ops (linalg.index -> loop indices)."""

    def build(ins, outs, index_of):
        mapping = dict(zip(block.arguments, [*ins, *outs]))
        for op in block.operations:
            name = op_name(op)
            if name == "linalg.yield":
                return [_lookup(mapping, v) for v in op.operands]
            if name == "linalg.index":
                mapping[op.result] = index_of(ir.IntegerAttr(op.attributes["dim"]).value)
                continue
            if len(op.regions):
                raise Unsupported(f"'{name}' with regions inside a linalg body")
            new = ir.Operation.create(
                name, results=[r.type for r in op.results],
                operands=[_lookup(mapping, v) for v in op.operands],
                attributes={name: op.attributes[name] for name in op.attributes})
            mapping.update(zip(op.results, new.results))
        raise Unsupported("linalg body without a yield")

    return build


def combiner_of(block: ir.Block, yielded: ir.Value, out_arg: ir.Value) -> ir.Operation | None:
    """The op that folds one new value into the accumulator (`acc = op(acc, f(inputs))`)."""
    owner = yielded.owner
    if op_name(yielded) is None or len(owner.operands) != 2:
        return None
    if sum(1 for v in owner.operands if v == out_arg) != 1:
        return None
    uses = [u for op in block.operations for u in op.operands if u == out_arg]
    return owner if len(uses) == 1 else None


def gathered_roots(block: ir.Block) -> list[ir.Value]:
    """Root buffers read by memref.load inside `block`, or by a host load whose scalar the body
    uses (materialize re-reads it in the kernel)."""
    roots = []
    for op in block.operations:
        if op_name(op) == "memref.load":
            roots.append(root_of(op.operands[0]))
        for v in op.operands:
            if op_name(v) == "memref.load" and v.owner.operation.parent != op.parent:
                roots.append(root_of(v.owner.operands[0]))
    return roots


def from_generic(op) -> LoopNest:
    maps = [ir.AffineMapAttr(a).value for a in op.indexing_maps]
    n_in = len(op.inputs)
    accesses = [access(v, m) for v, m in zip([*op.inputs, *op.outputs], maps)]
    iterators = [str(a).split("<")[-1].rstrip(">") for a in op.iterator_types]
    block = op.regions[0].blocks[0]
    yields = list(block.operations)[-1].operands
    out_args = list(block.arguments)[n_in:]
    has_reduction = REDUCTION in iterators
    combiners = [combiner_of(block, y, a) if has_reduction else None for y, a in zip(yields, out_args)]
    out_used = [any(u == a for o in block.operations for u in o.operands) for a in out_args]
    return LoopNest("generic", loop_sizes(len(iterators), accesses), iterators, accesses[:n_in],
                    accesses[n_in:], clone_region_body(block), combiners, out_used, gathered_roots(block))


def from_fill(op) -> LoopNest:
    out = op.outputs[0]
    rank = ir.MemRefType(out.type).rank
    acc = access(out, ir.AffineMap.get_identity(rank))
    value = op.inputs[0]
    return LoopNest("fill", list(acc.shape), [PARALLEL] * rank, [], [acc],
                    lambda ins, outs, index_of: [_lookup({}, value)], [None], [False])


def from_transpose(op) -> LoopNest:
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    rank = len(perm)
    inverse = [perm.index(k) for k in range(rank)]
    src = access(op.input, ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in inverse]))
    dst = access(op.init, ir.AffineMap.get_identity(rank))
    return LoopNest("transpose", list(dst.shape), [PARALLEL] * rank, [src], [dst],
                    lambda ins, outs, index_of: [ins[0]], [None], [False])


def from_copy(op) -> LoopNest:
    rank = ir.MemRefType(op.target.type).rank
    ident = ir.AffineMap.get_identity(rank)
    src, dst = access(op.source, ident), access(op.target, ident)
    return LoopNest("copy", list(dst.shape), [PARALLEL] * rank, [src], [dst],
                    lambda ins, outs, index_of: [ins[0]], [None], [False])


def from_linalg_copy(op) -> LoopNest:
    rank = ir.MemRefType(op.outputs[0].type).rank
    ident = ir.AffineMap.get_identity(rank)
    src, dst = access(op.inputs[0], ident), access(op.outputs[0], ident)
    return LoopNest("copy", list(dst.shape), [PARALLEL] * rank, [src], [dst],
                    lambda ins, outs, index_of: [ins[0]], [None], [False])


def from_map(op) -> LoopNest:
    """linalg.map (what tensor.pad/generate bufferize into): identity maps, body on inputs."""
    rank = ir.MemRefType(op.init.type).rank
    ident = ir.AffineMap.get_identity(rank)
    ins = [access(v, ident) for v in op.inputs]
    dst = access(op.init, ident)
    block = op.regions[0].blocks[0]
    return LoopNest("map", list(dst.shape), [PARALLEL] * rank, ins, [dst],
                    clone_region_body(block), [None], [False], gathered_roots(block))


# op name -> LoopNest builder: the ops the cuda target turns into generated kernels.
LOOP_NESTS = {
    "linalg.generic": from_generic,
    "linalg.fill": from_fill,
    "linalg.transpose": from_transpose,
    "memref.copy": from_copy,
    "linalg.copy": from_linalg_copy,
    "linalg.map": from_map,
}
