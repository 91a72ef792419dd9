"""A kernel's buffers with symbolic sizes, passed as a bare pointer plus `index` values.

Every kernel of the GPU targets is called with bare pointers (`use-bare-ptr-memref-call-conv`):
one pointer per buffer, which is what the host schedule hands the driver. That convention has
no room for a size known only at run time, so a buffer of dynamic shape, strides or offset that
a gpu.launch reads is split at the launch, before outlining:
- in the host: its base buffer as a one-element memref (a bare pointer), and its dynamic offset,
  sizes and strides (`memref.extract_strided_metadata`);
- in the kernel: the same view rebuilt from them (`memref.reinterpret_cast`, static where the
  type is static), used instead of the buffer.
Outlining then passes the pointer and the `index` values as the kernel's arguments.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.dialects import memref

_DYNAMIC = ir.ShapedType.get_dynamic_size()  # also what a dynamic stride or offset reads as


def needs_split(t: ir.Type) -> bool:
    if not isinstance(t, ir.MemRefType):
        return False
    m = ir.MemRefType(t)
    strides, offset = m.get_strides_and_offset()
    return _DYNAMIC in [*m.shape, *strides, offset]


def _captured(launch) -> list[ir.Value]:
    """Memref values defined outside `launch` and used inside it, in first-use order."""
    body = launch.regions[0]
    found: dict = {}

    def visit(op):
        for v in op.operands:
            if needs_split(v.type) and v not in found and not _inside(_defining_op(v), launch):
                found[v] = None
        return ir.WalkResult.ADVANCE

    for block in body.blocks:
        for op in block.operations:
            op.operation.walk(visit)
    return list(found)


def _defining_op(v: ir.Value):
    """The op defining `v`, or for a block argument the op owning its block."""
    owner = v.owner
    return owner.owner if isinstance(owner, ir.Block) else owner


def _inside(op, launch) -> bool:
    """Whether `op` is `launch` or nested in it."""
    launch = launch.operation
    op = op.operation if op is not None else None
    while op is not None:
        if op == launch:
            return True
        op = op.parent
    return False


def _split(v: ir.Value, launch, entry: ir.Block) -> None:
    t = ir.MemRefType(v.type)
    strides, offset = t.get_strides_and_offset()
    with ir.InsertionPoint(launch):
        meta = memref.ExtractStridedMetadataOp(v)
        pointer = memref.reinterpret_cast(ir.MemRefType.get([1], t.element_type, memory_space=t.memory_space),
                                          meta.base_buffer, [], [], [], static_offsets=[0], static_sizes=[1],
                                          static_strides=[1])
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    offsets = [meta.offset] if offset == dynamic else []
    sizes = [s for s, n in zip(meta.sizes, t.shape) if n == _DYNAMIC]
    steps = [s for s, n in zip(meta.strides, strides) if n == dynamic]
    with ir.InsertionPoint.at_block_begin(entry):
        view = memref.reinterpret_cast(t, pointer, offsets, sizes, steps, static_offsets=[offset],
                                       static_sizes=list(t.shape), static_strides=list(strides))
    for use in list(v.uses):
        if _inside(use.owner, launch) and use.owner != view.owner:
            use.owner.operands[use.operand_number] = view


def split_dynamic_buffers(func_op) -> int:
    """Every gpu.launch of `func_op`: buffers of symbolic layout split into pointer and sizes.
    Returns how many buffers were split."""
    launches = [op for op in func_op.regions[0].blocks[0].operations if op.operation.name == "gpu.launch"]
    count = 0
    for launch in launches:
        entry = launch.regions[0].blocks[0]
        for v in _captured(launch):
            _split(v, launch.operation, entry)
            count += 1
    return count


def extern_dynamic_shared(module: ir.Module) -> None:
    """The launch's dynamic shared memory (gpu.dynamic_shared_memory, row_staging.py) declared as
    an external zero-length array in the device module's LLVM dialect.

    Upstream's lowering (convert-gpu-to-nvvm / -rocdl) declares it `internal`. NVPTX then demotes
    an internal shared global used by one kernel to a variable of that kernel, and a zero-length
    one is printed as one byte (`.shared .align 16 .b8 __dynamic_shmem__0;`): the kernel's slots
    would overlap its static shared memory. An external declaration is the launch's dynamic
    shared memory (`.extern .shared .align 16 .b8 __dynamic_shmem__0[];`, what CUDA C's `extern
    __shared__` array compiles to). The rocm example declares its dynamic LDS the same way, as
    AMDGPU expects it; that path has been compiled to code objects, never run on AMD hardware."""
    external = ir.Attribute.parse("#llvm.linkage<external>")
    found = []

    def visit(op):
        op = op.operation if hasattr(op, "operation") else op
        if op.name == "llvm.mlir.global" and "value" not in op.attributes and not op.regions[0].blocks \
                and str(op.attributes["global_type"]).startswith("!llvm.array<0 x"):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        op.attributes["linkage"] = external
