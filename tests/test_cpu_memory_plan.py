"""Static memory planning on the cpu target (codegen/cpu/memory_plan.py): intermediates as views of
one workspace kept between calls; results against eager, what was compiled, and the workspace
the loops stage declares."""

import re
import threading

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.tools.models import cnn, randomize_batchnorm

from helpers import assert_all_compiled, read_stage

WORKSPACE = re.compile(r"dynamo_mlir\.workspace_bytes = (\d+)")
BUFFERS = re.compile(r"memref\.view %arg\d+\[%c\d+\]\[\] \{dynamo_mlir\.planned\} : memref<\d+xi8> to "
                     r"memref<([0-9x]+)x(f32|f64|i64|i32|i8|i1)>")
ELEMENT_BYTES = {"f32": 4, "f64": 8, "i64": 8, "i32": 4, "i8": 1, "i1": 1}


def _compile(fn, options=None, **kwargs):
    return torch.compile(fn, backend="mlir", options=options or {}, **kwargs)


def _buffer_bytes(loops: str) -> list[int]:
    """The bytes of each planned buffer (memref.view of the workspace) in the loops stage's text."""
    sizes = []
    for shape, element in BUFFERS.findall(loops):
        count = 1
        for extent in shape.split("x"):
            count *= int(extent)
        sizes.append(count * ELEMENT_BYTES[element])
    return sizes


def _planned(loops: str) -> tuple[int, int]:
    """(workspace bytes, sum of the planned buffers' bytes) of the loops stage's text."""
    return sum(int(m) for m in WORKSPACE.findall(loops)), sum(_buffer_bytes(loops))


def _cnn():
    torch.manual_seed(0)
    return randomize_batchnorm(cnn(stages=3, image=32)).eval(), torch.randn(4, 3, 32, 32)


def test_cnn_intermediates_share_one_workspace(tmp_path):
    """The CNN's conv outputs, batch-norm/relu and pool buffers become views of one workspace,
    smaller than their sum (buffers not live at once share bytes); steady calls match eager."""
    model, x = _cnn()
    compiled = _compile(model, {"dump_dir": str(tmp_path)})
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn_like(x)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert_all_compiled(min_ops=14, library={"aten.convolution.default": 3, "aten.mm.default": 1})
    loops = read_stage(str(tmp_path), "loops")
    workspace, total = _planned(loops)
    assert "memref.alloc(" not in loops.split("func.func private")[0]
    assert 0 < workspace < total, (workspace, total)
    assert workspace >= max(_buffer_bytes(loops)) >= 4 * 16 * 32 * 32 * 4  # the first conv's output at least


def test_option_off_allocates_per_call(tmp_path):
    model, x = _cnn()
    compiled = _compile(model, {"dump_dir": str(tmp_path), "plan_memory": False})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    loops = read_stage(str(tmp_path), "loops")
    assert _planned(loops) == (0, 0)
    assert "memref.alloc(" in loops and "memref.dealloc" in loops


def test_threads_calling_one_function_at_once_get_their_own_workspace(tmp_path):
    """ctypes releases the GIL during the call: two threads inside one compiled function must not
    share argument slots or intermediates (each call takes a frame of its own)."""
    w = torch.randn(256, 256) / 16

    def fn(x):
        h = torch.tanh(x @ w)
        return torch.softmax(h @ w, dim=-1) * h.exp()

    compiled = _compile(fn, {"dump_dir": str(tmp_path)})
    inputs = [torch.randn(512, 256) for _ in range(4)]
    expected = [fn(x) for x in inputs]
    compiled(inputs[0])
    assert _planned(read_stage(str(tmp_path), "loops"))[0] > 0
    failures = []

    def worker(k):
        for i in range(30):
            j = (k + i) % len(inputs)
            if not torch.allclose(compiled(inputs[j]), expected[j], rtol=1e-4, atol=1e-5):
                failures.append((k, i))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert_all_compiled(min_ops=4, library={"aten.mm.default": 2})


class _ExpWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8), requires_grad=False)  # static under dynamic=True

    def forward(self, x):
        return F.relu(x @ self.w.exp().t() + 1.0)


def test_dynamic_function_passes_its_workspace(tmp_path):
    """With a dynamic batch the function takes memref descriptors; a static intermediate (the
    weight's exp) is still planned, and the workspace is passed as one more descriptor."""
    fn = _ExpWeight()
    compiled = _compile(fn, {"dump_dir": str(tmp_path)}, dynamic=True)
    for batch in (3, 7, 12):
        x = torch.randn(batch, 8)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-5)
    loops = read_stage(str(tmp_path), "loops")
    assert "memref<?x8xf32>" in loops and _planned(loops)[0] > 0, loops[:400]
    assert_all_compiled(min_ops=3, library={"aten.mm.default": 1})  # sgemm_, its sizes read at run time


