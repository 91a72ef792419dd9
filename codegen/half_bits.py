"""bf16 values as their i16 bits in the LLVM dialect, so LLVM never sees a `bfloat` value.

The CPU pipeline computes bf16 math in f32 and expands the f32 <-> bf16 conversions into
integer arithmetic (`arith-expand{include-bf16}`), but bf16 values still flow through loads,
stores, selects, constants and loop-carried values. LLVM's InstCombine folds
`bitcast(select(i16 a, i16 b))` back into a `select bfloat`, and an x86 CPU without
AVX-512-BF16 legalizes a bfloat value through f32 and back with a call to compiler-rt's
`__truncsfbf2`, which a JIT process does not have (the engine then found no function and the
call crashed); a CPU with `vcvtneps2bf16` makes the same round trip but flushes subnormals.

After `bf16_as_bits` every bf16 type is i16 (same size, same bytes): the bit-moving ops move
the bits they moved before, an extension from bf16 is a shift, and an op that would still
compute on bf16 is refused with a CompileError naming it, so no region depends on what one
CPU's LLVM backend does with a bfloat value.
"""

from __future__ import annotations

import re
import struct

from torch_mlir import ir
from torch_mlir.dialects import llvm

from .functions import is_declaration
from .passes import CompileError

# Ops whose result does not depend on the element being a float: they only move bits.
BIT_MOVING = frozenset({
    "llvm.load", "llvm.store", "llvm.select", "llvm.bitcast", "llvm.mlir.constant", "llvm.mlir.undef",
    "llvm.mlir.poison", "llvm.mlir.zero", "llvm.getelementptr", "llvm.alloca", "llvm.mlir.global",
    "llvm.insertelement", "llvm.extractelement", "llvm.shufflevector", "llvm.insertvalue",
    "llvm.extractvalue", "llvm.br", "llvm.cond_br", "llvm.switch", "llvm.return", "llvm.func",
    "llvm.call", "llvm.intr.masked.load", "llvm.intr.masked.store",
})
EXTENSION = "llvm.fpext"  # bf16 -> f32 is the bits shifted left by 16 (then widened if f64)

_BF16 = re.compile(r"(?:(?<![\w.])|(?<=[\d?]x))bf16\b")  # bf16, vector<16xbf16>, memref<?xbf16>
# A float literal in an attribute's text: bits in hex (NaN, inf, or any value not printed
# exactly) or a decimal that rounds back to the bf16 value.
_LITERAL = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:\d+\.\d*|\d+)(?:[eE][-+]?\d+)?")


class _Retype:
    """bf16 -> i16 inside any type (vector<16xbf16>, !llvm.struct<(bf16)>, !llvm.func<...>)."""

    def __init__(self):
        self._cache: dict[ir.Type, ir.Type | None] = {}  # types are uniqued: hashed by identity

    def __call__(self, t: ir.Type) -> ir.Type | None:
        """The type with i16 for bf16, or None when `t` holds no bf16."""
        if t not in self._cache:
            text = str(t)
            self._cache[t] = ir.Type.parse(_BF16.sub("i16", text)) if "bf16" in text else None
        return self._cache[t]


def _bf16_bits(literal: str) -> int:
    """A bf16 literal's bits as a signed i16 (the form an i16 attribute parses)."""
    if literal.startswith("0x"):
        bits = int(literal, 16)
    else:  # round to float32, then to nearest-even bf16: exact for a literal that round-trips
        f32 = struct.unpack("<I", struct.pack("<f", float(literal)))[0]
        bits = (f32 + 0x7FFF + ((f32 >> 16) & 1)) >> 16
    return bits - (1 << 16) if bits >= 1 << 15 else bits


def _constant_as_bits(attr: ir.Attribute) -> ir.Attribute:
    """A bf16 FloatAttr or dense attribute as the same bits over i16. A dense hex blob already
    is the bytes; otherwise each literal is converted."""
    body, _, type_text = str(attr).rpartition(" : ")
    if '"0x' not in body:
        body = _LITERAL.sub(lambda m: str(_bf16_bits(m.group(0))), body)
    return ir.Attribute.parse(f"{body} : {_BF16.sub('i16', type_text)}")


