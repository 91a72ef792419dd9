"""The cpu target's lane loops as vector code, at the end of the loops stage: the innermost loop
over the LANES lanes of a row reduction's partial (row_reduction.py) becomes one vector<LANES>
load, combine and store per lane step.

Why: after convert-linalg-to-loops the lanes are an scf.for of LANES iterations, each adding one
element into its own lane. LLVM unrolls that loop fully and keeps the lanes in LANES scalar
registers, then leaves them scalar (the sums ran one vaddss per element, no faster than the
serial sum). Written as vectors here, the lanes are whole registers whatever LLVM's unroller and
SLP vectorizer decide.

A loop is rewritten only when that is exactly equivalent: constant bounds 0..LANES step 1, no
results; its body made only of elementwise arith/math ops on 32/64-bit floats and integers and
of loads and stores; every store writes element [.., j] (j the lane) of a buffer whose last dim
is LANES, and any load of a stored buffer reads exactly the element stored; other loads read
either one element for all lanes (kept scalar, broadcast where a vector needs it) or LANES
consecutive elements (an index j + base, base the same for all lanes). Each lane then reads and
writes what the loop's iteration j would have, and no lane reads what another one writes.

The rule is the loop's shape, not who made it: row_reduction.py's lane loops are the loops it was
written for, and any other exactly lane-wise 16-trip loop (a softmax or masked fill over a last
dim of 16) is vectorized too: limited to loops row_reduction marked, those would run scalar
again (and upstream's linalg-to-loops drops a marked op's attributes). No mark is needed for
correctness: the checks above are the whole condition.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, vector

from ...lowering.scalar import constant_int
from ..attributes import NOALIAS
from .. import views
from . import memory_plan

LANES = 16  # lanes of a row reduction's partial (row_reduction.py): two AVX2 registers of float32, one AVX-512

# Element types a lane may hold (LLVM vectorizes these directly; half types go through
# emulation passes that expect scalars), and those it may load or store: not i1, which LLVM
# packs 8 to a byte in a vector but stores one to a byte as a scalar (memref<..xi1> is bytes).
_ELEMENTS = ("f32", "f64", "i1", "i32", "i64")
_IN_MEMORY = ("f32", "f64", "i32", "i64")


class _Unsupported(Exception):
    """The loop's body has something this rewrite does not handle: the loop stays."""


def vectorize_lane_loops(module: ir.Module) -> int:
    """Rewrite, in place, every lane loop that qualifies; returns how many."""
    loops = []

    def visit(op):
        if op.name == "scf.for" and _lane_loop(op.opview):
            loops.append(op.opview)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    done = 0
    for loop in loops:
        try:
            plan = _plan(loop)
        except _Unsupported:
            continue
        _emit(loop, plan)
        done += 1
    return done


def _lane_loop(loop) -> bool:
    lb, ub, step = (constant_int(v) for v in loop.operands[:3])
    return (lb, ub, step) == (0, LANES, 1) and len(loop.results) == 0 and not list(loop.inner_iter_args)


# ----------------------------------------------------------------------------- analysis


def _inside(value: ir.Value, loop) -> bool:
    """Whether value is defined in the loop's body (the lane index included)."""
    owner = value.owner
    block = owner if isinstance(owner, ir.Block) else owner.operation.block
    return block == loop.body


def _plan(loop) -> dict:
    """Per body op, how it is rewritten: 'scalar' (the same for every lane), 'vector', or for
    an index op 'offset' (j + base). Raises _Unsupported."""
    j = loop.induction_variable
    kind: dict = {}  # value -> "scalar" | "vector" | "offset"

    def of(v):
        return kind.get(v, "scalar") if _inside(v, loop) or v == j else "scalar"

    kind[j] = "offset"
    stored = {}
    ops = list(loop.body.operations)
    for op in ops[:-1]:  # the last one is scf.yield
        name = op.operation.name
        if op.regions:
            raise _Unsupported(name)
        operand_kinds = [of(v) for v in op.operands]
        if name == "affine.apply":
            kind[op.result] = _apply_kind(op, j, operand_kinds)
        elif name == "memref.load":
            kind[op.result] = _load_kind(op, operand_kinds)
        elif name == "memref.store":
            _check_store(op, j, operand_kinds)
            stored.setdefault(op.operands[1], []).append(list(op.operands[2:]))
        elif name.startswith(("arith.", "math.")) and len(op.results) == 1:
            if "offset" in operand_kinds or not _lane_type(op.result.type):
                raise _Unsupported(name)
            kind[op.result] = "vector" if "vector" in operand_kinds else "scalar"
        else:
            raise _Unsupported(name)
    _check_loads_of_stored(ops, stored)
    return kind


def _lane_type(t: ir.Type) -> bool:
    return str(t) in _ELEMENTS


def _apply_kind(op, j, operand_kinds) -> str:
    """affine.apply: 'scalar' without the lane index, 'offset' when it is (rest) + j."""
    if "vector" in operand_kinds or operand_kinds.count("offset") > 1:
        raise _Unsupported("affine.apply")
    if "offset" not in operand_kinds:
        return "scalar"
    position = operand_kinds.index("offset")
    if op.operands[position] != j:
        raise _Unsupported("affine.apply of an offset")  # (j + base) + base': not needed so far
    results = ir.AffineMapAttr(op.attributes["map"]).value.results
    if len(results) != 1 or not _plus_dim(results[0], position):
        raise _Unsupported("affine.apply not j + base")
    return "offset"


