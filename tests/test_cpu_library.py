"""cpu target: float32/float64 matmuls as calls to MKL's sgemm_/dgemm_ (codegen/cpu/library.py).

Numerics against eager for every shape BLAS is handed (plain, transposed, batched, sliced
operands, f64), what is counted as a library call, what stays in our loops (integers, dynamic
shapes, the off switch), and the call itself in the llvm stage's IR."""

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled, compile_and_run, read_stage

MM = {"aten.mm.default": 1}
BMM = {"aten.bmm.default": 1}


def _check(fn, *inputs, library, options=None, rtol=None, atol=None):
    got = compile_and_run(fn, *inputs, options=options)
    torch.testing.assert_close(got, fn(*inputs), rtol=rtol, atol=atol)
    return assert_all_compiled(min_ops=0, library=library)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mm_matches_eager(dtype):
    a, b = torch.randn(37, 300, dtype=dtype), torch.randn(300, 53, dtype=dtype)
    _check(torch.mm, a, b, library=MM)


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_mm_transposed_inputs(which):
    """A transposed operand is read in place ('T'), not copied first."""
    a = torch.randn(40, 24) if which in ("a", "both") else torch.randn(24, 40)
    b = torch.randn(33, 40) if which in ("b", "both") else torch.randn(40, 33)

    def fn(x, y):
        return (x.t() if which in ("a", "both") else x) @ (y.t() if which in ("b", "both") else y)

    _check(fn, a, b, library=MM)


def test_mm_of_a_slice():
    """An operand that is a column slice of a wider tensor (ld larger than its width)."""
    def fn(x, y):
        return torch.mm(x[:, 3:67], y) + 1

    _check(fn, torch.randn(20, 80), torch.randn(64, 16), library=MM)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bmm_matches_eager(dtype):
    a, b = torch.randn(3, 17, 29, dtype=dtype), torch.randn(3, 29, 11, dtype=dtype)
    _check(torch.bmm, a, b, library=BMM)


def test_bmm_transposed_input():
    """attention's q @ k^T: the transpose of the last two dims is read in place."""
    q, k = torch.randn(4, 16, 8), torch.randn(4, 16, 8)
    _check(lambda x, y: torch.bmm(x, y.transpose(1, 2)).softmax(-1), q, k, library=BMM)


def test_addmm_matches_eager():
    bias, a, b = torch.randn(16), torch.randn(8, 32), torch.randn(32, 16)
    _check(lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2.0), bias, a, b, library=MM)  # addmm decomposes to mm, mul, add


def test_linear_matches_eager():
    lin = torch.nn.Linear(64, 48).double()
    s = _check(lin, torch.randn(10, 64, dtype=torch.float64), library=MM)  # addmm decomposes to mm, mul, add
    assert s["ops_library"] == 1


def test_integer_matmul_stays_in_our_loops():
    a, b = torch.randint(-5, 5, (6, 7)), torch.randint(-5, 5, (7, 3))
    _check(torch.mm, a, b, library={})


def test_dynamic_shapes_stay_in_our_loops():
    fn = torch.compile(torch.mm, backend="mlir", dynamic=True)
    for m in (5, 9):
        a, b = torch.randn(m, 12), torch.randn(12, 7)
        torch.testing.assert_close(fn(a, b), torch.mm(a, b))
    assert dynamo_mlir.stats()["ops_library"] == 0
    assert "aten.mm.default" in dynamo_mlir.stats()["compiled_ops"]


def test_library_call_is_listed_by_explain():
    compile_and_run(torch.mm, torch.randn(8, 8), torch.randn(8, 8))
    assert "aten.mm.default x1 (1 as library call)" in dynamo_mlir.explain()


@pytest.mark.parametrize("on", [True, False])
def test_switch_in_the_llvm_stage(tmp_path, on):
    """library_matmul on: one sgemm_ call in the llvm stage; off: our own loops, no call."""
    a, b = torch.randn(16, 200), torch.randn(200, 24)
    _check(torch.mm, a, b, options={"dump_dir": str(tmp_path), "library_matmul": on}, library=MM if on else {})
    llvm = read_stage(str(tmp_path), "llvm")
    assert ("llvm.call @sgemm_(" in llvm) == on
    assert ("llvm.func @sgemm_(" in llvm) == on


def test_batch_matmul_calls_once_per_batch(tmp_path):
    """A batch matmul is a loop around one dgemm_ call."""
    _check(torch.bmm, torch.randn(5, 4, 6, dtype=torch.float64), torch.randn(5, 6, 3, dtype=torch.float64),
           options={"dump_dir": str(tmp_path)}, library=BMM)
    loops = read_stage(str(tmp_path), "loops")
    assert loops.count("call @dgemm_(") == 1 and "scf.for" in loops
