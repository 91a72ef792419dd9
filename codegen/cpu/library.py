"""Matmul on the cpu target through MKL's BLAS, the library torch already loaded (`library_matmul`).

`libtorch_cpu.so` exports MKL's Fortran BLAS, `sgemm_` and `dgemm_`. A float32/float64 matmul or
batch matmul with static shapes is kept as a named `linalg.matmul` / `linalg.batch_matmul`
instead of our i-k-j loops (rules.py), a transpose feeding it becomes the op's indexing map
(BLAS reads a transposed operand in place), and after bufferization the op becomes calls:

    row-major C[M,N] = A[M,K] . B[K,N]  is, read column-major,  C^T[N,M] = B^T . A^T

so each call is `gemm_(opB, opA, N, M, K, 1, B, ldb, A, lda, 0, C, ldc)` (Fortran: every argument
by pointer, scalars in stack slots). A row-major operand is passed as is ('N', ld = its row
stride), a column-major one (a transpose) as 'T' (ld = its column stride). A batch matmul is an
scf.for of one call per batch. C's accumulator is a zero fill just before the matmul: the fill is
dropped and beta = 0 (BLAS then only writes C); any other accumulator is kept with beta = 1.

Our loops stay for: other element types (MKL has no integer or half GEMM here), dynamic shapes,
zero-size dims, and operands whose memref layout BLAS cannot take (neither stride of a matrix is
1, a stride only known at run time, or a C that is not row-major). Those named ops become loops
in convert-linalg-to-loops.

The calls are library calls for stats(): `library_nodes` reads the FX nodes back from the calls'
locations (the matmul's location, kept by every pass) in the final LLVM-dialect module.
"""

from __future__ import annotations

import ctypes
import os

import torch
from torch_mlir import ir
from torch_mlir.dialects import arith, func, linalg, llvm, memref, scf

from ..provenance import nodes_of
from ..walk import ops_where
from ...dialects.base import DYN

# element type name -> the BLAS routine
GEMM = {"f32": "sgemm_", "f64": "dgemm_"}
NAMED = ("linalg.matmul", "linalg.batch_matmul")
_SWAPPED = {2: [1, 0], 3: [0, 2, 1]}  # a transpose of a matmul operand's last two dims


# ----------------------------------------------------------------------------- the process's MKL


LIBTORCH_CPU = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
_loaded = False


def load_libtorch() -> None:
    """Make libtorch_cpu's symbols (MKL's BLAS, torch's C shim) resolvable by the JIT (and by
    ctypes.CDLL(None)): torch loads it with RTLD_LOCAL, so reopen it with RTLD_GLOBAL (same
    handle, no second copy)."""
    global _loaded
    if not _loaded:
        ctypes.CDLL(LIBTORCH_CPU, mode=ctypes.RTLD_GLOBAL)
        _loaded = True


# ----------------------------------------------------------------------------- linalg stage


def blas_can_take(op) -> bool:
    """A dynamo.matmul BLAS can take: float32/float64, no static size 0. Dynamic sizes (and the
    strides that follow from them) go to the calls at run time (`_plan`)."""
    types = [ir.RankedTensorType(v.type) for v in (op.lhs, op.rhs, op.out)]
    return str(types[0].element_type) in GEMM and all(0 not in t.shape for t in types)


def dim_map(n: int, *positions: int) -> ir.AffineMap:
    return ir.AffineMap.get(n, 0, [ir.AffineDimExpr.get(p) for p in positions])


def _maps(rank: int, transposed: tuple[bool, bool]) -> list[ir.AffineMap]:
    """The indexing maps of a (batch) matmul whose A and/or B is read transposed."""
    if rank == 2:  # (m, n, k)
        a = dim_map(3, 2, 0) if transposed[0] else dim_map(3, 0, 2)
        b = dim_map(3, 1, 2) if transposed[1] else dim_map(3, 2, 1)
        c = dim_map(3, 0, 1)
    else:  # (b, m, n, k)
        a = dim_map(4, 0, 3, 1) if transposed[0] else dim_map(4, 0, 1, 3)
        b = dim_map(4, 0, 2, 3) if transposed[1] else dim_map(4, 0, 3, 2)
        c = dim_map(4, 0, 1, 2)
    return [a, b, c]


def ops_named(root, names) -> list[ir.Operation]:
    return ops_where(root, lambda op: op.name in names)


def _transpose_source(value: ir.Value, rank: int) -> ir.Value | None:
    """x when `value` is linalg.transpose(x) swapping the last two dims, else None."""
    owner = getattr(value.owner, "operation", value.owner)  # a block, for a block argument
    if getattr(owner, "name", None) != "linalg.transpose":
        return None
    perm = list(ir.DenseI64ArrayAttr(owner.attributes["permutation"]))
    return owner.operands[0] if perm == _SWAPPED[rank] else None


