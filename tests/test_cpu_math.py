"""cpu target, fast_math (codegen/cpu/fastmath.py, lowering/math/approx.py): float32 exp, expm1,
log, log1p, tanh and erf as our own branch-free polynomials.

Accuracy is measured in ulps against the correctly rounded result (the float64 function rounded
to float32), never against eager's float32 kernel, whose last bit depends on the CPU. Sweeps:
every 1021st float32 bit pattern (all exponents, both signs: 4.2M values) plus a dense uniform
grid over the interval where each function varies. Special values (zeros, infinities, NaN,
subnormals, the overflow/underflow thresholds) must be exactly right. The IR tests check that the
option removes the libm calls (and that off brings them back), and that x86 code is SIMD."""

import math
import platform
import re

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled, assert_close_to_float32, compile_and_run, read_stage

# name -> (torch function, the interval swept densely, the max error in ulps it must stay within:
# the most any float32 was off in a sweep of every 7th bit pattern, see approx.py)
FUNCTIONS = {
    "exp": (torch.exp, (-104.0, 89.0), 1),
    "expm1": (torch.expm1, (-18.0, 89.0), 1),
    "log": (torch.log, (0.0, 4.0), 1),
    "log1p": (torch.log1p, (-1.0, 4.0), 1),
    "tanh": (torch.tanh, (-10.0, 10.0), 1),
    "erf": (torch.erf, (-4.5, 4.5), 2),
}

# How the llvm stage computes each function with fast_math off (expm1: Kahan's formula on exp).
LIBM_FORM = {"exp": "llvm.intr.exp", "expm1": "llvm.intr.exp", "log": "llvm.intr.log", "log1p": "@log1pf",
             "tanh": "llvm.intr.tanh", "erf": "@erff"}

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.0 ** -149, -(2.0 ** -149), 2.0 ** -126,
           -(2.0 ** -126), 1.1754942e-38, -1.1754942e-38, 2.0 ** -24, -(2.0 ** -24), 1e-30, -1e-30,
           3.4028235e38, -3.4028235e38, 1e10, -1e10,
           88.72283935546875, 88.72284, 89.0, -87.33654, -103.27892, -103.97207, -103.9721, -150.0,  # exp
           -17.32868, -17.5, -30.0,  # expm1 reaches -1
           -1.0000001, -0.99999994, 2.0 ** 24, 2.0 ** 25 + 4,  # log1p
           0.70710677, 0.7071068, 1.4142135, 1.4142137,  # log's mantissa interval
           9.010913, 9.011, 0.625, 0.6249999,  # tanh: 1, and where its two formulas meet
           1.5, 1.4999999, 3.9192, 3.92, 3.9199998, 4.0]  # erf: where its formulas meet, and 1


def every_kth_float32(k: int = 1021) -> torch.Tensor:
    bits = torch.arange(0, 1 << 32, k, dtype=torch.int64)
    return torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)


def sweep(interval) -> torch.Tensor:
    return torch.cat([every_kth_float32(), torch.linspace(*interval, 1 << 21), torch.tensor(SPECIAL)])


