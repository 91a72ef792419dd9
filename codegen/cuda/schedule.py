"""The host schedule: the host function, after outlining, read once into a list of steps that
the runtime replays with torch tensors (no host code is compiled).

Buffers live in numbered slots: the function's arguments first (inputs, then outputs, as
buffer-results-to-out-params left them), then the buffers it allocates, then constants. An
input's slot is read only, unless the function computes that input's new value into it (an
optimizer step's parameters: codegen/written_inputs.py), which `HostSchedule.written` lists. Every
memref value the host function uses is a `View` of one slot (shape, strides, offset in
elements, read off its static memref type), so subviews, reshapes and reinterpret_casts cost
nothing at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from torch_mlir import ir, passmanager

from ..attributes import WRITTEN_ARGUMENTS
from ..gpu import host_sizes
from ..gpu.kernel_abi import needs_split
from ..provenance import nodes_of
from ..gpu.loopnest import VIEW_OPS, Unsupported, layout, op_name
from .library_calls import CALL_KIND, call_attrs, is_declaration
from .to_gpu import LIBRARY_OPS, OVERWRITE

# MLIR element type (as printed) -> torch dtype name; names keep this module torch-free.
DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
          "i32": "int32", "i16": "int16", "i8": "int8", "i1": "bool"}


@dataclass(frozen=True)
class View:
    slot: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    def __str__(self):
        return f"%{self.slot}[{'x'.join(map(str, self.shape))}|{','.join(map(str, self.strides))}+{self.offset}]"


@dataclass(frozen=True)
class Alloc:
    slot: int
    numel: int
    dtype: str

    def __str__(self):
        return f"%{self.slot} = empty({self.numel}, {self.dtype})"


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple  # ("ptr", slot) or (scalar type, value)
    shared: object = 0  # bytes of dynamic shared memory: an int, or a size expression of the call

    def __str__(self):
        args = ", ".join(f"%{v}" if k == "ptr" else f"{v}:{k}" for k, v in self.args)
        shared = f" shared={self.shared}" if self.shared != 0 else ""
        return f"launch {self.kernel} grid={self.grid} block={self.block}{shared} ({args})"


@dataclass(frozen=True)
class Store:
    """A value the host computes (a size) written into one element of a device buffer."""

    view: View   # 0-d: the element
    value: object  # an int or a host_sizes expression

    def __str__(self):
        return f"{self.view} = {self.value}"


@dataclass(frozen=True)
class Library:
    op: str                 # linalg op name, or a library call's kind (library_calls.py)
    operands: tuple         # Views: inputs then the output
    overwrite: bool         # the output starts as zeros (no accumulate)
    attrs: tuple = ()       # (name, tuple of ints, an int or a str)
    nodes: tuple = ()       # the FX nodes (ATen ops) this call computes, from the op's location

    def __str__(self):
        return (f"torch {self.op}({', '.join(map(str, self.operands))}) overwrite={self.overwrite} {dict(self.attrs)}"
                f" for {', '.join(self.nodes) or '?'}")


@dataclass
class HostSchedule:
    name: str
    n_args: int
    arg_types: list[tuple[tuple[int, ...], str]]
    steps: list = field(default_factory=list)
    constants: dict = field(default_factory=dict)  # slot -> Constant
    n_slots: int = 0
    kernels: list[str] = field(default_factory=list)
    max_elements: int = 0
    symbolic: bool = False  # it takes or allocates a buffer of symbolic size (max_elements does not bound it)
    index_bits: int = 64  # width of `index` in the kernels (set by the nvvm stage)
    written: tuple[int, ...] = ()  # the input slots steps write (WRITTEN_ARGUMENTS)

    @property
    def library_nodes(self) -> frozenset[str]:
        return frozenset(n for step in self.steps if isinstance(step, Library) for n in step.nodes)

    def __str__(self):
        args = ", ".join(f"%{i}: {_type_text(s, d)}{' written' if i in self.written else ''}"
                         for i, (s, d) in enumerate(self.arg_types))
        lines = [f"host {self.name}({args})"]
        lines += [f"  %{s} = {c}" for s, c in self.constants.items()]
        lines += [f"  {step}" for step in self.steps]
        return "\n".join(lines)


DYNAMIC = ir.ShapedType.get_dynamic_size()


def _sum_of(values):
    out = 0
    for v in values:
        out = host_sizes.apply("arith.addi", (out, v))
    return out


def _row_major(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step = host_sizes.apply("arith.muli", (step, n))
    return tuple(reversed(strides))


def _type_text(shape, dtype: str) -> str:
    if dtype == "index":
        return "index"
    return f"{'x'.join('?' if n < 0 else str(n) for n in shape)}x{dtype}"


def dtype_name(t: ir.Type) -> str:
    name = DTYPES.get(str(t))
    if name is None:
        raise Unsupported(f"element type {t} on the cuda target")
    return name


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def max_elements(func_op) -> int:
    """The most elements of a buffer the host function takes or allocates: what a kernel's
    index arithmetic must reach (HostSchedule.max_elements)."""
    block = func_op.regions[0].blocks[0]
    buffers = [a.type for a in block.arguments]
    buffers += [op.results[0].type for op in block.operations if op_name(op) in ("memref.alloc", "memref.alloca")]
    return max([_numel(ir.MemRefType(t).shape) for t in buffers
                if isinstance(t, ir.MemRefType) and ir.MemRefType(t).has_static_shape] or [0])


def _arg_type(t: ir.Type) -> tuple[tuple[int, ...], str]:
    """(shape, dtype) of a host function argument; an `index` argument (a Python int) is ((), "index")."""
    if isinstance(t, ir.IndexType):
        return (), "index"
    m = ir.MemRefType(t)
    return tuple(m.shape), dtype_name(m.element_type)


def _is_shape_buffer(alloc) -> bool:
    """A small 1-D integer buffer that the host only stores sizes into and reshapes by (what a
    reshape to symbolic sizes bufferizes into): the schedule keeps it as expressions, on no device."""
    t = ir.MemRefType(alloc.result.type)
    if t.rank != 1 or not t.has_static_shape or not isinstance(t.element_type, (ir.IntegerType, ir.IndexType)):
        return False
    uses = [(u.owner, u.operand_number) for u in alloc.result.uses]
    kinds = {(op_name(o), n) for o, n in uses}
    return bool(uses) and kinds <= {("memref.store", 1), ("memref.load", 0), ("memref.reshape", 1), ("memref.dealloc", 0)} \
        and ("memref.reshape", 1) in kinds


def _has_symbolic_views(func_op) -> bool:
    """Whether a buffer or view of the host function has a dynamic size, stride or offset."""
    block = func_op.regions[0].blocks[0]
    values = [*block.arguments, *(r for op in block.operations for r in op.results)]
    return any(needs_split(v.type) for v in values)


def has_symbolic_buffers(func_op) -> bool:
    """Whether the host function takes or allocates a buffer of symbolic size."""
    block = func_op.regions[0].blocks[0]
    buffers = [a.type for a in block.arguments]
    buffers += [op.results[0].type for op in block.operations if op_name(op) in ("memref.alloc", "memref.alloca")]
    return any(isinstance(t, ir.MemRefType) and not ir.MemRefType(t).has_static_shape for t in buffers)


class _Reader:
    def __init__(self, module: ir.Module, func_op):
        self.module = module
        block = func_op.regions[0].blocks[0]
        args = list(block.arguments)
        for a in args:
            if not isinstance(a.type, (ir.MemRefType, ir.IndexType)):
                raise Unsupported(f"a host function argument of type {a.type}")
        self.out = HostSchedule(ir.StringAttr(func_op.attributes["sym_name"]).value, len(args),
                                [_arg_type(a.type) for a in args], n_slots=len(args))
        self.views: dict = {a: self.arg_view(i, ir.MemRefType(a.type))
                            for i, a in enumerate(args) if isinstance(a.type, ir.MemRefType)}
        # A size no input tensor carries is an `index` argument (frontend/compile.route_sizes).
        self.scalars: dict = {a: ("index", host_sizes.Arg(i)) for i, a in enumerate(args) if isinstance(a.type, ir.IndexType)}
        self.shapes: dict = {}  # shape buffers (_is_shape_buffer) -> their elements' expressions
        self.out.max_elements = max_elements(func_op)
        self.out.symbolic = has_symbolic_buffers(func_op)
        if WRITTEN_ARGUMENTS in func_op.attributes:
            self.out.written = tuple(ir.DenseI64ArrayAttr(func_op.attributes[WRITTEN_ARGUMENTS]))

    @staticmethod
    def view(slot: int, t: ir.MemRefType) -> View:
        strides, offset = layout(t)
        return View(slot, tuple(t.shape), tuple(strides), offset)

    def arg_view(self, slot: int, t: ir.MemRefType) -> View:
        """An argument's view; a dynamic dim reads the size of the tensor in the slot at run time
        (arguments come contiguous: row-major strides)."""
        if t.has_static_shape:
            return self.view(slot, t)
        if not (isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)):
            raise Unsupported(f"an argument of symbolic sizes and strided layout {t}")
        shape = tuple(host_sizes.Dim(slot, d) if n == DYNAMIC else n for d, n in enumerate(t.shape))
        return View(slot, shape, _row_major(shape), 0)

    def new_slot(self) -> int:
        self.out.n_slots += 1
        return self.out.n_slots - 1

    def read(self, op) -> None:
        name = op_name(op)
        handler = HANDLERS.get(name)
        if handler is None:
            if name in LIBRARY_OPS:
                return self.library(op)
            if name in VIEW_OPS:
                return self.view_op(op)
            raise Unsupported(f"host op '{name}' has no cuda host-schedule step")
        handler(self, op)

    def constant(self, op) -> None:
        attr = op.attributes["value"]
        if isinstance(attr, ir.FloatAttr):
            self.scalars[op.result] = (str(attr.type), ir.FloatAttr(attr).value)
        elif isinstance(attr, ir.IntegerAttr):
            self.scalars[op.result] = (str(attr.type), ir.IntegerAttr(attr).value)

    def alloc(self, op) -> None:
        t = ir.MemRefType(op.result.type)
        if _is_shape_buffer(op):
            self.shapes[op.result] = [0] * t.shape[0]
            return
        slot = self.new_slot()
        if t.has_static_shape:
            self.out.steps.append(Alloc(slot, _numel(t.shape), dtype_name(t.element_type)))
            self.views[op.result] = self.view(slot, t)
            return
        sizes = iter(self.index(v) for v in op.operands)  # one per dynamic dim, in order
        shape = tuple(next(sizes) if n == DYNAMIC else n for n in t.shape)
        self.out.steps.append(Alloc(slot, host_sizes.product(shape), dtype_name(t.element_type)))
        self.views[op.result] = View(slot, shape, _row_major(shape), 0)

    def store(self, op) -> None:
        """An element of a shape buffer (the sizes a reshape takes) is kept as an expression; a
        host value stored into a device buffer (a size made a tensor) is a Store step."""
        value, buffer, *position = op.operands
        if buffer in self.shapes:
            self.shapes[buffer][self.index(position[0])] = self.index(value)
            return
        view = self.views[buffer]
        at = host_sizes.apply("arith.addi", (view.offset, _sum_of(
            host_sizes.apply("arith.muli", (self.index(p), s)) for p, s in zip(position, view.strides))))
        self.out.steps.append(Store(View(view.slot, (), (), at), self.index(value)))

    def load(self, op) -> None:
        """A load from a shape buffer is its expression; any other host load is re-read inside
        the kernels that use it (materialize in loopnest.py), so the schedule reads no device memory."""
        buffer = op.operands[0]
        if buffer in self.shapes:
            self.scalars[op.result] = (str(op.result.type), self.shapes[buffer][self.index(op.operands[1])])

    def reshape(self, op) -> None:
        if ir.MemRefType(op.result.type).has_static_shape:
            return self.view_op(op)
        source, shape = self.views[op.operands[0]], tuple(self.shapes[op.operands[1]])
        if source.strides != _row_major(source.shape):
            raise Unsupported("memref.reshape of a strided view in the host schedule")
        self.views[op.result] = View(source.slot, shape, _row_major(shape), source.offset)

    def index(self, v: ir.Value):
        """An index value of the host function: an int, or an expression of the arguments' sizes."""
        if v not in self.scalars:
            raise Unsupported(f"an index value the host schedule cannot compute ({op_name(v) or 'an argument'})")
        return self.scalars[v][1]

    def dim(self, op) -> None:
        view = self.views[op.operands[0]]
        self.scalars[op.result] = ("index", view.shape[self.index(op.operands[1])])

    def strided_metadata(self, op) -> None:
        view = self.views[op.operands[0]]
        results = list(op.results)
        rank = len(view.shape)
        self.views[results[0]] = View(view.slot, (), (), 0)  # the base buffer: the slot's own pointer
        values = [view.offset, *view.shape, *view.strides]
        for r, value in zip(results[1:1 + 1 + 2 * rank], values):
            self.scalars[r] = ("index", value)

    def affine_apply(self, op) -> None:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        values = [self.index(v) for v in op.operands]
        (expr,) = amap.results
        self.scalars[op.result] = ("index", host_sizes.affine_apply(expr, values[:amap.n_dims], values[amap.n_dims:]))

    def reinterpret_cast(self, op) -> None:
        """A view given by offset, sizes and strides (static in the op's attributes, dynamic as its
        operands): what expand-strided-metadata makes of every view of symbolic size."""
        if not needs_split(op.result.type):  # static: its type says it all
            return self.view_op(op)
        source = self.views[op.operands[0]]
        view = op.opview
        offset, = self._mixed(view.offsets, op.attributes["static_offsets"])
        shape = self._mixed(view.sizes, op.attributes["static_sizes"])
        strides = self._mixed(view.strides, op.attributes["static_strides"])
        self.views[op.result] = View(source.slot, shape, strides, offset)

    def transpose(self, op) -> None:
        """A permuted view: result dim i is source dim perm(i) (expand-strided-metadata leaves
        memref.transpose as it is)."""
        if not needs_split(op.result.type):
            return self.view_op(op)
        source = self.views[op.operands[0]]
        perm = [e.position for e in ir.AffineMapAttr(op.attributes["permutation"]).value.results]
        self.views[op.result] = View(source.slot, tuple(source.shape[p] for p in perm),
                                     tuple(source.strides[p] for p in perm), source.offset)

    def _mixed(self, values, static) -> tuple:
        dynamic = iter(self.index(v) for v in values)
        return tuple(next(dynamic) if n == DYNAMIC else n for n in ir.DenseI64ArrayAttr(static))

    def index_op(self, op) -> None:
        name = op_name(op)
        if name == "arith.cmpi":
            name = f"arith.cmpi.{_PREDICATES[ir.IntegerAttr(op.attributes['predicate']).value]}"
        try:
            operands = [self.index(v) for v in op.operands]
        except Unsupported:
            return  # not index arithmetic of the schedule (a kernel recomputes what it needs)
        self.scalars[op.result] = (str(op.result.type), host_sizes.apply(name, operands))

    def get_global(self, op) -> None:
        name = ir.FlatSymbolRefAttr(op.attributes["name"]).value
        t = ir.MemRefType(op.result.type)
        slot = self.new_slot()
        self.out.constants[slot] = global_array(self.module, name, t)
        self.views[op.result] = self.view(slot, t)

    def view_op(self, op) -> None:
        source = self.views[op.operands[0]]
        t = ir.MemRefType(op.result.type)
        if needs_split(t):  # expand-strided-metadata made every such view a reinterpret_cast (extract)
            raise Unsupported(f"a view with symbolic sizes ('{op_name(op)}' to {t}) in the host schedule")
        self.views[op.result] = self.view(source.slot, t)

    def launch(self, op) -> None:
        lf = op.opview
        sizes = [self.scalar(v)[1] for v in (lf.gridSizeX, lf.gridSizeY, lf.gridSizeZ,
                                             lf.blockSizeX, lf.blockSizeY, lf.blockSizeZ)]
        args = []
        for v in lf.kernelOperands:
            if isinstance(v.type, ir.MemRefType):
                # The root's base pointer, also for a view with an offset (a gather from a
                # subview): views are read off static memref types, and the bare-pointer
                # convention rebuilds the kernel's memref from that type, offset included, so
                # the kernel adds the offset itself.
                args.append(("ptr", self.views[v].slot))
            else:
                args.append(self.scalar(v))
        kernel = str(lf.kernel).split("::")[0].lstrip("@")  # the gpu.module's name (see ptx.py)
        shared = lf.dynamicSharedMemorySize
        shared = 0 if shared is None else self.scalar(shared)[1]
        self.out.kernels.append(kernel)
        self.out.steps.append(Launch(kernel, tuple(sizes[:3]), tuple(sizes[3:]), tuple(args), shared))

    def scalar(self, v):
        if v not in self.scalars:
            raise Unsupported(f"a launch operand that is not a constant ({op_name(v) or 'an argument'})")
        return self.scalars[v]

    def library(self, op) -> None:
        views = tuple(self.views[v] for v in op.operands)
        attrs = tuple((name, tuple(int(x) for x in ir.DenseIntElementsAttr(op.attributes[name])))
                      for name in ("strides", "dilations") if name in op.attributes)
        nodes = tuple(sorted(nodes_of(op.location)))
        self.out.steps.append(Library(op_name(op), views, OVERWRITE in op.attributes, attrs, nodes))

    def call(self, op) -> None:
        """A torch call the cuda rules left in the host function (library_calls.py)."""
        if CALL_KIND not in op.attributes:
            raise Unsupported(f"call to {op.attributes['callee']} is no library call of the cuda target")
        kind = ir.StringAttr(op.attributes[CALL_KIND]).value
        views = tuple(self.views[v] for v in op.operands)
        self.out.steps.append(Library(kind, views, False, call_attrs(op), tuple(sorted(nodes_of(op.location)))))


