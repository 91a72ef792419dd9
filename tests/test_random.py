"""Random ops compiled with the counter-based generator (frontend/seeding.py, aten/random.py).

The numbers differ from eager's, so the checks are statistical: 10^5 samples, sample means
within 5 standard errors, variances within 5%, supports and dtypes exact. Plus: calls differ,
torch.manual_seed makes them reproducible, the bits are SplitMix64's, and unsupported cases
still run eagerly.
"""

import math

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.frontend.seeding import seeded
from helpers import assert_all_compiled

aten = torch.ops.aten
SHAPE = (250, 400)  # 10^5 samples
N = SHAPE[0] * SHAPE[1]


def _ones(dtype=torch.float32):
    return torch.ones(SHAPE, dtype=dtype)


# name -> (fn of a ones tensor, mean, variance, low, high (inclusive), integer-valued)
CASES = {
    "rand_like": (lambda x: torch.rand_like(x), 0.5, 1 / 12, 0, 1, False),
    "randn_like": (lambda x: torch.randn_like(x), 0.0, 1.0, -8, 8, False),
    "randn": (lambda x: torch.randn(SHAPE) + x, 1.0, 1.0, -7, 9, False),
    "randint_like": (lambda x: torch.randint_like(x, 3, 10), 6.0, 4.0, 3, 9, True),
    "randint": (lambda x: torch.randint(3, 10, SHAPE), 6.0, 4.0, 3, 9, True),
    "uniform": (lambda x: x.uniform_(-2, 3), 0.5, 25 / 12, -2, 3, False),
    "normal.Tensor_float": (lambda x: torch.normal(x, 2.0), 1.0, 4.0, -15, 17, False),
    "normal.float_Tensor": (lambda x: torch.normal(1.0, 2 * x), 1.0, 4.0, -15, 17, False),
    "normal.float_float": (lambda x: torch.normal(1.0, 2.0, SHAPE) * x, 1.0, 4.0, -15, 17, False),
    "normal_": (lambda x: x.normal_(1.0, 2.0), 1.0, 4.0, -15, 17, False),
    "bernoulli": (lambda x: torch.bernoulli(0.3 * x), 0.3, 0.21, 0, 1, True),
    "bernoulli.p": (lambda x: x.bernoulli(0.3), 0.3, 0.21, 0, 1, True),
    "exponential": (lambda x: x.exponential_(2.0), 0.5, 0.25, 0, 20, False),
    "geometric": (lambda x: x.geometric_(0.3), 1 / 0.3, 0.7 / 0.09, 1, 100, True),
    "log_normal": (lambda x: torch.log(x.log_normal_(1.0, 0.5)), 1.0, 0.25, -3, 5, False),
    "dropout": (lambda x: F.dropout(x, 0.3, training=True), 1.0, 1 / 0.7 - 1, 0, 1.43, False),
    "dropout2d": (lambda x: F.dropout2d(x.view(*SHAPE, 1, 1), 0.3, training=True).view(SHAPE), 1.0, 1 / 0.7 - 1,
                  0, 1.43, False),
    "rrelu": (lambda x: F.rrelu(-x, 1 / 8, 1 / 3, training=True), -(1 / 8 + 1 / 3) / 2, (1 / 3 - 1 / 8) ** 2 / 12,
              -1 / 3, -1 / 8, False),
}


def _check_moments(out: torch.Tensor, mean, var, low, high, integer):
    v = out.double()
    assert abs(v.mean().item() - mean) < 5 * math.sqrt(var / v.numel()), (v.mean(), mean)
    assert abs(v.var().item() - var) < 0.05 * var, (v.var(), var)
    assert low <= v.min().item() and v.max().item() <= high, (v.min(), v.max())
    if integer:
        assert torch.equal(v, v.round())


@pytest.mark.parametrize("name", list(CASES))
def test_distribution(name):
    fn, mean, var, low, high, integer = CASES[name]
    x = _ones()
    expected = fn(x.clone())
    out = torch.compile(fn, backend="mlir")(x.clone())
    assert_all_compiled()
    assert out.dtype == expected.dtype and out.shape == expected.shape
    _check_moments(out, mean, var, low, high, integer)


def test_cauchy_quartiles():
    """No moments: half the mass below the median, half within median +- sigma."""
    out = torch.compile(lambda x: x.cauchy_(1.0, 2.0), backend="mlir")(_ones()).double()
    assert_all_compiled()
    se = 5 * math.sqrt(0.25 / N)
    assert abs((out < 1.0).double().mean().item() - 0.5) < se
    assert abs(((out - 1.0).abs() < 2.0).double().mean().item() - 0.5) < se


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_other_float_types(dtype):
    """rand stays below 1 in every type (bits of the type's precision); randn is standard."""
    fn = torch.compile(lambda x: (torch.rand_like(x), torch.randn_like(x)), backend="mlir")
    u, z = fn(_ones(dtype))
    assert_all_compiled()
    assert u.dtype == z.dtype == dtype
    _check_moments(u, 0.5, 1 / 12, 0, 1, False)
    assert u.max().item() < 1
    _check_moments(z, 0.0, 1.0, -8, 8, False)


def test_calls_differ_and_streams_are_independent():
    fn = torch.compile(lambda x: (torch.rand_like(x), torch.rand_like(x)), backend="mlir")
    a1, b1 = fn(_ones())
    a2, _ = fn(_ones())
    assert_all_compiled()
    assert not torch.equal(a1, a2)
    assert not torch.equal(a1, b1)
    correlation = torch.corrcoef(torch.stack([a1.flatten(), b1.flatten()]))[0, 1].item()
    assert abs(correlation) < 5 / math.sqrt(N)


