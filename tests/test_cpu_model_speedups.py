"""What makes the transformer models' forward fast on the cpu target, each checked against eager
and by what was compiled: small integer powers as multiplies (GPT-2's gelu_new); a linear's bias
(or a residual) as the BLAS matmul's accumulator, and one zero fill per matmul
(codegen/cpu/library_epilogue.py; tests/ir/matmul_epilogue.mlir pins the IR)."""

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dynamo_mlir
from helpers import assert_all_compiled, assert_close_to_float32, read_stage


@pytest.mark.parametrize("exponent", [2, 3, 3.0])
def test_small_integer_powers_are_multiplies_not_powf(tmp_path, exponent):
    """x**3 is (x*x)*x, as eager's cpu pow computes it: a vectorizable loop, no libm powf call."""
    x = torch.randn(4, 64) * 3
    fn = lambda t: 0.5 * t * (1 + torch.tanh(0.79788456 * (t + 0.044715 * torch.pow(t, exponent))))
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    torch.testing.assert_close(got, fn(x), rtol=1e-6, atol=1e-6)
    assert_all_compiled(min_ops=5)
    linalg = read_stage(str(tmp_path), "linalg")
    assert "math.powf" not in linalg
    assert linalg.count("arith.mulf") >= 4 + int(exponent) - 1


def test_cube_of_a_half_tensor_is_rounded_once():
    x = (torch.randn(256) * 4).to(torch.bfloat16)
    got = torch.compile(lambda t: torch.pow(t, 3), backend="mlir")(x)
    assert_close_to_float32(got, x.float() * x.float() * x.float(), magnitude_rtol=1e-5)
    assert_all_compiled()


def test_non_integer_power_stays_powf(tmp_path):
    x = torch.rand(64) + 0.1
    got = torch.compile(lambda t: torch.pow(t, 2.5), backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    torch.testing.assert_close(got, torch.pow(x, 2.5))
    assert "math.powf" in read_stage(str(tmp_path), "linalg")


class _Block(nn.Module):
    """Linears with and without bias, two of one shape (one shared zero fill after CSE), a 3-d
    input (a transformer's [batch, tokens, width]) and a residual that is used again after."""

    def __init__(self):
        super().__init__()
        self.up, self.gate = nn.Linear(16, 32), nn.Linear(16, 32, bias=False)
        self.value = nn.Linear(16, 32, bias=False)
        self.down = nn.Linear(32, 16)

    def forward(self, x):
        h = F.gelu(self.up(x), approximate="tanh") * self.gate(x) + self.value(x)
        y = self.down(h) + x
        return y * x


def test_linear_bias_and_residual_fold_into_the_gemm_accumulator(tmp_path):
    torch.manual_seed(0)
    model, x = _Block().eval(), torch.randn(2, 5, 16)
    with torch.no_grad():
        got = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})(x)
        torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-5)
    assert_all_compiled(library={"aten.mm.default": 4})
    linalg = read_stage(str(tmp_path), "linalg")
    assert linalg.count("linalg.matmul") == 4
    # up's and down's biases (added to the 2-d matmul: addmm's decomposition) are accumulators;
    # gate and value (no bias; value(x) is added only after the reshape back to 3-d) share one
    # zero fill, which the loops stage unshares
    fills = re.findall(r"(%[0-9]+) = linalg.fill", linalg)
    assert len(fills) == 1, linalg
    assert sum(f"outs({fills[0]} :" in line for line in linalg.splitlines() if "linalg.matmul" in line) == 2


@pytest.mark.parametrize("bias", [True, False])
def test_linear_training_step_matches_eager_with_the_bias_folded(bias):
    torch.manual_seed(0)
    eager, compiled = nn.Linear(8, 6, bias=bias), nn.Linear(8, 6, bias=bias)
    compiled.load_state_dict(eager.state_dict())
    x = torch.randn(4, 8)
    step = lambda m, t: (m(t).tanh().sum(), )[0]
    step(eager, x).backward()
    torch.compile(step, backend="mlir")(compiled, x).backward()
    for a, b in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)
    assert dynamo_mlir.stats()["library_ops"] == {"aten.mm.default": 2}  # forward; weight gradient (x needs none)


def test_batch_matmul_plus_a_mask_takes_the_mask_as_accumulator(tmp_path):
    """Attention scores plus an additive mask (SDPA's decomposition): the broadcast mask is C."""
    q, k = torch.randn(3, 8, 4), torch.randn(3, 4, 8)
    mask = torch.zeros(8, 8).masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), float("-inf"))
    fn = lambda a, b, m: torch.bmm(a, b) + m
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(q, k, mask)
    torch.testing.assert_close(got, fn(q, k, mask), rtol=1e-5, atol=1e-5)
    assert_all_compiled(library={"aten.bmm.default": 1})
    linalg = read_stage(str(tmp_path), "linalg")
    assert "linalg.fill" not in linalg and "arith.addf" not in linalg, linalg


def _gelu_new(x):
    """GPT-2's activation, its scalars as Python floats (each a broadcast constant in the IR)."""
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0))))


def test_scalars_shared_by_two_layers_are_fused_into_each_loop(tmp_path):
    """Two layers' gelu_new: CSE makes their scalar broadcasts one value each; cloned per use
    (codegen/cpu/shared_broadcasts.py) they fuse into the loops, so no constant is ever stored
    into an activation-sized tensor (tests/ir/shared_broadcast.mlir pins the IR)."""
    x, w = torch.randn(2, 64, 96), torch.randn(96, 96)
    fn = lambda t, m: _gelu_new(_gelu_new(t) @ m)
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path), "library_matmul": False})(x, w)
    torch.testing.assert_close(got, fn(x, w), rtol=1e-5, atol=1e-5)
    assert_all_compiled(min_ops=10)
    loops = read_stage(str(tmp_path), "loops")
    # (the matmul's own zero fill, 128x96, is the one constant store left)
    assert not re.search(r"memref.store %cst[_0-9]*, %\w+\[[^]]*\] : memref<2x64x96xf32>", loops), loops
