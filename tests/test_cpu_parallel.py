"""cpu target: large loop nests run on torch's intra-op pool through torch_parallel_for
(codegen/cpu/parallel.py, option `parallel`).

Numerics against eager at 2 threads and at 1 (torch.set_num_threads, restored after), what was
compiled, which nests the LLVM module hands to torch_parallel_for (a large op's, not a tiny
one's; none with the option off), the work threshold on hand-written loops, dynamic shapes, and
a serial scatter loop kept serial."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_mlir import ir, passmanager

import dynamo_mlir
from dynamo_mlir.codegen.cpu import parallel
from dynamo_mlir.tools.models import mlp, transformer_block
from helpers import assert_close_to_float32, compile_and_run, read_stage

CALL = "llvm.call @torch_parallel_for"


@pytest.fixture(params=[2, 1], ids=["2threads", "1thread"])
def threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _check(fn, *inputs, options=None, rtol=1e-4, atol=1e-5, **compile_kwargs):
    got = compile_and_run(fn, *inputs, options=options, **compile_kwargs)
    torch.testing.assert_close(got, fn(*inputs), rtol=rtol, atol=atol)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["ops_compiled"] > 0, dynamo_mlir.explain()
    assert s["partitions_failed"] == 0 and s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
    return s


def _llvm_text(fn, *inputs, tmp_path, options=None, **compile_kwargs) -> str:
    dump = tmp_path / "dump"
    _check(fn, *inputs, options={"dump_dir": str(dump), **(options or {})}, **compile_kwargs)
    return read_stage(str(dump), "llvm")


# ----------------------------------------------------------------------------- numerics


def test_large_elementwise(threads):
    x = torch.randn(4 * 1024 * 1024)
    _check(lambda t: torch.tanh(torch.exp(t * 0.5) + 1.0) * t, x)


@pytest.mark.parametrize("dim", [0, 1], ids=["over_rows", "over_columns"])
def test_sums(threads, dim):
    x = torch.randn(2048, 1536)
    _check(lambda t: t.sum(dim), x, rtol=1e-4, atol=1e-3)


def test_softmax(threads):
    _check(lambda t: torch.softmax(t, dim=-1), torch.randn(4096, 1024))


def test_layernorm(threads):
    x, w, b = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
    _check(lambda t, g, h: F.layer_norm(t, (1024,), g, h), x, w, b, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_types(threads, dtype):
    """Half-type buffers and scalars through ctx; compared with float32 rounded once."""
    def fn(t):
        return torch.softmax(t * 1.5, dim=-1) + t

    x = torch.randn(2048, 512).to(dtype)
    got = compile_and_run(fn, x)
    assert_close_to_float32(got, fn(x.float()))
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["ops_compiled"] > 0, dynamo_mlir.explain()


def test_mlp_in_our_own_loops(threads):
    """library_matmul off: the linear layers are our matmul loops too, split over the batch."""
    torch.manual_seed(0)
    model = mlp().eval()
    with torch.no_grad():
        s = _check(model, torch.randn(4096, 10), options={"library_matmul": False})
    assert s["ops_library"] == 0


def test_mlp_gradients_in_our_own_loops(threads):
    """Training, library_matmul off: the weight gradients' matmuls are K-blocked (a serial loop
    over K chunks, each chunk's nests on slices whose offset the loop moves: memrefs with a
    dynamic offset through ctx), the bias gradients sums over the batch."""
    torch.manual_seed(0)
    x, y = torch.randn(4096, 10), torch.randn(4096, 1)
    model, reference = mlp(), mlp()
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="mlir", options={"library_matmul": False})
    F.mse_loss(compiled(x), y).backward()
    F.mse_loss(reference(x), y).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["graphs_by_kind"] == {"forward": 1, "backward": 1}
    assert s["ops_fallback"] == 0 and s["partitions_failed"] == 0 and s["ops_library"] == 0, dynamo_mlir.explain()


def test_transformer_block(threads):
    torch.manual_seed(0)
    model = transformer_block().eval()
    with torch.no_grad():
        _check(model, torch.randn(64, 16, 64), atol=1e-4)


def test_dynamic_shapes(threads):
    """Symbolic sizes: the grain is computed at run time, and torch keeps a small range inline."""
    compiled = torch.compile(lambda t: torch.exp(t) * 2 + t, backend="mlir", dynamic=True)
    for n in (3, 300_000, 2_000_001):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), torch.exp(x) * 2 + x)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["ops_compiled"] > 0 and s["runtime_fallback_calls"] == 0


def test_scatter_loop_stays_serial(threads, tmp_path):
    """index_put with accumulate is an scf.for nest of the serial_loops rules: many updates to few
    targets in int64 give eager's exact sums only if no two updates race. The large elementwise
    op feeding it (v * 3) runs in parallel beside it."""
    torch.manual_seed(0)
    target, index = torch.zeros(64, dtype=torch.int64), torch.randint(0, 64, (1_000_000,))
    values = torch.randint(-1000, 1000, (1_000_000,))

    def fn(t, i, v):
        return t.index_put((i,), v * 3, accumulate=True)

    dump = tmp_path / "dump"
    got = compile_and_run(fn, target, index, values, options={"dump_dir": str(dump)})
    assert torch.equal(got, fn(target, index, values))
    assert dynamo_mlir.stats()["ops_fallback"] == 0
    assert CALL in read_stage(str(dump), "llvm")


# ----------------------------------------------------------------------------- the IR


def test_llvm_calls_parallel_for_for_a_large_op_only(tmp_path):
    large = _llvm_text(lambda t: t * 2 + 1, torch.randn(1024, 1024), tmp_path=tmp_path / "large")
    assert CALL in large and "@main_parallel_0" in large
    torch._dynamo.reset()
    tiny = _llvm_text(lambda t: t * 2 + 1, torch.randn(8, 8), tmp_path=tmp_path / "tiny")
    assert "torch_parallel_for" not in tiny


def test_option_off_keeps_every_loop_serial(tmp_path):
    text = _llvm_text(lambda t: torch.softmax(t, -1), torch.randn(1024, 1024), tmp_path=tmp_path,
                      options={"parallel": False})
    assert "torch_parallel_for" not in text and "_parallel_" not in text


def test_dynamic_shapes_call_parallel_for(tmp_path):
    text = _llvm_text(lambda t: torch.exp(t) + t, torch.randn(100_000), tmp_path=tmp_path, dynamic=True)
    assert CALL in text


def _function(module_text: str, name: str) -> str:
    """The text of function @name in a printed module."""
    return module_text.split(f"@{name}(")[1].split("func.func")[0]


_NEST = """
func.func @f(%a: memref<{rows}x512xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.constant {rows} : index
  %c512 = arith.constant 512 : index
  %x = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c512) step (%c1, %c1) {{
    memref.store %x, %a[%i, %j] : memref<{rows}x512xf32>
    scf.reduce
  }}
  return
}}
"""


@pytest.mark.parametrize("rows, outlined", [(16, 0), (17, 1)])
def test_work_threshold(rows, outlined):
    """16 x 512 elements is one chunk of MIN_CHUNK_WORK (8192): serial; a row more is two."""
    assert parallel.MIN_CHUNK_WORK == 16 * 512
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_NEST.format(rows=rows))
        assert parallel.outline_parallel_loops(module) == outlined
        module.operation.verify()
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module.operation)
        text = str(module)
    assert ("call @torch_parallel_for" in text) == bool(outlined)
    if outlined:  # rows 0..17 in chunks of 16 rows at the least; the loop moved into @f_parallel_0_body,
        # which @f_parallel_0 calls with the memref read back from ctx, a buffer nothing else passed shares
        assert "call @torch_parallel_for(%c0_i64, %c17_i64, %c16_i64, %f, " in text
        assert "scf.parallel" in _function(text, "f_parallel_0_body")
        assert "memref<17x512xf32> {llvm.noalias}" in _function(text, "f_parallel_0_body")
        assert "call @f_parallel_0_body(" in _function(text, "f_parallel_0")


_TWO_NESTS = """
func.func @f(%a: memref<256x512xf32>, %b: memref<256x512xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %x = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<256x512xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c512) step (%c1, %c1) {{
    memref.store %x, %t[%i, %j] : memref<256x512xf32>
    scf.reduce
  }}
  {between}
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c512) step (%c1, %c1) {{
    %v = memref.load %t[{read}] : memref<256x512xf32>
    memref.store %v, %b[%i, %j] : memref<256x512xf32>
    scf.reduce
  }}
  memref.dealloc %t : memref<256x512xf32>
  return
}}
"""


@pytest.mark.parametrize("read, between, groups", [
    ("%i, %j", "", 1),                                             # row i of what the first wrote
    ("%i, %c0", "%u = memref.alloc() : memref<4xf32>", 1),         # any column of row i; an alloc between
    ("%j, %i", "", 2),                                             # row j: written by another chunk
    ("%i, %j", "memref.copy %a, %b : memref<256x512xf32> to memref<256x512xf32>", 2),  # a copy between
])
def test_nests_grouped_only_when_rows_stay_apart(read, between, groups):
    """Consecutive nests run in one parallel region (row block by row block) only when each
    touches a buffer the other writes in its own row only, with nothing but transparent ops between."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_TWO_NESTS.format(read=read, between=between))
        assert parallel.outline_parallel_loops(module) == groups
        module.operation.verify()
        text = str(module)
    assert text.count("call @torch_parallel_for") == groups
    if groups == 1:  # the row blocks: an scf.for over [begin, end) around both nests
        assert "scf.for" in _function(text, "f_parallel_0_body")