# arith.cmpi's predicate attribute -> its name
_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]

HANDLERS = {
    "arith.constant": _Reader.constant,
    "memref.dim": _Reader.dim,
    "memref.extract_strided_metadata": _Reader.strided_metadata,
    **{name: _Reader.index_op for name in host_sizes.APPLY if name.count(".") == 1},
    "arith.cmpi": _Reader.index_op,
    "affine.apply": _Reader.affine_apply,
    "memref.reinterpret_cast": _Reader.reinterpret_cast,
    "memref.transpose": _Reader.transpose,
    "memref.alloc": _Reader.alloc,
    "memref.alloca": _Reader.alloc,
    "memref.get_global": _Reader.get_global,
    "gpu.launch_func": _Reader.launch,
    "func.call": _Reader.call,
    "memref.dealloc": lambda self, op: None,
    "memref.load": _Reader.load,
    "memref.store": _Reader.store,
    "memref.reshape": _Reader.reshape,
    "func.return": lambda self, op: None,
}


@dataclass(frozen=True)
class Constant:
    """A memref.global's value: `values` in a numpy type that holds it exactly (bfloat16, which
    numpy lacks, as float32), uploaded as `dtype` (a torch dtype name)."""

    values: np.ndarray
    dtype: str

    def __str__(self):
        return f"constant {self.values.shape} {self.dtype}"