def _retyped_attr(attr: ir.Attribute, retype: _Retype) -> ir.Attribute | None:
    """`attr` over i16 instead of bf16, or None when it holds no bf16."""
    if isinstance(attr, ir.TypeAttr):
        new = retype(attr.value)
        return ir.TypeAttr.get(new) if new else None
    if isinstance(attr, (ir.FloatAttr, ir.DenseFPElementsAttr)) and retype(attr.type):
        return _constant_as_bits(attr)
    return None


def _block_arguments(op: ir.Operation) -> list[ir.Value]:
    """The arguments of the blocks in `op`'s regions: a function's parameters, loop-carried values."""
    return [arg for region in op.regions for block in region.blocks for arg in block.arguments]


def _touches_bf16(op: ir.Operation, retype: _Retype) -> bool:
    values = [*op.operands, *op.results, *_block_arguments(op)]
    return (any(retype(v.type) for v in values)
            or any(_retyped_attr(op.attributes[name], retype) for name in op.attributes))


def _retype_op(op: ir.Operation, retype: _Retype) -> None:
    for value in [*op.results, *_block_arguments(op)]:
        if new := retype(value.type):
            value.set_type(new)
    for name in list(op.attributes):
        if (new := _retyped_attr(op.attributes[name], retype)) is not None:
            op.attributes[name] = new


def _expand_extension(op: ir.Operation) -> None:
    """An fpext from (now) i16 bits: the bits shifted into a float32's top half, then widened."""
    with ir.InsertionPoint(op), op.location:
        bits = op.operands[0]
        shape = bits.type.shape if isinstance(bits.type, ir.VectorType) else None
        typed = (lambda t: ir.VectorType.get(shape, t)) if shape else (lambda t: t)
        i32, f32 = typed(ir.IntegerType.get_signless(32)), typed(ir.F32Type.get())
        sixteen = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 16)
        shift = llvm.ConstantOp(i32, ir.DenseElementsAttr.get_splat(i32, sixteen) if shape else sixteen)
        wide = llvm.shl(llvm.zext(i32, bits), shift.result, ir.Attribute.parse("#llvm.overflow<none>"))
        value = llvm.bitcast(f32, wide)
        if op.results[0].type != f32:
            value = llvm.fpext(op.results[0].type, value)
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _drop_identity_bitcast(op: ir.Operation) -> None:
    """i16 -> bf16 -> i16 bitcasts are now i16 -> i16: the value itself."""
    if op.operands[0].type == op.results[0].type:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()


def _moves_bits(op: ir.Operation) -> bool:
    """Whether `op` only moves bf16 bits. A declared function's bf16 parameters would change its
    calling convention as i16: refused, like arithmetic."""
    declared = op.name == "llvm.func" and is_declaration(op)
    return (op.name in BIT_MOVING and not declared) or op.name == EXTENSION


# What an op that only moved bf16 bits needs once they are i16 (the rest: nothing).
_AFTER_RETYPING = {EXTENSION: _expand_extension, "llvm.bitcast": _drop_identity_bitcast}


def _ops(module: ir.Module) -> list[ir.Operation]:
    ops = []
    module.operation.walk(lambda op: ops.append(op.operation) or ir.WalkResult.ADVANCE)
    return ops


def bf16_as_bits(module: ir.Module, stage: str = "llvm") -> ir.Module:
    """Every bf16 in an LLVM-dialect module as i16 bits (see the module docstring)."""
    if "bf16" not in module.operation.get_asm(large_elements_limit=8):  # the common case: no walk in Python
        return module
    retype = _Retype()
    with module.context, ir.Location.unknown():
        touching = [op for op in _ops(module) if _touches_bf16(op, retype)]
        for op in touching:
            if not _moves_bits(op):
                raise CompileError(stage, f"{op.name} at {op.location} computes on bf16 values, which LLVM "
                                          "lowers to compiler-rt calls on a CPU without AVX-512-BF16", op=op.name)
        for op in touching:
            _retype_op(op, retype)
        for op in touching:
            if op.name in _AFTER_RETYPING:
                _AFTER_RETYPING[op.name](op)
    if touching:
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise CompileError(stage, f"bf16 as i16 bits left an invalid module: {e}") from None
    return module