def ulps(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """How many float32 values lie between got and want (0: equal; NaN pairs: 0)."""
    def ordered(t):
        b = t.view(torch.int32).to(torch.int64)
        return torch.where(b < 0, -(b & 0x7FFFFFFF), b)

    both_nan = got.isnan() & want.isnan()
    return torch.where(both_nan, 0, (ordered(got) - ordered(want)).abs())


def correctly_rounded(fn, x: torch.Tensor) -> torch.Tensor:
    return fn(x.double()).float()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_ulp_error_over_the_float32_range(name):
    fn, interval, bound = FUNCTIONS[name]
    x = sweep(interval)
    got = compile_and_run(fn, x)
    assert_all_compiled()
    want = correctly_rounded(fn, x)
    assert torch.equal(got.isnan(), want.isnan())
    error = ulps(got, want)
    worst = int(error.argmax())
    assert error[worst] <= bound, f"{name}({x[worst].item()!r}) = {got[worst].item()!r}, want {want[worst].item()!r}"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_exactly(name):
    """NaN where eager gives NaN; infinities, zeros with their sign, and the values at the
    thresholds exactly (eager's own kernel flushes some subnormals: the reference is float64)."""
    fn = FUNCTIONS[name][0]
    x = torch.tensor(SPECIAL)
    got = compile_and_run(fn, x)
    assert_all_compiled()
    assert torch.equal(got.isnan(), fn(x).isnan())
    want = correctly_rounded(fn, x)
    exact = ~want.isfinite() | (want == 0) | (want.abs() == 1)
    assert torch.equal(got[exact].signbit(), want[exact].signbit())
    assert (ulps(got, want)[exact] == 0).all(), list(zip(x[exact].tolist(), got[exact].tolist(), want[exact].tolist()))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_half_types_are_the_float32_result_rounded(name, dtype):
    fn, interval, _ = FUNCTIONS[name]
    x = torch.cat([torch.linspace(*interval, 4096), torch.tensor(SPECIAL)]).to(dtype)
    got = compile_and_run(fn, x)
    assert_all_compiled()
    assert_close_to_float32(got, fn(x.float()), magnitude_rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_expm1_with_fast_math_off_and_in_float64(dtype):
    """Kahan's formula on libm's exp and log, including x in (84, 88.7], where (e^x - 1) x overflowed."""
    x = torch.cat([torch.linspace(-20, 88.7, 100_000), torch.tensor([1e-30, -1e-30, 1e-8, -0.0, 0.0])]).to(dtype)
    got = compile_and_run(torch.expm1, x, options={"fast_math": False})
    assert_all_compiled()
    torch.testing.assert_close(got, torch.expm1(x), rtol=4 * torch.finfo(dtype).eps, atol=0)
    assert torch.equal(got.signbit(), torch.expm1(x).signbit())


def _llvm_stage(fn, x, tmp_path, fast_math: bool) -> str:
    compile_and_run(fn, x, options={"dump_dir": str(tmp_path), "fast_math": fast_math})
    assert_all_compiled()
    return read_stage(str(tmp_path), "llvm")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_libm_calls_only_with_fast_math_off(name, tmp_path):
    fn = FUNCTIONS[name][0]
    x = torch.randn(1000)
    assert LIBM_FORM[name] not in _llvm_stage(fn, x, tmp_path / "on", fast_math=True)
    torch._dynamo.reset()
    assert LIBM_FORM[name] in _llvm_stage(fn, x, tmp_path / "off", fast_math=False)


def test_float64_keeps_libm(tmp_path):
    llvm = _llvm_stage(lambda x: torch.tanh(torch.exp(x)), torch.randn(100, dtype=torch.float64), tmp_path, True)
    assert "llvm.intr.exp" in llvm and "llvm.intr.tanh" in llvm


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 assembly")
def test_the_loop_is_simd_code(tmp_path):
    """The elementwise loop of exp, log and tanh is vectorized: packed float32 FMAs, no call."""
    def fn(x):
        return torch.tanh(torch.log(x.abs() + 1) * torch.exp(x))

    compile_and_run(fn, torch.randn(4096), options={"dump_dir": str(tmp_path)})
    assert_all_compiled()
    assembly = read_stage(str(tmp_path), "s")
    assert re.search(r"\bvfmadd\d+ps\b", assembly), assembly[:2000]
    assert not re.search(r"\b(expf|logf|tanhf)\b", assembly)


@pytest.mark.parametrize("fn", [F.gelu, lambda x: F.gelu(x, approximate="tanh"), torch.sigmoid, F.silu, F.softplus,
                                F.elu, lambda x: torch.softmax(x, -1), lambda x: torch.log_softmax(x, -1)],
                         ids=["gelu", "gelu_tanh", "sigmoid", "silu", "softplus", "elu", "softmax", "log_softmax"])
def test_activations_match_eager(fn):
    """What models call, made of the expanded functions."""
    x = torch.randn(64, 1000) * 6
    got = compile_and_run(fn, x)
    assert_all_compiled()
    torch.testing.assert_close(got, fn(x), rtol=4e-6, atol=1e-6)