def _plus_dim(expr, position: int) -> bool:
    """expr is (terms without d<position>) + d<position>, in either order."""
    if not isinstance(expr, ir.AffineAddExpr):
        return _is_dim(expr, position)
    return any(_is_dim(dim, position) and not _uses(rest, position)
               for dim, rest in ((expr.rhs, expr.lhs), (expr.lhs, expr.rhs)))


def _is_dim(expr, position: int) -> bool:
    return isinstance(expr, ir.AffineDimExpr) and expr.position == position


def _uses(expr, position: int) -> bool:
    if isinstance(expr, ir.AffineBinaryExpr):
        return _uses(expr.lhs, position) or _uses(expr.rhs, position)
    return _is_dim(expr, position)


def _load_kind(op, operand_kinds) -> str:
    """'scalar' when no index depends on the lane, 'vector' when only the last one does (j + base)."""
    memref, index_kinds = operand_kinds[0], operand_kinds[1:]
    if memref != "scalar" or "vector" in index_kinds or str(op.result.type) not in _IN_MEMORY:
        raise _Unsupported("memref.load")
    if "offset" not in index_kinds:
        return "scalar"
    if index_kinds[-1] != "offset" or "offset" in index_kinds[:-1] or not _unit_last_stride(op.operands[0].type):
        raise _Unsupported("memref.load across lanes")
    return "vector"


def _check_store(op, j, operand_kinds) -> None:
    """A store writes [.., j] of a buffer whose last dim is LANES (contiguous)."""
    target = ir.MemRefType(op.operands[1].type)
    indices, index_kinds = list(op.operands[2:]), operand_kinds[2:]
    if (operand_kinds[1] != "scalar" or not indices or indices[-1] != j
            or any(k != "scalar" for k in index_kinds[:-1])
            or target.shape[-1] != LANES or not _unit_last_stride(target)
            or str(target.element_type) not in _IN_MEMORY):
        raise _Unsupported("memref.store")


def _unit_last_stride(t: ir.Type) -> bool:
    strides, _ = ir.MemRefType(t).get_strides_and_offset()
    return strides[-1] == 1


def _check_loads_of_stored(ops, stored: dict) -> None:
    """A buffer the loop stores to is its own (an allocation, or an argument marked noalias),
    stored through one value, and read only at the element being stored, through that value:
    no lane reads or overwrites what another writes, whatever the order."""
    roots = {_root(m): m for m in stored}
    if len(roots) != len(stored) or any(not _own(root) for root in roots):
        # two views of one buffer stored: their elements may meet in different lanes
        raise _Unsupported("memref.store to a buffer that may alias another")
    for op in ops:
        if op.operation.name != "memref.load":
            continue
        memref = op.operands[0]
        if memref in stored:
            if any(list(op.operands[1:]) != indices for indices in stored[memref]):
                raise _Unsupported("memref.load of a stored buffer elsewhere")
        elif _root(memref) in roots:
            raise _Unsupported("memref.load of a view of a stored buffer")


def _root(value: ir.Value) -> ir.Value:
    """The value whose buffer `value` views (through view ops; a planned view is a buffer)."""
    return views.view_root(value, stop=lambda v: bool(memory_plan.planned_span(v)))


def _own(root: ir.Value) -> bool:
    """An allocation, or an argument of a function that marks it llvm.noalias (outline.py does
    where no other argument shares the buffer)."""
    owner = root.owner
    if not isinstance(owner, ir.Block):  # a planned view: no op using it uses a buffer sharing its bytes
        return owner.operation.name in ("memref.alloc", "memref.alloca") or bool(memory_plan.planned_span(root))
    fn = owner.owner
    if fn.operation.name != "func.func" or "arg_attrs" not in fn.attributes:
        return False
    attrs = ir.ArrayAttr(fn.attributes["arg_attrs"])[ir.BlockArgument(root).arg_number]
    return NOALIAS in ir.DictAttr(attrs)


# ----------------------------------------------------------------------------- rewrite


def _emit(loop, kind: dict) -> None:
    """The body's ops rebuilt before the loop (vectors for 'vector' values), then the loop erased."""
    j = loop.induction_variable
    values: dict = {}  # body value -> its rewritten value (for an offset: its base, the j = 0 index)

    def get(v):
        return values.get(v, v)

    def as_vector(v):
        value = get(v)
        if kind.get(v, "scalar") == "vector":
            return value
        return vector.broadcast(ir.VectorType.get([LANES], value.type), value)

    with ir.InsertionPoint(loop), loop.location:
        values[j] = arith.constant(ir.IndexType.get(), 0)
        for op in list(loop.body.operations)[:-1]:
            name = op.operation.name
            with op.location:
                if name == "memref.store":
                    vector.store(as_vector(op.operands[0]), get(op.operands[1]), [get(v) for v in op.operands[2:]])
                elif kind.get(op.results[0]) == "vector" and name == "memref.load":
                    t = ir.VectorType.get([LANES], op.result.type)
                    values[op.result] = vector.load(t, get(op.operands[0]), [get(v) for v in op.operands[1:]])
                elif kind.get(op.results[0]) == "vector":
                    values[op.result] = _rebuild(op, [as_vector(v) for v in op.operands],
                                                 [ir.VectorType.get([LANES], op.result.type)])
                else:  # scalar or offset: the same op on the rewritten operands
                    values[op.result] = _rebuild(op, [get(v) for v in op.operands], [op.result.type])
    loop.operation.erase()


def _rebuild(op, operands: list, result_types: list) -> ir.Value:
    attributes = {name: op.attributes[name] for name in op.attributes}
    return ir.Operation.create(op.operation.name, results=result_types, operands=operands,
                               attributes=attributes).result
