"""Reductions over rows of symbolic length: one block per row, sizes as SSA values.

The tiled strategy (tiled.py) keeps a reduction loop sequential inside one thread and gives a
block 1024 rows: a layer norm over 2,560 rows of 768 ran on 3 blocks. This strategy takes a
linalg.generic whose loops are parallel then reduction, with one output folded by a combiner
gpu.all_reduce knows, and launches one block per output element ("row"):
- the grid is the product of the parallel loops' sizes, computed in the host by memref.dim on
  the operands (the host schedule reads it per call, host_sizes.py);
- the block's threads stride over the row's linearized reduction loops (adjacent threads read
  adjacent elements when the innermost loop is the contiguous one), each folding its elements;
- `gpu.all_reduce` combines the partials, and thread 0 folds the total into the old value.

A fill or copy right before the reduction into the same buffer is folded into the kernel: the
old value is the fill's scalar, or the copied buffer's element.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import arith, gpu, memref, scf

from ...lowering.scalar import identity_of
from ..cuda.loopnest import clone_region_body, combiner_of, eval_affine, materialize, op_name
from .capabilities import GpuCapabilities
from .tiled import has_symbolic_sizes, iterators

# combining op -> gpu.all_reduce kind (its identity: lowering.scalar.IDENTITIES)
COMBINERS = {
    "arith.addf": "ADD", "arith.mulf": "MUL", "arith.maximumf": "MAXIMUMF", "arith.minimumf": "MINIMUMF",
    "arith.maxnumf": "MAXNUMF", "arith.minnumf": "MINNUMF", "arith.addi": "ADD", "arith.muli": "MUL",
    "arith.maxsi": "MAXSI", "arith.minsi": "MINSI", "arith.ori": "OR", "arith.andi": "AND", "arith.xori": "XOR",
}
REDUCIBLE = ("f32", "i32")  # the element types gpu.all_reduce combines here


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in op.opview.indexing_maps]


def _combiner(op):
    generic = op.opview
    block = generic.regions[0].blocks[0]
    yielded = list(block.operations)[-1].operands[0]
    return combiner_of(block, yielded, list(block.arguments)[len(generic.inputs)])


def takes(op) -> bool:
    """Whether this strategy builds `op`: a linalg.generic with symbolic sizes, at least one
    parallel loop then at least one reduction loop, one output of a reducible type folded by a known combiner, every
    parallel loop indexing the output (so each block writes its own element)."""
    if op.name != "linalg.generic" or not has_symbolic_sizes(op):
        return False
    its = iterators(op)
    if "reduction" not in its or len(op.opview.outputs) != 1:
        return False
    p = its.index("reduction")
    if p == 0 or any(it != "reduction" for it in its[p:]):  # p == 0: a whole reduction, one block (not yet)
        return False
    out_type = ir.MemRefType(op.opview.outputs[0].type)
    comb = _combiner(op)
    if comb is None or op_name(comb) not in COMBINERS or str(out_type.element_type) not in REDUCIBLE:
        return False
    written = {e.position for e in _maps(op)[-1].results if isinstance(e, ir.AffineDimExpr)}
    return written == set(range(p)) and all(isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
                                            for e in _maps(op)[-1].results)


def _index(n: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), n)


def loop_sizes(op) -> list[ir.Value]:
    """Each loop's size, from the first operand dim its map indexes by the loop alone (a constant
    where the dim is static, memref.dim where it is not); built at the current insertion point."""
    sizes: list = [None] * len(iterators(op))
    for value, amap in zip(op.operands, _maps(op)):
        shape = ir.MemRefType(value.type).shape
        for k, e in enumerate(amap.results):
            if isinstance(e, ir.AffineDimExpr) and sizes[e.position] is None:
                static = shape[k] != ir.ShapedType.get_dynamic_size()
                sizes[e.position] = _index(shape[k]) if static else memref.dim(value, _index(k))
    if any(s is None for s in sizes):
        raise ValueError(f"a loop of {op.name} indexes no operand dim")
    return sizes


def product(values: list[ir.Value]) -> ir.Value:
    out = _index(1) if not values else values[0]
    for v in values[1:]:
        out = arith.muli(out, v)
    return out


def delinearize(linear: ir.Value, sizes: list[ir.Value]) -> list[ir.Value]:
    """Row-major indices of `linear` (< the product of `sizes`)."""
    out: list = [None] * len(sizes)
    rest = linear
    for i in reversed(range(len(sizes))):
        if i == 0:
            out[i] = rest
        else:
            out[i] = arith.remui(rest, sizes[i])
            rest = arith.divui(rest, sizes[i])
    return out


def _old_value(prev, op):
    """What the reduction's output held before it, if `prev` (the host op right before it) only
    set it and the reduction reads it nowhere else: ("fill", scalar) or ("copy", source buffer);
    else None."""
    out = op.opview.outputs[0]
    if prev is None or op_name(prev) not in ("linalg.fill", "memref.copy", "linalg.copy"):
        return None
    if any(v == out for v in op.opview.inputs):
        return None
    if op_name(prev) == "linalg.fill":
        return ("fill", prev.opview.inputs[0]) if prev.opview.outputs[0] == out else None
    src, dst = prev.operands[0], prev.operands[1]
    same = ir.MemRefType(src.type).shape == ir.MemRefType(dst.type).shape
    return ("copy", src) if dst == out and same else None


def row_launch(op, caps: GpuCapabilities, old=None) -> gpu.LaunchOp:
    """One block per row for `op` (see `takes`), built before it; `old`: what _old_value found."""
    generic = op.opview
    maps = _maps(op)
    its = iterators(op)
    p = its.index("reduction")
    n_in = len(generic.inputs)
    out = generic.outputs[0]
    comb = _combiner(op)
    elem = ir.MemRefType(out.type).element_type
    body = clone_region_body(generic.regions[0].blocks[0])
    with ir.InsertionPoint(op), op.location:
        sizes = loop_sizes(op)
        rows, row_len = product(sizes[:p]), product(sizes[p:])
        threads = _index(caps.block_threads)
        one = _index(1)
        launch = gpu.LaunchOp((rows, one, one), (threads, one, one))
        entry = launch.regions[0].blocks[0]
        with ir.InsertionPoint(entry):
            bx, tx = entry.arguments[0], entry.arguments[3]
            row_idx = delinearize(bx, sizes[:p])
            loop = scf.ForOp(tx, row_len, threads, [identity_of(op_name(comb), elem)])
            with ir.InsertionPoint(loop.body):
                idx = row_idx + delinearize(loop.induction_variable, sizes[p:])
                at = lambda amap: [eval_affine(e, lambda d: idx[d]) for e in amap.results]  # noqa: E731
                ins = [memref.load(v, at(m)) for v, m in zip(generic.inputs, maps[:n_in])]
                scf.YieldOp(body(ins, [loop.inner_iter_args[0]], lambda d: idx[d]))
            total = gpu.all_reduce(loop.results[0], op=getattr(gpu.AllReduceOperation, COMBINERS[op_name(comb)]),
                                   uniform=True)
            first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, tx, _index(0)))
            with ir.InsertionPoint(first.then_block):
                out_at = [eval_affine(e, lambda d: row_idx[d]) for e in maps[-1].results]
                kind, what = old if old else ("self", out)
                before = materialize(what) if kind == "fill" else memref.load(what, out_at)
                attrs = {n: comb.attributes[n] for n in comb.attributes}
                final = ir.Operation.create(op_name(comb), results=[elem], operands=[before, total], attributes=attrs)
                memref.store(final.result, out, out_at)
                scf.YieldOp([])
            gpu.TerminatorOp()
    return launch


def build_row_reductions(func_op, caps: GpuCapabilities) -> int:
    """Every op of `func_op`'s body that `takes` -> a row launch (a fill or copy of its output
    right before it folded in). Returns how many were built."""
    ops = [o.operation for o in func_op.regions[0].blocks[0].operations]
    erased: set[int] = set()
    built = 0
    for i, op in enumerate(ops):
        if not takes(op):
            continue
        prev = ops[i - 1] if i and i - 1 not in erased else None  # a reduction built just before is gone
        old = _old_value(prev, op)
        row_launch(op, caps, old)
        op.erase()
        erased.add(i)
        built += 1
        if old:
            prev.erase()
            erased.add(i - 1)
    return built