def test_rows_read_across_after_a_softmax(threads):
    """r + r^T reads row j of the softmax's result for row i: that step must not join the softmax's
    row-wise region (it would read rows not yet written), at 1 thread too (row blocks)."""
    _check(lambda t: (lambda r: r + r.t())(torch.softmax(t, -1)), torch.randn(1024, 1024))


@pytest.mark.parametrize("name", ["softmax", "layer_norm"])
def test_row_wise_steps_make_one_parallel_region(tmp_path, name):
    """Each step (max, exp, sums, the accumulator copies bufferization makes, the division) is
    its own loop nest; all of them go row by row, so one torch_parallel_for runs them all."""
    fn = {"softmax": lambda t: torch.softmax(t, -1), "layer_norm": lambda t: F.layer_norm(t, (1024,))}[name]
    text = _llvm_text(fn, torch.randn(4096, 1024), tmp_path=tmp_path, atol=1e-4)
    assert text.count(CALL) == 1


_VIEW_AND_BUFFER = """
func.func @f(%a: memref<256x512xf32>, %b: memref<256x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  %flat = memref.collapse_shape %b [[0, 1]] : memref<256x512xf32> into memref<131072xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c512) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<256x512xf32>
    memref.store %v, %b[%i, %j] : memref<256x512xf32>
    memref.store %v, %flat[%j] : memref<131072xf32>
    scf.reduce
  }
  return
}
"""


def test_noalias_only_for_a_buffer_passed_once():
    """%b and a view of it both reach the body: neither may be noalias (they do alias); %a may."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(_VIEW_AND_BUFFER)
        assert parallel.outline_parallel_loops(module) == 1
        body = _function(str(module), "f_parallel_0_body")
    signature = body.split(") attributes")[0]
    assert signature.count("{llvm.noalias}") == 1  # %a's
    assert "memref<131072xf32> {llvm.noalias}" not in signature and "memref<256x512xf32>," in signature