def _has_own_maps(op, rank: int) -> bool:
    if "indexing_maps" not in op.attributes:
        return False
    return [ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]] != _maps(rank, (False, False))


def fold_transposes(module: ir.Module) -> None:
    """matmul(transpose(x), y) -> matmul with x's indexing map transposed: BLAS reads x as is.
    The transpose, if nothing else uses it, is left dead for canonicalize."""
    for op in ops_named(module, NAMED):
        view = op.opview
        a, b = view.inputs
        rank = ir.ShapedType(a.type).rank
        if _has_own_maps(op, rank):  # folded already (a parsed module spells out the default maps)
            continue
        sources = [_transpose_source(a, rank), _transpose_source(b, rank)]
        if all(s is None for s in sources):
            continue
        named = linalg.matmul if op.name == "linalg.matmul" else linalg.batch_matmul
        with ir.InsertionPoint(op), op.location:
            new = named(a if sources[0] is None else sources[0], b if sources[1] is None else sources[1],
                        outs=[view.outputs[0]],
                        indexing_maps=_maps(rank, (sources[0] is not None, sources[1] is not None)))
        op.results[0].replace_all_uses_with(new)
        op.erase()


# ----------------------------------------------------------------------------- loops stage


def _dynamic(stride: int) -> bool:
    return stride == ir.ShapedType.get_dynamic_stride_or_offset()


def _identity(t: ir.MemRefType) -> bool:
    """Rows of contiguous elements one after another (no layout, or the identity map)."""
    return isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)


def _operand_layout(t: ir.MemRefType, rows: int, cols: int, row_dim: int, col_dim: int, buffer: ir.Value):
    """How BLAS reads a logical rows x cols matrix stored as memref `t` (dims row_dim, col_dim):
    ('N', ld) row-major, ('T', ld) column-major, or None (not a BLAS matrix). ld is an int, or
    ("stride", buffer, dim) read at run time where the stride is dynamic."""
    strides, _ = t.get_strides_and_offset()
    s_r, s_c = strides[row_dim], strides[col_dim]
    if DYN in (rows, cols) or _dynamic(s_r) or _dynamic(s_c):
        return _run_time_layout(t, buffer, ((s_c, s_r, cols, row_dim, col_dim, "N"),
                                            (s_r, s_c, rows, col_dim, row_dim, "T")))
    if s_c == 1 or cols == 1:
        ld = s_r if rows > 1 else max(1, cols)
        return ("N", ld) if ld >= max(1, cols) else None
    if s_r == 1 or rows == 1:
        ld = s_c if cols > 1 else max(1, rows)
        return ("T", ld) if ld >= max(1, rows) else None
    return None


def _run_time_layout(t, buffer, candidates):
    """A layout with sizes or strides known at run time only. The unit stride must be static;
    BLAS's ld is the other one: static and at least the contiguous extent, or read at run time
    off a buffer of rows one after another (identity layout), whose row stride is that extent
    (Dynamo specializes sizes 0 and 1, so a dynamic size is at least 2 and ld at least 1). A
    single row (column) is never stepped over, but BLAS still wants ld at least the extent, and
    the stride of a dim of size 1 is whatever the tensor came with (torch calls a [1, n] tensor
    of strides (1, 1) contiguous: MKL refused such a call, leaving a gradient unwritten): there
    ld is the extent itself."""
    for unit, other, extent, other_dim, extent_dim, kind in candidates:
        if unit != 1:
            continue
        if t.shape[other_dim] == 1:
            return kind, (max(1, extent) if extent != DYN else ("dim", buffer, extent_dim))
        if not _dynamic(other):
            if extent != DYN and other >= max(1, extent):
                return kind, other
        elif _identity(t):
            return kind, ("stride", buffer, other_dim)
    return None


def matrix_dims(op) -> list[list[int]]:
    """For A, B, C: which memref dim holds each logical dim (m/k, k/n, m/n), from the maps;
    the batch dim, if any, is first everywhere."""
    rank = ir.ShapedType(op.opview.outputs[0].type).rank
    maps = ([ir.AffineMapAttr(a).value for a in op.attributes["indexing_maps"]] if "indexing_maps" in op.attributes
            else _maps(rank, (False, False)))
    n = maps[0].n_dims
    m, nn, k = n - 3, n - 2, n - 1  # loop dims (b,) m, n, k
    want = [(m, k), (k, nn), (m, nn)]
    found = []
    for amap, (r, c) in zip(maps, want):
        dims = [ir.AffineDimExpr(e).position for e in amap.results]
        found.append([dims.index(r), dims.index(c)])
    return found


