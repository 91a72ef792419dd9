"""A reshape of a slice that only splits dims, as tensor.expand_shape: a view, not a copy (and a
reshape of a slice to its own shape, as the slice).

Every dynamo.reshape lowers to tensor.reshape, whose buffer form (memref.reshape) needs a
row-major source; bufferizing one of a slice therefore copies the slice first. Attention's
query, key and value are exactly that: three slices of the fused qkv projection, each reshaped
from [batch, length, width] to [batch, length, heads, head_dim]. Splitting a dim keeps every
element where it was, so expand_shape views the slice in place, and the attention call (or the
kernel after it) reads the projection's output through strided views.

Only splits are rewritten, and only where the grouping of dims is certain: static source dims
match runs of static result dims with the same product, and at most one source dim is symbolic,
facing one symbolic result dim (the element counts agree, so the two sizes are equal).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, tensor

from .walk import ops_where

DYN = ir.ShapedType.get_dynamic_size()


def split_groups(source: list[int], result: list[int]) -> list[list[int]] | None:
    """For each source dim, the result dims it splits into (a reassociation), or None where the
    reshape is no pure split or the grouping is not certain."""
    if len(result) <= len(source) or sum(s == DYN for s in source) > 1 or \
            sum(s == DYN for s in source) != sum(r == DYN for r in result):
        return None
    groups, j = [], 0
    for size in source:
        if size == DYN:
            if j >= len(result) or result[j] != DYN:
                return None
            groups.append([j])
            j += 1
            continue
        group, product = [], 1
        while j < len(result) and result[j] != DYN and (not group or product < size):
            group.append(j)
            product *= result[j]
            j += 1
        if product != size or not group:
            return None
        groups.append(group)
    while j < len(result) and result[j] == 1 and groups:  # trailing unit dims join the last group
        groups[-1].append(j)
        j += 1
    return groups if j == len(result) else None


def expand_reshapes_of_slices(module: ir.Module) -> int:
    """Every tensor.reshape of a tensor.extract_slice that split_groups accepts -> expand_shape,
    and one to the slice's own static shape (canonicalize leaves a view there and back: the
    logits flattened after frontend/padded_matmuls.py's slice) -> the slice. Returns how many
    were rewritten."""
    count = 0
    for op in ops_where(module, lambda o: o.operation.name == "tensor.reshape"):
        source = op.operands[0]
        if not isinstance(source.owner, ir.OpView) or source.owner.operation.name != "tensor.extract_slice":
            continue
        src_type, out_type = ir.RankedTensorType(source.type), ir.RankedTensorType(op.results[0].type)
        if src_type == out_type and src_type.has_static_shape:
            op.results[0].replace_all_uses_with(source)
            op.erase()
            count += 1
            continue
        groups = split_groups(list(src_type.shape), list(out_type.shape))
        if groups is None:
            continue
        with ir.InsertionPoint(op), op.location:
            sizes = [tensor.dim(source, arith.constant(ir.IndexType.get(), i))
                     for i, n in enumerate(src_type.shape) if n == DYN]
            expanded = tensor.expand_shape(out_type, source, groups, output_shape=sizes,
                                           static_output_shape=list(out_type.shape))
        op.results[0].replace_all_uses_with(expanded)
        op.erase()
        count += 1
    return count
