"""Zero-element memref arguments under the bare-pointer calling convention.

`convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}` refuses a function with an argument
such as `memref<1x0x3xf32>` (the conversion leaves the func.func unconverted and the JIT fails).
Such a tensor holds no data, so the argument is given a one-element type instead and a
`memref.reinterpret_cast` rebuilds the zero-element view inside the function; no load or store
ever touches it (every loop over it has zero trips). Run on the bufferized module, before LLVM.
"""

from torch_mlir import ir
from torch_mlir.dialects import func, memref

from .functions import defined_functions


def row_major_strides(shape: list[int]) -> list[int]:
    strides, running = [], 1
    for s in reversed(shape):
        strides.append(running)
        running *= s
    return list(reversed(strides))


def _is_zero_size(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType) and ir.MemRefType(t).has_static_shape and 0 in ir.MemRefType(t).shape


def uses_bare_pointers(module: ir.Module) -> bool:
    """Whether convert-func-to-llvm gets the bare-pointer convention (stages.loops_to_llvm):
    static shapes only. With a `?` dim in any function's arguments, or an `index` argument (a
    size the graph passes: the cpu runtime calls such a function as one of symbolic sizes,
    DynamicCpuFunction), every memref is a descriptor. Static memrefs beside an `index`
    argument were compiled for bare pointers and called with descriptors: the call read its
    buffers from the wrong slots and crashed the process (`BIAS[k:k + 4] + x` with k a
    dynamic int; fuzz seed 53 program 195's backward)."""
    for op in module.body.operations:
        if op.operation.name == "func.func":
            # a library function's declaration takes sizes too (the cpu's conv calls): only the
            # module's own public functions are called by the runtime
            called = "sym_visibility" not in op.attributes and len(op.regions[0].blocks) > 0
            for t in ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs:
                if (called and isinstance(t, ir.IndexType)) or (isinstance(t, ir.MemRefType)
                                                                and not ir.MemRefType(t).has_static_shape):
                    return False
    return True


def widen_zero_size_arguments(module: ir.Module) -> ir.Module:
    """Only where bare pointers will be used: a descriptor describes a zero-size memref well, and
    the runtime lays out each descriptor by the argument's rank in the signature
    (DynamicCpuFunction), so a widened memref<1x..> there would shift every later argument."""
    if not uses_bare_pointers(module):
        return module
    for op in defined_functions(module):
        _widen(op.opview if hasattr(op, "opview") else op)
    return module


def _widen(fn) -> None:
    block = fn.regions[0].blocks[0]
    changed = False
    for arg in block.arguments:
        if not _is_zero_size(arg.type):
            continue
        old = ir.MemRefType(arg.type)
        shape = list(old.shape)
        arg.set_type(ir.MemRefType.get([1], old.element_type))
        with ir.InsertionPoint.at_block_begin(block), fn.location:
            view = memref.reinterpret_cast(old, arg, [], [], [], [0], shape, row_major_strides(shape))
        arg.replace_all_uses_except(view, view.owner.operation)
        changed = True
    if changed:
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        new = ir.FunctionType.get([a.type for a in block.arguments], ftype.results)
        fn.attributes["function_type"] = ir.TypeAttr.get(new)


def distinct_results(module: ir.Module) -> ir.Module:
    """Give every returned tensor its own buffer: after CSE a function may return one value
    twice (two equal constants fold into one), which crashes buffer-results-to-out-params.
    A repeat becomes a copy (`bufferization.alloc_tensor copy(...)`). A returned `tensor.empty`
    (a zero-size result folds to one) becomes an allocation of its own: one-shot-bufferize lets
    an op write in place into an empty's buffer that is also returned (its contents are
    undefined, so no conflict is seen), which is the same buffer returned twice again.
    Run right before bufferizing."""
    from torch_mlir.dialects import bufferization

    def static(v) -> bool:
        return isinstance(v.type, ir.RankedTensorType) and ir.RankedTensorType(v.type).has_static_shape

    def visit(op):
        if op.name == "func.return":
            seen = set()
            for i, v in enumerate(list(op.operands)):
                empty = isinstance(v.owner, ir.OpView) and v.owner.operation.name == "tensor.empty"
                if static(v) and (v in seen or empty):
                    with ir.InsertionPoint(op), op.location:
                        op.operands[i] = bufferization.alloc_tensor(v.type, [], copy=None if empty else v)
                seen.add(v)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return module