def global_array(module: ir.Module, name: str, t: ir.MemRefType) -> Constant:
    for op in module.body.operations:
        if op_name(op) == "memref.global" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            attr = ir.DenseElementsAttr(op.attributes["initial_value"])
            return Constant(_dense_values(attr, t), dtype_name(t.element_type))
    raise Unsupported(f"memref.global @{name} not found")


def _dense_values(attr: ir.DenseElementsAttr, t: ir.MemRefType) -> np.ndarray:
    shape = tuple(t.shape)
    if attr.is_splat:
        value = attr.get_splat_value()
        scalar = value.value if hasattr(value, "value") else value
        return np.full(shape, scalar, dtype=_np_dtype(t.element_type))
    if str(t.element_type) == "bf16":  # the bindings' buffer protocol has no bf16
        return _bf16_from_text(str(attr)).reshape(shape)
    return np.array(attr).reshape(shape)


def _np_dtype(t: ir.Type):
    name = dtype_name(t)
    return {"bfloat16": np.float32, "bool": np.bool_}.get(name, getattr(np, name, np.float32))


def _bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _bf16_from_text(text: str) -> np.ndarray:
    """The values of a printed bf16 DenseElementsAttr: `dense<"0x...">` (raw little-endian
    bits) or `dense<[1.5, 0xFF80, ...]>` (decimal values, special values as bit patterns)."""
    literal = text[:text.rindex(" : ")].strip()  # dense<...>, without the type
    body = literal[literal.index("<") + 1:-1].strip()
    if body.startswith('"0x'):
        return _bf16_bits_to_f32(np.frombuffer(bytes.fromhex(body[3:-1]), dtype="<u2"))
    tokens = [tok.strip() for tok in body.replace("[", " ").replace("]", " ").split(",")]
    return np.array([_bf16_bits_to_f32(np.array([int(tok, 16)], dtype=np.uint16))[0]
                     if tok.lower().startswith("0x") else float(tok) for tok in tokens], dtype=np.float32)


def extract(module: ir.Module) -> dict[str, HostSchedule]:
    """Every host function of `module` (one per graph region) as a HostSchedule, by name. Views
    of symbolic size are first rewritten by expand-strided-metadata into reinterpret_casts whose
    offset, sizes and strides are index arithmetic on the buffers' sizes (read as expressions:
    codegen/gpu/host_sizes.py), so no view op needs a rule of ours."""
    hosts = [f for f in module.body.operations if op_name(f) == "func.func" and not is_declaration(f)]
    if any(_has_symbolic_views(f) for f in hosts):
        passmanager.PassManager.parse("builtin.module(func.func(expand-strided-metadata))",
                                      context=module.context).run(module.operation)
    schedules = {}
    for func_op in module.body.operations:
        if op_name(func_op) != "func.func" or is_declaration(func_op):
            continue
        reader = _Reader(module, func_op)
        for op in func_op.regions[0].blocks[0].operations:
            reader.read(op)
        schedules[reader.out.name] = reader.out
    return schedules