class _Slots:
    """The Fortran arguments' stack slots, allocated once at the function's entry."""

    def __init__(self, entry: ir.Block, elem: ir.Type):
        with ir.InsertionPoint.at_block_begin(entry):
            i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
            self.trans = [memref.alloca(ir.MemRefType.get([1], i8), [], []) for _ in range(2)]
            self.ints = [memref.alloca(ir.MemRefType.get([1], i32), [], []) for _ in range(6)]
            self.scalars = [memref.alloca(ir.MemRefType.get([1], elem), [], []) for _ in range(2)]


def pointer_to(buffer: ir.Value, byte_offset: ir.Value | None = None) -> ir.Value:
    """An !llvm.ptr to a memref's first element (plus `byte_offset`, an index)."""
    index = ir.IndexType.get()
    base, offset, *_ = memref.extract_strided_metadata(buffer)
    address = memref.extract_aligned_pointer_as_index(base)
    width = ir.MemRefType(buffer.type).element_type.width // 8
    address = arith.addi(address, arith.muli(offset, arith.constant(index, width)))
    if byte_offset is not None:
        address = arith.addi(address, byte_offset)
    return llvm.inttoptr(llvm.PointerType.get(), arith.index_cast(ir.IntegerType.get_signless(64), address))


def _store(slot: ir.Value, value: ir.Value) -> ir.Value:
    memref.store(value, slot, [arith.constant(ir.IndexType.get(), 0)])
    return pointer_to(slot)