def test_forward_and_backward_graphs_planned_gradients_match(tmp_path):
    """A training step's forward and backward graphs both take a workspace; the gradients of the
    input and of every parameter match eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),
                                torch.nn.Linear(64, 8))
    x = torch.randn(16, 32, requires_grad=True)
    compiled = _compile(model, {"dump_dir": str(tmp_path)})
    got = compiled(x)
    grads = torch.autograd.grad(got.square().sum(), [x, *model.parameters()])
    want = model(x)
    expected = torch.autograd.grad(want.square().sum(), [x, *model.parameters()])
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    for g, e in zip(grads, expected):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {} and s["ops_compiled"] >= 10, dynamo_mlir.explain()
    for kind in ("forward", "backward"):
        paths = sorted(tmp_path.glob(f"*_{kind}_*.loops.*"))
        assert paths, sorted(p.name for p in tmp_path.iterdir())
        assert _planned("\n".join(p.read_text() for p in paths))[0] > 0, kind


_HANDLE_KEEPS_BUFFER = """
func.func private @aoti_torch_create_tensor_from_blob(!llvm.ptr, !llvm.ptr) -> i32
func.func private @aoti_torch_delete_tensor_object(!llvm.ptr) -> i32
func.func @main(%out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %slot = memref.alloca() : memref<1xi64>
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<64xf32>)
  %ai = memref.extract_aligned_pointer_as_index %a : memref<64xf32> -> index
  %a64 = arith.index_cast %ai : index to i64
  %ap = llvm.inttoptr %a64 : i64 to !llvm.ptr
  %si = memref.extract_aligned_pointer_as_index %slot : memref<1xi64> -> index
  %s64 = arith.index_cast %si : index to i64
  %sp = llvm.inttoptr %s64 : i64 to !llvm.ptr
  %made = func.call @aoti_torch_create_tensor_from_blob(%ap, %sp) {dynamo_mlir.retains = 1 : i64} : (!llvm.ptr, !llvm.ptr) -> i32
  %b = memref.alloc() : memref<64xf32>
  linalg.fill ins(%one : f32) outs(%b : memref<64xf32>)
  memref.copy %b, %out : memref<64xf32> to memref<64xf32>
  %h = memref.load %slot[%c0] : memref<1xi64>
  %hp = llvm.inttoptr %h : i64 to !llvm.ptr
  %gone = func.call @aoti_torch_delete_tensor_object(%hp) : (!llvm.ptr) -> i32
  return
}
"""


def test_a_buffer_behind_a_torch_handle_lives_until_the_handle_is_deleted():
    """%a's last direct use is the from_blob call, but torch reads it through the handle until
    the delete: %b, used in between, must not take %a's bytes (it would without the rule). The
    call says it keeps the buffer (dynamo_mlir.retains: its slot operand), as library_conv marks
    its from_blob calls; memory planning knows no callee by name."""
    from torch_mlir import ir
    from dynamo_mlir.codegen.cpu import memory_plan

    with ir.Context() as ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(_HANDLE_KEEPS_BUFFER)
        assert memory_plan.plan_memory(module) == 512
        offsets = re.findall(r"memref\.view %arg1\[%c(\d+)(?:_\d+)?\]", str(module))
        assert sorted(offsets) == ["0", "256"], str(module)


def test_a_planned_buffer_is_marked_not_guessed_from_its_shape():
    """planned_span answers for the views plan_memory made (attribute dynamo_mlir.planned), not
    for any view of an argument at a constant offset (the convention it replaced)."""
    from torch_mlir import ir

    from dynamo_mlir.codegen.cpu import memory_plan
    from dynamo_mlir.dialects import new_context

    text = """
    func.func @main(%ws: memref<192xi8>) {
      %c64 = arith.constant 64 : index
      %a = memref.view %ws[%c64][] {dynamo_mlir.planned} : memref<192xi8> to memref<4x4xf32>
      %b = memref.view %ws[%c64][] : memref<192xi8> to memref<4x4xf32>
      return
    }"""
    with new_context():
        module = ir.Module.parse(text)
        ops = list(module.body.operations[0].regions[0].blocks[0].operations)
        ws = ops[1].operands[0]
        assert memory_plan.planned_span(ops[1].result) == (ws, 64, 128)
        assert memory_plan.planned_span(ops[2].result) is None


def test_buffers_of_one_row_count_share_bytes_only_whole_unless_a_call_lies_between():
    """parallel.py runs consecutive row-wise nests row block by row block on several threads, and
    keeps nests apart whose buffers share bytes row for row differently (a thread's later nest
    would write bytes another's earlier nest still reads). So the planner gives buffers of one
    row count, none live at once, one offset only when they have one size too (row i of one is
    then row i of the other); with a library call between them (no group spans one) any bytes."""
    from dynamo_mlir.codegen.cpu.memory_plan import Buffer, _assign_offsets

    def plan(breaks):
        sums = Buffer(None, 16 << 10, 0, 2, rows=4096)         # a layer norm's row sums, [4096]
        partials = Buffer(None, 256 << 10, 3, 5, rows=4096)    # the squares' partial sums, [4096, 1, 16]
        again = Buffer(None, 16 << 10, 6, 7, rows=4096)        # the next row sums
        other = Buffer(None, 16 << 10, 3, 5, rows=64)           # of another row count, live with partials
        total = _assign_offsets([sums, partials, again, other], breaks)
        return total, sums, partials, again, other

    total, sums, partials, again, other = plan(breaks=[])
    assert partials.offset >= sums.offset + sums.size or partials.offset + partials.size <= sums.offset
    assert again.offset == sums.offset  # the same rows, the same size: the same bytes
    assert other.offset == sums.offset  # another row count: any bytes
    assert total == (256 + 16) << 10
    _, sums, partials, again, _ = plan(breaks=[2])  # a call right after the row sums' last use
    assert partials.offset == sums.offset == 0  # the call ends their group: any bytes
    assert again.offset >= partials.offset + partials.size  # no call between the partials and these
