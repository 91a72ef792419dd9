"""The `gpu` stage's own rewrites, each a named pass of the cuda target (pipeline.GPU) and, in
the same order, what `convert_module` runs for a target that takes them as one step.

Every bufferized structured op of a host function becomes a `gpu.launch` (kernels.py), except
matmul/conv/pooling, which (with `library_matmul` on) stay for the host schedule to hand to
torch (cuBLAS/cuDNN); with it off they are generalized into linalg.generic and get generated
kernels like any other op. Before that, transposes around library ops become strided views,
zero fills feeding library ops are folded into them (OVERWRITE), and runs of ops on the same
rows become one launch each (rowfuse.py); a fill feeding a block row reduction is folded into
that reduction's kernel.
"""

from __future__ import annotations

import itertools
import logging

from torch_mlir import ir, passmanager
from torch_mlir.dialects import func, memref

from ..gpu import kernels, rowfuse
from .matmul_bias import fold_bias_into_matmuls
from .library_calls import ATTENTION, ATTENTIONS, is_call, is_declaration, retype, written_operands
from ..gpu.rowkernel import row_kernel
from ..attributes import OVERWRITE  # set on a library op whose accumulator was a zero fill
from ..passes import CompileError
from ..provenance import location_with_body
from .host_ops import host_ops, output_of, touches, used_between, written_between
from ..gpu.loopnest import LOOP_NESTS, REDUCTION, VIEW_OPS, LoopNest, Unsupported, op_name, root_of
from ..gpu import tiled
from ..gpu.capabilities import capabilities_for
from ..gpu.kernel_abi import split_dynamic_buffers
from ..gpu.row_groups import build_row_groups
from ..gpu.tiled import has_symbolic_sizes, iterators as tiled_iterators

log = logging.getLogger("dynamo_mlir")

# Ops the host schedule runs through torch when `library_matmul` is on.
LIBRARY_OPS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nchw_fchw",
               "linalg.conv_2d_ngchw_gfchw", "linalg.pooling_nchw_max", "linalg.pooling_nchw_sum")


def flat_view(value: ir.Value, cache: dict) -> ir.Value:
    """The root buffer of `value` as a 1-D memref (made before the launch, in the host)."""
    root = root_of(value)
    if root not in cache:
        t = ir.MemRefType(root.type)
        n = kernels.prod(t.shape)
        flat_t = ir.MemRefType.get([n], t.element_type)
        cache[root] = memref.reinterpret_cast(flat_t, root, [], [], [], [0], [n], [1])
    return cache[root]


def _is_zero(value: ir.Value) -> bool:
    if op_name(value) != "arith.constant":
        return False
    attr = value.owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value == 0.0 and str(attr).lstrip().startswith("0")
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 0


MATMULS = ("linalg.matmul", "linalg.batch_matmul")


def fold_transposes_into_matmuls(func_op) -> int:
    """A transpose whose result only feeds library matmuls (a linear's weight, attention's K^T)
    or a library attention's q, k, v (heads moved in front of the sequence) is not
    materialized: they read a transposed view of its input instead, which torch's matmul hands
    cuBLAS as a transposed operand and torch's SDPA takes as it is (a strided view, as in
    eager). That saves a copy kernel and its buffer per linear layer, three per attention.
    Returns how many were folded."""
    folded = 0
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations]:
        if op.name != "linalg.transpose":
            continue
        view = op.opview
        buffer, users = view.init, _users(view.init)
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        if op_name(buffer) != "memref.alloc" or not _only_read_as_views(buffer, users, op, permutation):
            continue
        # The readers now read the transpose's input where they are, not where the transpose
        # was: bufferization may have let an op in between write that buffer in place (its
        # value was dead after the transpose then).
        if any(written_between(root_of(view.input), op, reader) for reader in users if reader != op):
            continue
        with ir.InsertionPoint(op), op.location:  # where the copy was: a fill before a matmul stays next to it
            transposed = transposed_view(view.input, permutation)
        for user in users:
            if user.name in MATMULS or _is_attention(user):
                for k, operand in enumerate(user.operands):
                    if operand == buffer:
                        user.operands[k] = transposed
                if user.name == "func.call":
                    retype(user)
        _erase_with_buffer(op, buffer)
        folded += 1
    return folded


