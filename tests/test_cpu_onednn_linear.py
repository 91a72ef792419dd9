"""Large float32 matmuls through torch's oneDNN linear on the cpu target (option gemm_library;
codegen/cpu/library_linear.py; tests/ir/onednn_linear.mlir pins the IR). Each test forces
gemm_library=onednn (or mkl), so what it checks does not depend on this machine's CPU vendor."""

import glob

import pytest
import torch
import torch.nn as nn

import dynamo_mlir
from dynamo_mlir.codegen import config
from dynamo_mlir.codegen.cpu import library_linear
from dynamo_mlir.codegen.options import OptionError

LINEAR = "aoti_torch_cpu__linear_pointwise"


def _final_ir(folder) -> str:
    return "\n".join(open(p).read() for p in sorted(glob.glob(f"{folder}/*.llvm.mlir")))


def _compile(fn, folder, gemm_library="onednn", **kwargs):
    torch._dynamo.reset()
    return torch.compile(fn, backend="mlir", options={"gemm_library": gemm_library, "dump_dir": str(folder),
                                                      "cache": False}, **kwargs)


@pytest.mark.parametrize("gemm_library, calls", [("onednn", 1), ("mkl", 0)])
def test_linear_layer_runs_onednn_with_its_bias(tmp_path, gemm_library, calls):
    """An nn.Linear (128 x 768 -> 3072, over MIN_MACS) and a GELU: with onednn one oneDNN call
    takes the matmul and its bias, no sgemm_ is left; with mkl it is sgemm_."""
    torch.manual_seed(0)
    lin, x = nn.Linear(768, 3072), torch.randn(128, 768)
    before = x.clone()
    f = _compile(lambda t: torch.nn.functional.gelu(lin(t)), tmp_path, gemm_library)
    with torch.no_grad():
        torch.testing.assert_close(f(x), torch.nn.functional.gelu(lin(x)), rtol=1e-4, atol=1e-4)
    assert torch.equal(x, before)
    ir = _final_ir(tmp_path)
    assert ir.count(f"call @{LINEAR}(") == calls
    assert ("sgemm_" in ir) == (calls == 0)
    assert dynamo_mlir.stats()["library_ops"] == {"aten.mm.default": 1}


def test_small_and_transposed_left_matmuls_stay_with_mkl(tmp_path):
    """Under MIN_MACS (64 x 64 x 64), and a weight gradient's dY^T X (its left operand
    column-major: oneDNN would reorder it first), run as sgemm_."""
    torch.manual_seed(0)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    f = _compile(lambda x, y: x @ y, tmp_path)
    torch.testing.assert_close(f(a, b), a @ b)
    dy, x = torch.randn(512, 256), torch.randn(512, 256)
    g = _compile(lambda d, t: d.t() @ t, tmp_path / "t")
    torch.testing.assert_close(g(dy, x), dy.t() @ x, rtol=1e-4, atol=1e-4)
    assert LINEAR not in _final_ir(tmp_path) + _final_ir(tmp_path / "t")


def test_sizes_known_at_run_time_pick_the_library_per_call(tmp_path):
    """One graph of symbolic rows: 7 rows (under MIN_MACS) and 300 rows both match eager; the
    code holds both the oneDNN call and sgemm_, chosen by the sizes at each call."""
    torch.manual_seed(0)
    lin = nn.Linear(768, 3072)
    f = _compile(lambda t: lin(t).relu(), tmp_path, dynamic=True)
    with torch.no_grad():
        for rows in (7, 300):
            x = torch.randn(rows, 768)
            torch.testing.assert_close(f(x), lin(x).relu(), rtol=1e-4, atol=1e-4)
    assert dynamo_mlir.stats()["graphs"] == 1
    ir = _final_ir(tmp_path)
    assert LINEAR in ir and "sgemm_" in ir


def test_training_gradients_match_eager(tmp_path):
    """A two-layer MLP's step: the forward matmuls and the input gradient dY W (row-major left)
    run oneDNN; the gradients match eager's."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 256))
    ref = [p.detach().clone().requires_grad_() for p in model.parameters()]
    x = torch.randn(128, 512)
    f = _compile(model, tmp_path)
    f(x).square().mean().backward()
    w1, b1, w2, b2 = ref
    (torch.nn.functional.gelu(x @ w1.t() + b1) @ w2.t() + b2).square().mean().backward()
    for p, r in zip(model.parameters(), ref):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)
    assert _final_ir(tmp_path).count(f"call @{LINEAR}(") >= 3


@pytest.mark.parametrize("vendor, expected", [("GenuineIntel", False), ("AuthenticAMD", True), ("", False)])
def test_auto_picks_onednn_off_intel(vendor, expected):
    assert library_linear.uses_onednn("auto", vendor) is expected
    assert library_linear.uses_onednn("onednn", vendor) and not library_linear.uses_onednn("mkl", vendor)


def test_an_unknown_library_is_refused():
    with pytest.raises(OptionError, match="gemm_library is one of"):
        config.resolve({"target": "cpu", "gemm_library": "openblas"})


def test_onednn_asked_of_a_torch_without_it_runs_eagerly_and_says_why(tmp_path, monkeypatch):
    """gemm_library=onednn where torch has no oneDNN: the region is not compiled (the stage
    says why and what to set instead), its ops run eagerly, the answer is eager's."""
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    torch.manual_seed(0)
    lin, x = nn.Linear(768, 3072), torch.randn(128, 768)
    f = _compile(lambda t: lin(t).relu(), tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(f(x), lin(x).relu())
    assert dynamo_mlir.stats()["ops_fallback"] > 0
    assert "built without oneDNN" in dynamo_mlir.explain() and "use auto or mkl" in dynamo_mlir.explain()