def test_manual_seed_reproduces():
    fn = torch.compile(lambda x: torch.randn_like(x) * x + torch.rand_like(x), backend="mlir")
    x = _ones()
    torch.manual_seed(123)
    a = fn(x)
    torch.manual_seed(123)
    b = fn(x)
    torch.manual_seed(124)
    c = fn(x)
    assert_all_compiled()
    assert torch.equal(a, b) and not torch.equal(a, c)


GAMMA, M64 = 0x9E3779B97F4A7C15, (1 << 64) - 1


def _splitmix(z: int) -> int:
    """SplitMix64's finalizer, from its definition."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def test_bits_are_splitmix64():
    """Element i of a node's first stream: the (i+1)-th SplitMix64 output from the finalized
    (seed + GAMMA), top 53 of its high 63 bits as an f64 in [0, 1)."""
    fn = torch.compile(lambda x: torch.rand_like(x), backend="mlir")
    torch.manual_seed(7)
    seed = torch.randint(0, 2**62, ()).item()
    torch.manual_seed(7)
    out = fn(torch.ones(3, 5, dtype=torch.float64))
    assert_all_compiled()
    key = _splitmix((seed + GAMMA) & M64)
    expected = [((_splitmix((key + (i + 1) * GAMMA) & M64) >> 1) >> 10) * 2.0 ** -53 for i in range(15)]
    assert out.flatten().tolist() == expected


def test_dropout_backward_uses_the_forward_mask():
    x = torch.rand(64, 64) + 0.5
    x.requires_grad_(True)
    out = torch.compile(lambda x: F.dropout(x, 0.4, training=True), backend="mlir")(x)
    out.sum().backward()
    assert_all_compiled()
    torch.testing.assert_close(x.grad, (out != 0).float() / 0.6)
    assert 0.5 < (out != 0).float().mean().item() < 0.7


def test_unsupported_runs_eagerly():
    """Symbolic shapes are outside the random rules: the op runs eagerly, as before."""
    fn = torch.compile(lambda x: torch.rand_like(x) + 1, backend="mlir", dynamic=True)
    out = fn(torch.ones(300, 7))
    assert out.shape == (300, 7) and 1 <= out.min().item() and out.max().item() < 2
    reasons = dynamo_mlir.stats()["fallback_reasons"]
    assert any("rand_like" in op for op, _ in reasons), reasons


def test_seeded_wrapper_is_stable_and_eager():
    wrapper = seeded(aten.bernoulli.p)
    assert wrapper is seeded(aten.bernoulli.p) and str(wrapper) == str(aten.bernoulli.p)
    out = wrapper(torch.tensor(5), 0, torch.ones(1000), 0.5)
    assert set(out.unique().tolist()) == {0.0, 1.0}


def test_random_bits_reach_ptx():
    """The lowering is one linalg.generic of i64 arith and linalg.index: the cuda target takes it
    (no GPU needed), so random ops are not kept eager there."""
    from torch_mlir import ir

    from dynamo_mlir.codegen import resolve, run_stages
    from dynamo_mlir.codegen.target import get_target
    from dynamo_mlir.dialects import new_context

    bits, uniform = "tensor<64x128xi64>", "tensor<64x128xf32>"
    text = f'''
func.func @r(%seed: tensor<i64>, %shift: {bits}, %scale: {uniform}) -> {uniform} {{
  %b = "dynamo.random_bits"(%seed) {{stream = 3 : i64}} : (tensor<i64>) -> {bits}
  %t = "dynamo.shr"(%b, %shift) : ({bits}, {bits}) -> {bits}
  %f = "dynamo.cast"(%t) : ({bits}) -> {uniform}
  %u = "dynamo.mul"(%f, %scale) : ({uniform}, {uniform}) -> {uniform}
  return %u : {uniform}
}}'''
    with new_context(), ir.Location.unknown():
        run = run_stages(ir.Module.parse(text), get_target("cuda"), resolve({"cuda_arch": "sm_90"}))
    ptx = run.artifact.device
    assert ptx.count(".visible .entry") == 1
    assert "mul.lo.s64" in ptx and "shr.u64" in ptx  # the SplitMix64 multiplies and shifts


def test_rrelu_backward_uses_the_forward_noise():
    x = torch.randn(64, 64).requires_grad_(True)
    out = torch.compile(lambda x: F.rrelu(x, 0.1, 0.3, training=True), backend="mlir")(x)
    out.sum().backward()
    assert_all_compiled()
    slope = torch.where(x > 0, torch.ones_like(x), out / x).detach()
    torch.testing.assert_close(x.grad, slope)
    negative = slope[x < 0]
    assert 0.1 <= negative.min().item() and negative.max().item() < 0.3 + 1e-6


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rrelu_eval_matches_eager(dtype):
    """Eval mode is deterministic (a leaky relu): forward and gradient equal eager's."""
    x = torch.randn(32, 16).to(dtype).requires_grad_(True)
    grad = torch.randn(32, 16).to(dtype)
    out = torch.compile(lambda x: F.rrelu(x, 0.1, 0.3, training=False), backend="mlir")(x)
    out.backward(grad)
    assert_all_compiled()
    compiled_grad, x.grad = x.grad, None
    expected = F.rrelu(x, 0.1, 0.3, training=False)
    expected.backward(grad)
    assert torch.equal(out, expected) and torch.equal(compiled_grad, x.grad)