def _erase_with_buffer(op, buffer: ir.Value) -> None:
    """Erase `op` and the alloc of `buffer`, with its deallocs (nothing else may use it)."""
    op.erase()
    for user in _users(buffer):
        user.erase()
    buffer.owner.erase()


def _users(value: ir.Value) -> list[ir.Operation]:
    return [use.owner.operation if hasattr(use.owner, "operation") else use.owner for use in value.uses]


def _keeps_last_dim(permutation: list[int]) -> bool:
    """torch's fused attention kernels need the head dim innermost (stride 1): else SDPA would
    fall back to its math kernel."""
    return permutation[-1] == len(permutation) - 1


def _read_as_view(user, buffer: ir.Value, permutation: list[int]) -> bool:
    if user.name in MATMULS:
        return output_of(user) != buffer
    return _is_attention(user) and buffer not in written_operands(user) and _keeps_last_dim(permutation)


def _is_attention(op) -> bool:
    return any(is_call(op, kind) for kind in ATTENTIONS)


def _only_read_as_views(buffer: ir.Value, users: list, transpose, permutation: list[int]) -> bool:
    """Written by `transpose` alone, read only as an input of library ops taking strided views
    (matmuls, attention), freed by deallocs."""
    readers = [u for u in users if u != transpose and u.name != "memref.dealloc"]
    return bool(readers) and all(_read_as_view(u, buffer, permutation) for u in readers)


def fold_transposes_of_attention(func_op) -> int:
    """A library attention's result [B, H, L, E] that only a transpose reads (back to
    [B, L, H, E], before the heads are merged), or one of its backward's dq, dk, dv: the call
    writes a transposed view of the transpose's buffer instead, as eager's fused kernels lay
    their output out, so the transpose costs no kernel (attention_grad's runner copies each
    gradient into its view: one pass instead of a copy and a transpose). Returns how many were
    folded."""
    folded = 0
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations]:
        if op.name != "linalg.transpose":
            continue
        view = op.opview
        source, dest = view.input, view.init
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        writer = _sole_attention_writer(source, op)
        if writer is None or not _keeps_last_dim(permutation) or used_between(dest, writer, op) \
                or not _defined_before(dest, writer):
            continue
        with ir.InsertionPoint(writer), op.location:
            writer.operands[list(writer.operands).index(source)] = transposed_view(dest, _inverse(permutation))
        if is_call(writer, ATTENTION):
            _query_laid_out_as(writer, permutation)
        retype(writer)
        _erase_with_buffer(op, source)
        folded += 1
    return folded


def _query_laid_out_as(call, permutation: list[int]) -> None:
    """Where the call's result now has the transpose's layout ([B, L, H, E] in memory), give its
    query that layout too when our kernels compute it into a buffer of its own (a rotary
    embedding's result): cuDNN's attention lays its result out as the query is (torch's
    alloc_with_matching_layout), so that result is then the call's buffer as it is, with no copy
    (codegen/cuda/library.py _write). Flash and memory-efficient attention write that layout
    whatever the query's, and read a strided query as eager hands it to them. Every use of the
    buffer must take any layout: linalg ops and copies (reading or writing it), attention calls
    reading it as their query (memory planning gives every layer's query one buffer), subviews
    used so (a concat's halves)."""
    query = call.operands[0]
    t = ir.MemRefType(query.type)
    if op_name(query) != "memref.alloc" or t.layout != ir.MemRefType.get(t.shape, t.element_type).layout:
        return
    users = [u for u in _users(query) if u.name != "memref.dealloc"]
    if not all(_takes_any_layout(u, query) for u in users):
        return
    others = [u for u in users if u != call and _is_attention(u)]
    alloc = query.owner
    with ir.InsertionPoint(alloc), alloc.location:
        base = memref.alloc(ir.MemRefType.get([t.shape[p] for p in permutation], t.element_type), [], [])
        view = transposed_view(base, _inverse(permutation))
    for sub in [u for u in users if u.name == "memref.subview"]:
        with ir.InsertionPoint(sub), sub.location:
            part = memref.subview(view, *(list(ir.DenseI64ArrayAttr(sub.attributes[k]))
                                          for k in ("static_offsets", "static_sizes", "static_strides")))
        sub.result.replace_all_uses_with(part)
        sub.erase()
    for use in list(query.uses):
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        owner.operands[use.operand_number] = base if owner.name == "memref.dealloc" else view
    for other in others:  # (the caller retypes `call`)
        retype(other)
    alloc.erase()