def declare(module: ir.Module, name: str, inputs: list[ir.Type], results: list[ir.Type] = ()) -> None:
    """A private declaration of the external function `name` in `module`, once."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return
    with ir.InsertionPoint(module.body):
        decl = func.FuncOp(name, ir.FunctionType.get(list(inputs), list(results)))
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")


def _plan(op):
    """(gemm name, (opB, ldb), (opA, lda), ldc, sizes) for a named matmul on memrefs BLAS can run,
    or None (it stays for convert-linalg-to-loops)."""
    view = op.opview
    a, b = view.inputs
    c = view.outputs[0]
    types = [ir.MemRefType(v.type) for v in (a, b, c)]
    elem = str(types[2].element_type)
    if elem not in GEMM or any(0 in t.shape for t in types):
        return None
    (a_m, a_k), (b_k, b_n), (c_m, c_n) = matrix_dims(op)
    m, k, n = types[0].shape[a_m], types[0].shape[a_k], types[1].shape[b_n]
    layout_a = _operand_layout(types[0], m, k, a_m, a_k, a)
    layout_b = _operand_layout(types[1], k, n, b_k, b_n, b)
    layout_c = _operand_layout(types[2], m, n, c_m, c_n, c)
    if None in (layout_a, layout_b) or layout_c is None or layout_c[0] != "N":
        return None
    if types[2].rank == 3 and any(_batch_stride(t, v) is None for t, v in zip(types, (a, b, c))):
        return None
    # A dynamic size: ("dim", operand, dim), read at run time.
    sizes = tuple(size if size != DYN else ("dim", v, d) for size, v, d in ((m, a, a_m), (n, b, b_n), (k, a, a_k)))
    return GEMM[elem], layout_b, layout_a, layout_c[1], sizes


def _index(spec) -> ir.Value:
    """An int, or ("dim" | "stride", memref, dim) read at run time, as an index value."""
    index = ir.IndexType.get()
    if isinstance(spec, int):
        return arith.constant(index, spec)
    kind, buffer, dim = spec
    if kind == "dim":
        return memref.dim(buffer, arith.constant(index, dim))
    rank = ir.MemRefType(buffer.type).rank
    return memref.extract_strided_metadata(buffer)[2 + rank + dim]  # base, offset, sizes, strides


def _i32(spec) -> ir.Value:
    """A BLAS integer argument (a size or an ld)."""
    i32 = ir.IntegerType.get_signless(32)
    return arith.constant(i32, spec) if isinstance(spec, int) else arith.index_cast(i32, _index(spec))


def _ld(spec) -> ir.Value:
    """A leading dimension: at least 1, as BLAS checks, also where it is read at run time off a
    size or stride that is 0 (a slice that came out empty: MKL refused the call, "Parameter 10
    was incorrect", and left C unwritten; tests/fuzz seed 79 program 156). With K = 0 and
    beta = 0 BLAS then writes C's zeros, as eager's matmul gives."""
    if isinstance(spec, int):
        return _i32(max(1, spec))
    i32 = ir.IntegerType.get_signless(32)
    return arith.maxsi(_i32(spec), arith.constant(i32, 1))


def _batch_stride(t: ir.MemRefType, buffer: ir.Value):
    """Elements between two batches of a rank-3 memref: an int, ("stride", buffer, 0) read at run
    time off a buffer of identity layout, or None (BLAS cannot walk it)."""
    stride = t.get_strides_and_offset()[0][0]
    if t.shape[0] == 1:
        return 0
    if _dynamic(stride):
        return ("stride", buffer, 0) if _identity(t) else None
    return stride


def previous_op(op: ir.Operation) -> ir.Operation | None:
    """The op right before `op` in its block, if any."""
    previous = None
    for other in op.block.operations:
        if other.operation == op:
            return previous
        previous = other.operation
    return None


def zero_fill_before(op) -> ir.Operation | None:
    """The linalg.fill of 0 into op's C right before op (the matmul accumulator), if any."""
    previous = previous_op(op)
    if previous is None or previous.name != "linalg.fill" or previous.operands[1] != op.opview.outputs[0]:
        return None
    value = previous.operands[0].owner
    if getattr(value, "name", None) != "arith.constant":
        return None
    attr = value.attributes["value"]
    return previous if isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0 else None


def _emit_call(name, slots, op, layout_b, layout_a, ldc, sizes, batch_offsets=None, beta=1.0) -> None:
    """One gemm_ call at the insertion point: C^T = op(B) . op(A), column-major (see above)."""
    i8 = ir.IntegerType.get_signless(8)
    elem = ir.MemRefType(op.opview.outputs[0].type).element_type
    m, n, k = sizes
    a, b = op.opview.inputs
    c = op.opview.outputs[0]
    offsets = batch_offsets or [None, None, None]
    args = [
        _store(slots.trans[0], arith.constant(i8, ord(layout_b[0]))),
        _store(slots.trans[1], arith.constant(i8, ord(layout_a[0]))),
        *[_store(slot, _i32(v)) for slot, v in zip(slots.ints[:3], (n, m, k))],
        _store(slots.scalars[0], arith.constant(elem, 1.0)),
        pointer_to(b, offsets[1]), _store(slots.ints[3], _ld(layout_b[1])),
        pointer_to(a, offsets[0]), _store(slots.ints[4], _ld(layout_a[1])),
        _store(slots.scalars[1], arith.constant(elem, beta)),
        pointer_to(c, offsets[2]), _store(slots.ints[5], _ld(ldc)),
    ]
    func.call([], name, args)


def _batch_loop(name, slots, op, plan_rest, beta) -> None:
    """One call per batch: each operand's pointer advanced by its batch stride (in bytes)."""
    index = ir.IndexType.get()
    operands = [*op.opview.inputs, op.opview.outputs[0]]
    c_type = ir.MemRefType(operands[2].type)
    batch = _index(c_type.shape[0] if c_type.shape[0] != DYN else ("dim", operands[2], 0))
    steps = [arith.muli(_index(_batch_stride(ir.MemRefType(v.type), v)),
                        arith.constant(index, ir.MemRefType(v.type).element_type.width // 8)) for v in operands]
    loop = scf.ForOp(arith.constant(index, 0), batch, arith.constant(index, 1))
    with ir.InsertionPoint(loop.body):
        i = loop.induction_variable
        offsets = [arith.muli(i, s) for s in steps]
        _emit_call(name, slots, op, *plan_rest, batch_offsets=offsets, beta=beta)
        scf.yield_([])


def call_blas(module: ir.Module) -> None:
    """After bufferization: each named matmul on memrefs that BLAS can take becomes gemm_ calls."""
    for fn in list(module.body.operations):
        if fn.operation.name != "func.func" or not fn.regions[0].blocks:
            continue
        slots = {}
        for op in ops_named(fn, NAMED):
            plan = _plan(op)
            if plan is None:
                continue
            name, layout_b, layout_a, ldc, sizes = plan
            elem = ir.MemRefType(op.opview.outputs[0].type).element_type
            if str(elem) not in slots:
                slots[str(elem)] = _Slots(fn.regions[0].blocks[0], elem)
            declare(module, name, [llvm.PointerType.get()] * 13)
            fill = zero_fill_before(op)
            beta = 1.0 if fill is None else 0.0
            with ir.InsertionPoint(op), op.location:
                if op.name == "linalg.matmul":
                    _emit_call(name, slots[str(elem)], op, layout_b, layout_a, ldc, sizes, beta=beta)
                else:
                    _batch_loop(name, slots[str(elem)], op, (layout_b, layout_a, ldc, sizes), beta)
            op.erase()
            if fill is not None:
                fill.erase()


# ----------------------------------------------------------------------------- after the llvm stage


def nodes_calling(module: ir.Module, symbols) -> frozenset[str]:
    """FX node names whose ops run as calls to `symbols` in the final LLVM-dialect module."""
    names: set[str] = set()

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes:
            if ir.FlatSymbolRefAttr(op.attributes["callee"]).value in symbols:
                names.update(nodes_of(op.location))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return frozenset(names)


def library_nodes(module: ir.Module) -> frozenset[str]:
    """FX node names whose ops run as BLAS calls in the final LLVM-dialect module."""
    return nodes_calling(module, set(GEMM.values()))
