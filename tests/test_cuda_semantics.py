"""What eager does differently on CUDA, checked without a GPU.

A graph is traced with fake CUDA tensors through our decompositions (as AOTAutograd traces a
CUDA model), compiled for the cpu target and run on CPU tensors; the result must equal what
eager returns on CUDA: other outputs (batch norm's saved statistics in inference), or half
types computed in float32 and rounded once where CPU kernels round in between.
"""

import pytest
import torch
from torch._subclasses import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import dynamo_mlir
from dynamo_mlir.codegen.config import resolve
from dynamo_mlir.frontend.backend import decompositions
from dynamo_mlir.frontend.compile import compile_graph

aten = torch.ops.aten


def compiled_as_on_cuda(fn, *inputs):
    """fn traced on fake CUDA copies of `inputs`, compiled for cpu, run on `inputs`."""
    with FakeTensorMode():
        fake = [torch.empty(t.shape, dtype=t.dtype, device="cuda") for t in inputs]
        gm = make_fx(fn, decomposition_table=decompositions())(*fake)
    compiled = compile_graph(gm, fake, "inference", resolve({"target": "cpu", "strict": True}))
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["ops_compiled"] >= 1, dynamo_mlir.explain()
    return compiled(*inputs)


def test_batch_norm_inference_returns_cudas_saved_statistics():
    """On CUDA, inference batch norm returns the running mean and 1/sqrt(var + eps) as outputs 1
    and 2 (CPU returns empty tensors); they were zeros."""
    torch.manual_seed(0)
    x, mean, var = torch.randn(2, 3, 4), torch.randn(3), torch.rand(3)
    out, save_mean, save_invstd = compiled_as_on_cuda(
        lambda x, m, v: aten._native_batch_norm_legit_no_training(x, None, None, m, v, 0.1, 1e-5), x, mean, var)
    torch.testing.assert_close(save_mean, mean)
    torch.testing.assert_close(save_invstd, torch.rsqrt(var + 1e-5))
    torch.testing.assert_close(out, (x - mean[:, None]) * torch.rsqrt(var + 1e-5)[:, None])


def _rounded_once(fn, *inputs):
    return fn(*[t.float() for t in inputs]).to(inputs[0].dtype)


# (grid sampling, computed in float32 on CUDA too, cannot be traced with fake CUDA tensors on a
# CPU-only build: its decomposition indexes with tensors made outside the fake mode.)
HALF_CASES = {
    "logit": (lambda x: torch.logit(x, 1e-3), lambda dt: [torch.rand(4, 64, dtype=dt)]),
    "lerp": (lambda a, b, w: torch.lerp(a, b, w), lambda dt: [torch.randn(64, dtype=dt) * 8 for _ in range(3)]),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("case", HALF_CASES)
def test_half_types_compute_in_float32_and_round_once_on_cuda(case, dtype):
    """CUDA's kernels compute half inputs in float32 (opmath) and round once; the decompositions
    that follow CPU kernels' intermediate roundings must not apply to a CUDA graph."""
    fn, make = HALF_CASES[case]
    torch.manual_seed(0)
    inputs = make(dtype)
    got = compiled_as_on_cuda(fn, *inputs)
    expected = _rounded_once(fn, *inputs)
    # One ulp at most: the float32 computation itself may differ in its last bit.
    ulp = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}[dtype]
    torch.testing.assert_close(got.float(), expected.float(), rtol=ulp, atol=ulp)