def _takes_any_layout(op, buffer: ir.Value) -> bool:
    """Whether `op`'s use of `buffer` holds for any layout of it: a linalg op or a copy (reading
    or writing it element by element), an attention call reading it as its query, a subview of
    static offsets, sizes and strides of the same rank whose own uses do."""
    if op.name.startswith("linalg.") or op.name == "memref.copy":
        return True
    if _is_attention(op):
        return list(op.operands).index(buffer) == 0 and buffer not in written_operands(op)
    if op.name != "memref.subview" or list(op.operands)[1:]:
        return False
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static = all(dynamic not in list(ir.DenseI64ArrayAttr(op.attributes[k])) for k in ("static_offsets", "static_strides"))
    same_rank = ir.MemRefType(op.operands[0].type).rank == ir.MemRefType(op.result.type).rank
    return static and same_rank and all(_takes_any_layout(u, op.result) for u in _users(op.result))


def _sole_attention_writer(buffer: ir.Value, transpose):
    """The library attention call (or its backward) writing `buffer` (an alloc) when that call
    and `transpose` are its only users besides deallocs, else None."""
    if op_name(buffer) != "memref.alloc":
        return None
    others = [u for u in _users(buffer) if u != transpose and u.name != "memref.dealloc"]
    if len(others) != 1 or not _is_attention(others[0]) or buffer not in written_operands(others[0]) \
            or list(others[0].operands).count(buffer) != 1:
        return None
    return others[0]


def _defined_before(dest: ir.Value, call) -> bool:
    """Whether `dest` is available at `call`: a function argument, an alloc (moved there), or a
    static view of one of those (a result out-param reinterpreted in the shape it is written in)."""
    if isinstance(dest.owner, ir.Block):
        return True
    op = dest.owner.operation
    if op.name in VIEW_OPS:
        if list(op.operands)[1:] or not _defined_before(op.operands[0], call):
            return False
    elif op.name != "memref.alloc":
        return False
    ops = [o.operation for o in call.block.operations]
    if ops.index(op) > ops.index(call):  # never later: earlier users must keep it
        op.move_before(call)
    return True


def _inverse(permutation: list[int]) -> list[int]:
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return inverse


def transposed_view(source: ir.Value, permutation: list[int]) -> ir.Value:
    """memref.transpose of `source`: dims permuted, strides with them (no data moved)."""
    t = ir.MemRefType(source.type)
    strides, offset = t.get_strides_and_offset()
    layout = ir.StridedLayoutAttr.get(offset, [strides[p] for p in permutation])
    result = ir.MemRefType.get([t.shape[p] for p in permutation], t.element_type, layout)
    return memref.transpose(result, source, ir.AffineMapAttr.get(ir.AffineMap.get_permutation(permutation)))


