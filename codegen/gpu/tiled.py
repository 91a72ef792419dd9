"""Loop nests with symbolic sizes -> gpu.launch, by MLIR's tiling and GPU mapping.

The kernel builders of codegen/gpu/kernels.py compute with Python ints: every size must be
known when the kernel is built. An op whose buffers have dynamic sizes takes this strategy
instead. Its loops are tiled twice with `transform.structured.tile_using_forall`:
- blocks: one tile of `block_threads * ELEMENTS_PER_THREAD` along the innermost loop and of 1
  along the others, so the grid is the op's sizes divided by the tile, computed in the host from
  the buffers' sizes at run time;
- threads: `block_threads` threads over that tile, each taking a contiguous piece of
  ELEMENTS_PER_THREAD (the last block's threads the rest, or nothing).
The tiled op becomes loops (`structured.convert_to_loops`), the two foralls scf.parallel loops,
mapped to blocks and threads (`gpu-map-parallel-loops`) and made a gpu.launch
(`convert-parallel-loops-to-gpu`). The transform IR is built in Python, one tiling per op with
the tile sizes the strategy chose for it, and applied by the transform interpreter.

Reduction loops stay sequential inside a thread (one thread per output point group, like the
`serial` schedule of the static builders).
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import linalg, transform
from torch_mlir.dialects.transform import structured

from ..kernel_names import mark_unmarked
from ..passes import run_pipeline
from .capabilities import GpuCapabilities
from .kernel_abi import needs_split

TILE = "dynamo_mlir.gpu_tile"  # payload op attribute: its index in the transform script
# One: a warp's 32 threads read 32 adjacent elements, one load instruction over 128 bytes (with 4
# contiguous elements a thread, a warp's load spans 512 bytes at a stride of 16). On an H200 the
# dynamic elementwise chain of benchmarks/bench_cuda.py took 0.37 ms with 1 and 0.53 ms with 4,
# softmax 0.91 / 1.09, layer norm 0.60 / 0.80 (log-softmax and RMS norm within 10% either way;
# benchmarks/results/tiled_elements_per_thread_h200_2026-11-27.md).
ELEMENTS_PER_THREAD = 1


def has_symbolic_sizes(op) -> bool:
    """Whether a buffer `op` reads or writes (an operand, or one its body loads from: a gather)
    has a dynamic size, stride or offset."""
    found = []

    def visit(inner):
        if any(needs_split(v.type) for v in inner.operands):
            found.append(inner)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    op.operation.walk(visit)
    return bool(found)


def iterators(op) -> list[str]:
    if "iterator_types" in op.attributes:
        return [str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    out = [v for v in op.operands if isinstance(v.type, ir.MemRefType)][-1]
    return ["parallel"] * ir.MemRefType(out.type).rank


def _as_linalg(op):
    """memref.copy (no TilingInterface) as the linalg.copy it is; other ops as they are."""
    if op.name != "memref.copy":
        return op
    with ir.InsertionPoint(op), op.location:
        linalg.copy(op.operands[0], outs=[op.operands[1]])  # on buffers: no result, so find the op
    ops = [o.operation for o in op.parent.regions[0].blocks[0].operations]
    new = ops[ops.index(op) - 1]
    op.erase()
    return new


def tile_sizes(op, caps: GpuCapabilities) -> tuple[list[int], list[int]]:
    """(block tile sizes, threads per block per loop) for `op`: the innermost parallel loop is
    split over the block's threads, the other parallel loops are one block per index, reduction
    loops are not tiled (0)."""
    its = iterators(op)
    parallel = [d for d, it in enumerate(its) if it == "parallel"]
    inner = parallel[-1] if parallel else None
    blocks = [1 if it == "parallel" else 0 for it in its]
    threads = [0] * len(its)
    if inner is not None:
        blocks[inner] = caps.block_threads * ELEMENTS_PER_THREAD
        threads[inner] = caps.block_threads
    return blocks, threads


def _script(module: ir.Module, plans: list[tuple[list[int], list[int]]]) -> ir.Operation:
    """A transform module tiling payload op i (marked TILE = i) by plans[i], then lowering it to loops."""
    any_op = transform.AnyOpType.get()
    with ir.InsertionPoint(module.body):
        holder = ir.Operation.create("builtin.module", regions=1)
        holder.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        holder.regions[0].blocks.append()
    with ir.InsertionPoint(holder.regions[0].blocks[0]):
        seq = transform.NamedSequenceOp("__transform_main", [any_op], [],
                                        arg_attrs=[{"transform.readonly": ir.UnitAttr.get()}])
        with ir.InsertionPoint(seq.body):
            root = seq.bodyTarget
            i64 = ir.IntegerType.get_signless(64)
            for i, (blocks, threads) in enumerate(plans):
                op = structured.MatchOp(any_op, root, op_attrs={TILE: ir.IntegerAttr.get(i64, i)}).result
                if any(blocks):
                    op = structured.TileUsingForallOp(any_op, any_op, op, tile_sizes=blocks).tiled_op
                if any(threads):
                    op = structured.TileUsingForallOp(any_op, any_op, op, num_threads=threads).tiled_op
                structured.ConvertToLoopsOp(any_op, op)
            transform.YieldOp([])
    return holder


def tile_to_launches(module: ir.Module, ops: list, caps: GpuCapabilities, stage: str, options) -> None:
    """Each of `ops` (linalg ops on buffers in host functions of `module`) -> a gpu.launch whose
    grid the host computes from the buffers' sizes."""
    if not ops:
        return
    with module.context, ir.Location.unknown():
        ops = [_as_linalg(op) for op in ops]
        i64 = ir.IntegerType.get_signless(64)
        plans = []
        for i, op in enumerate(ops):
            op.attributes[TILE] = ir.IntegerAttr.get(i64, i)
            plans.append(tile_sizes(op, caps))
        script = _script(module, plans)
    run_pipeline(module, "transform-interpreter", stage, options)
    script.erase()
    # Only these ops' loops are scf.forall here: the rest of the host function is linalg ops,
    # library ops and launches built before. The grid stays affine.apply on the sizes (the host
    # schedule reads it as such); the kernels' affine ops are lowered with the kernels.
    run_pipeline(module, "func.func(scf-forall-to-parallel, gpu-map-parallel-loops), "
                         "convert-parallel-loops-to-gpu, canonicalize", stage, options)
    mark_unmarked(module, "tiled")  # every launch built before is marked: these are the tiled ones