def generalize(op) -> ir.Operation:
    """Replace the named linalg op `op` by the equivalent linalg.generic (MLIR's own
    generalization). It runs on a copy of the op alone in a scratch function: over the host
    function, the pass would turn the fills, copies and transposes into generics as well, and
    the fill folding and row fusion here recognize those by name."""
    operands = list(op.operands)
    with op.context, op.location:
        scratch = ir.Module.create()
        with ir.InsertionPoint(scratch.body):
            fn = func.FuncOp("scratch", ir.FunctionType.get([v.type for v in operands], []))
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                _rewire(op.clone(), block.arguments)
                func.ReturnOp([])
        passmanager.PassManager.parse("builtin.module(func.func(linalg-generalize-named-ops))").run(scratch.operation)
        generic = next(iter(block.operations)).operation
        if generic.name != "linalg.generic":
            raise Unsupported(f"'{op.name}' did not generalize into a linalg.generic (got '{generic.name}')")
        with ir.InsertionPoint(op):
            new = _rewire(generic.clone(), operands)
    op.erase()
    return new


def _rewire(op: ir.Operation, values) -> ir.Operation:
    for i, v in enumerate(values):
        op.operands[i] = v
    return op


def generalize_library_ops(func_op) -> int:
    """With `library_matmul` off: every matmul/conv/pooling of the host function becomes a
    linalg.generic, so row fusion and cuda-kernels make kernels of it like any other op.
    Returns how many."""
    ops = [op for op in host_ops(func_op) if op.name in LIBRARY_OPS]
    for op in ops:
        generalize(op)
    return len(ops)


def fold_fills_into_library_ops(func_op) -> int:
    """A fill of the buffer a library op writes costs a launch the op can do without: the fill
    is erased and the op marked OVERWRITE, so the host schedule has torch write the output
    instead of accumulating into it (cuBLAS's beta = 0: no memset, no read of C). The fill need
    not be right before the op (the op's input copies and views often come between), only the
    last op touching that buffer before it, filling exactly the view the op writes. A zero fill
    folds into any library op; max pooling's fill is -inf, which the pooled result overwrites
    as it would zeros. Returns how many."""
    ops = host_ops(func_op)
    folded = 0
    for j, op in enumerate(ops):
        if op.name not in LIBRARY_OPS:
            continue
        out = output_of(op)
        root = root_of(out)
        fill = next((ops[i] for i in range(j - 1, -1, -1) if touches(ops[i], root)), None)
        if fill is None or op_name(fill) != "linalg.fill" or fill.opview.outputs[0] != out:
            continue
        if _is_zero(fill.opview.inputs[0]) or op.name == "linalg.pooling_nchw_max":
            op.attributes[OVERWRITE] = ir.UnitAttr.get()
            fill.erase()
            folded += 1
    return folded


def fuse_row_groups(func_op, keep_rows=None) -> list[str]:
    """Each row group of the host function (rowfuse.py) -> one gpu.launch, placed where its
    last op was, its ops erased; keep_rows(found groups) -> the groups to fuse (default: all).
    Returns the schedule of each launch."""
    ops = host_ops(func_op)
    found = rowfuse.find_groups(ops)
    found = keep_rows(found) if keep_rows else found
    chosen = [_build_group(group, ops) for group in found]
    for i in sorted(i for group in found for i in group.indices):
        ops[i].erase()
    return chosen


def build_kernels(func_op) -> list[str]:
    """Each op of LOOP_NESTS left in the host function -> a gpu.launch (kernels.py); library
    ops and launches made before are left as they are. Returns the schedule chosen per kernel.

    A fill right before a reduction into its buffer is folded here, not by a pass of its
    own: its value, a scalar of the host function, becomes the initial accumulator inside the
    reduction's kernel as that kernel is built. Between two passes the fill would have to be
    gone while the reduction still read its output, with nothing in the IR to say it must not."""
    ops = host_ops(func_op)
    fill_of = _fills_before_reductions(ops)  # reduction index -> indices of the fills it absorbs
    folded = {i for fills in fill_of.values() for i in fills}
    chosen = []
    for i, op in enumerate(ops):
        build = LOOP_NESTS.get(op.name)
        if build is None or i in folded:  # a host op, or a fill folded into a later op
            continue
        if has_symbolic_sizes(op):  # left for the tiled strategy (kernels_pass)
            continue
        nest = build(op.opview)
        schedule = kernels.schedule_for(nest)
        with ir.InsertionPoint(op), location_with_body([op]):
            cache: dict = {}
            for a in nest.inputs + nest.outputs:
                a.flat = flat_view(a.value, cache)
            _build(schedule, nest, [ops[f].opview.inputs[0] for f in fill_of[i]] if i in fill_of else None)
        op.erase()
        chosen.append(f"{nest.name}:{schedule}")
    for i in folded:
        ops[i].erase()
    return chosen


# Kernel strategies that take a folded fill's value as a reduction's initial accumulator.
FOLDS_FILLS = ("row_reduce", "serial", "split")


def _fills_before_reductions(ops: list) -> dict[int, list[int]]:
    """{reduction: its fill per output} for each reduction (a row reduction, a column sum's
    thread-per-output stage, sibling sums with a result each) right after fills of exactly its
    outputs, one each: allocations and views may come between, nothing else."""
    found = {}
    for j, op in enumerate(ops):
        if op.name not in LOOP_NESTS or op.name == "linalg.fill" or has_symbolic_sizes(op):
            continue  # the tiled strategy takes reductions of symbolic sizes, and their fills
        fills = _fills_right_before(ops, j, _outputs(op))
        if fills is None:
            continue
        nest = LOOP_NESTS[op.name](op.opview)
        if REDUCTION in nest.iterators and kernels.schedule_for(nest) in FOLDS_FILLS:
            found[j] = fills
    return found


def _outputs(op) -> list[ir.Value]:
    return list(op.opview.outputs) if op.name == "linalg.generic" else [output_of(op)]


def _fills_right_before(ops: list, j: int, outs: list[ir.Value]) -> list[int] | None:
    """The fill of each of `outs`, found among the ops before ops[j] (allocations and views
    skipped: a launch built already names the buffers it touches only inside its body, so
    nothing else may come between), or None where an output has none there."""
    fills: dict[int, int] = {}
    i = j - 1
    while i >= 0 and len(fills) < len(outs):
        if ops[i].name not in rowfuse.NEUTRAL:
            if op_name(ops[i]) != "linalg.fill" or has_symbolic_sizes(ops[i]):
                return None
            target = ops[i].opview.outputs[0]
            k = next((k for k, out in enumerate(outs) if out == target and k not in fills), None)
            if k is None:
                return None
            fills[k] = i
        i -= 1
    return [fills[k] for k in range(len(outs))] if len(fills) == len(outs) else None


def erase_empty_loop_nests(func_op) -> int:
    """An op of LOOP_NESTS with a zero-size operand has zero trips (every dim of an operand is
    indexed by a loop): it touches no element, and a view of zero elements may not even have
    static strides to build a kernel from. A reduction's fill into a non-empty output is an op of
    its own and stays. Returns how many were erased."""
    empty = [op.operation for op in func_op.regions[0].blocks[0].operations
             if op.operation.name in LOOP_NESTS and any(_is_empty(v) for v in op.operation.operands)]
    for op in empty:
        op.erase()
    return len(empty)


def _is_empty(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType) and 0 in ir.MemRefType(value.type).shape


def row_filter(rows, graph: str):
    """found groups -> the ones kept: all, or those `rows` (cuda_rowfuse_only) selects, numbered
    across the graph's host functions in order."""
    if rows is None:
        return lambda found: found
    numbered = itertools.count()

    def keep(found: list) -> list:
        kept = [g for g in found if rows.keeps(graph, next(numbered))]
        log.warning("dynamo-mlir: %s: cuda_rowfuse_only kept %d of %d row groups", graph, len(kept), len(found))
        return kept

    return keep


def _build_group(group: rowfuse.RowGroup, ops: list) -> str:
    """One launch for a fused row group, placed before its last op (all operands exist there)."""
    # The members' locations on the launch: the kernel's name lists their graph ops.
    location = location_with_body([ops[i] for i in group.indices])
    with ir.InsertionPoint(ops[group.indices[-1]]), location:
        cache: dict = {}
        for nest in group.nests:
            for a in nest.inputs + nest.outputs:
                a.flat = flat_view(a.value, cache)
        row_kernel(group, rowfuse.live_roots(group, ops))
    return "+".join(n.name for n in group.nests) + ":row_fused"


def _build(schedule: str, nest: LoopNest, inits: list | None) -> None:
    if schedule in FOLDS_FILLS:
        kernels.BUILDERS[schedule](nest, inits)
    else:
        kernels.BUILDERS[schedule](nest)


def host_functions(module: ir.Module) -> list:
    return [op for op in module.body.operations if op_name(op) == "func.func" and not is_declaration(op)]


def convert_module(module: ir.Module, library: bool = True, fuse_rows: bool = True, rows=None,
                   graph: str = "") -> list[str]:
    """Every host function of `module` (the graph `graph`) as kernels, by the rewrites the cuda
    target runs as passes of the gpu stage, in their order (for a target that takes them as one
    step: codegen/stages.map_to_gpu). `rows`: a RowSelection or None."""
    mark_container(module)
    keep_rows = row_filter(rows, graph)
    chosen = []
    for op in host_functions(module):
        if library:
            fold_transposes_into_matmuls(op)
        fold_transposes_of_attention(op)
        erase_empty_loop_nests(op)
        if library:
            fold_fills_into_library_ops(op)
            fold_bias_into_matmuls(op)
        else:
            generalize_library_ops(op)
        if fuse_rows:
            chosen += fuse_row_groups(op, keep_rows)
        chosen += build_kernels(op)
    log.debug("dynamo-mlir: cuda kernels: %s", ", ".join(chosen))
    return chosen


def per_host(rewrite):
    """A pass running `rewrite(func_op)` on each host function; what it cannot make kernels of
    (loopnest.Unsupported) fails the gpu stage."""
    def run(module, options):
        try:
            with module.context, ir.Location.unknown():
                for func_op in host_functions(module):
                    rewrite(func_op)
        except Unsupported as e:
            raise CompileError("gpu", str(e)) from None
    return run


def kernels_pass(module: ir.Module, options) -> None:
    """build_kernels on every host function of the module, then the ops with symbolic sizes: row
    reductions, with the ops on their rows, one block per row (codegen/gpu/row_groups.py), the rest through the tiled strategy
    (codegen/gpu/tiled.py); their buffers passed as pointer and sizes."""
    mark_container(module)
    per_host(build_kernels)(module, options)
    if not any(op.operation.name in LOOP_NESTS for f in host_functions(module)
               for op in f.regions[0].blocks[0].operations):
        return  # every op of static sizes is a kernel now (a target without symbolic sizes stops here)
    caps = capabilities_for(options.target_options.gpu_arch())
    vectors = getattr(options.target_options, "cuda_row_vectors", False)  # a plugin's options: off
    per_host(lambda f: build_row_groups(f, caps, vectors))(module, options)
    symbolic = [op.operation for f in host_functions(module) for op in f.regions[0].blocks[0].operations
                if op.operation.name in LOOP_NESTS and has_symbolic_sizes(op.operation)]
    for op in symbolic:
        if "parallel" not in tiled_iterators(op):
            raise CompileError("gpu", f"'{op.name}' with symbolic sizes and no parallel loop (a whole reduction) "
                                      "has no tiled GPU strategy yet")
    if symbolic:
        tiled.tile_to_launches(module, symbolic, caps, "gpu", options)
    per_host(split_dynamic_buffers)(module, options)


def mark_container(module: ir.Module) -> None:
    """The module holds gpu.modules (after outlining) and launches them."""
    module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
