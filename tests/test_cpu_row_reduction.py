"""cpu target: float sums, maxima and minima over the innermost dim reduced in 16 interleaved
lanes (codegen/cpu/row_reduction.py): softmax, log_softmax, layer norm and RMS norm against
eager, on rows that are a multiple of the lanes, odd rows (a rest after the last lane step),
rows too short for lanes, rows of 1 and long rows (blocked sums); bf16 against the float32
computation rounded once; NaN and infinities through the row max. Each test checks that every op
was compiled and whether the linalg stage has the [rows, blocks, 16] lane partial."""

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled, assert_close_to_float32, compile_and_run, read_stage

LANES = 16


def _softmax(x):
    return torch.softmax(x, dim=-1)


def _log_softmax(x):
    return torch.log_softmax(x, dim=-1)


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def _rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)


# name -> (function, how many per-row weight vectors it takes)
KERNELS = {"softmax": (_softmax, 0), "log_softmax": (_log_softmax, 0), "layer_norm": (_layer_norm, 2),
           "rms_norm": (_rms_norm, 1)}

# (rows, row length): a multiple of the lanes, odd (a rest of 8 / of 7), one lane step short of
# lanes (31: the generic rule), rows of one element, one long row (blocks of lane partials,
# cascaded) and a 3-d batch.
SHAPES = [(64, 1024), (37, 1000), (5, 999), (6, 31), (9, 1), (2, 20000), (3, 4, 48)]


def _inputs(name: str, shape, dtype=torch.float32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * 3 + 1
    weights = [torch.randn(shape[-1], generator=g) for _ in range(KERNELS[name][1])]
    return [t.to(dtype) for t in (x, *weights)]


def _lane_partial_compiled(dump_dir) -> bool:
    """Whether the linalg stage reduced some row in lanes: a [..., blocks, 16] float partial."""
    return f"x{LANES}xf32>" in read_stage(str(dump_dir), "linalg")


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", KERNELS)
def test_row_kernels_match_eager(name, shape, tmp_path):
    fn = KERNELS[name][0]
    inputs = _inputs(name, shape)
    got = compile_and_run(fn, *inputs, options={"dump_dir": str(tmp_path)})
    assert_all_compiled()
    torch.testing.assert_close(got, fn(*inputs), rtol=2e-5, atol=2e-5)
    assert _lane_partial_compiled(tmp_path) == (shape[-1] >= 2 * LANES)


@pytest.mark.parametrize("shape", [(32, 1024), (7, 1000), (4, 17)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", KERNELS)
def test_bfloat16_rows_match_float32_rounded_once(name, shape):
    fn = KERNELS[name][0]
    inputs = _inputs(name, shape, torch.bfloat16)
    got = compile_and_run(fn, *inputs)
    assert_all_compiled()
    assert got.dtype == torch.bfloat16
    assert_close_to_float32(got, fn(*[t.float() for t in inputs]))


def test_long_row_sum_stays_accurate(tmp_path):
    """A sum of 2**20 + 7 values near 100: every lane sums blocks of at most 64 terms, then the
    block partials are cascaded, so the result stays within a few float32 ulps of the float64
    sum (one running float32 sum would be off by about 1e-3 relative)."""
    x = torch.rand(2, (1 << 20) + 7, generator=torch.Generator().manual_seed(1)) + 100
    got = compile_and_run(lambda t: t.sum(-1), x, options={"dump_dir": str(tmp_path)})
    assert_all_compiled()
    want = x.double().sum(-1)
    assert ((got.double() - want).abs() / want).max() < 1e-6
    assert _lane_partial_compiled(tmp_path)


@pytest.mark.parametrize("n", [1024, 1003])
def test_row_max_propagates_nan_and_infinities(n):
    """maximumf/minimumf over lanes: a NaN anywhere in a row (in any lane, or in the rest) makes
    the row's max NaN, as eager; -inf rows and +inf elements come out as eager's."""
    x = torch.randn(6, n)
    x[0, 5] = float("nan")
    x[1, n - 1] = float("nan")  # in the rest when n is not a multiple of 16
    x[2] = float("-inf")
    x[3, 17] = float("inf")
    x[4, 0] = float("-inf")
    for fn in (lambda t: t.amax(-1), lambda t: t.amin(-1), _softmax):
        torch._dynamo.reset()
        got = compile_and_run(fn, x)
        assert_all_compiled()
        torch.testing.assert_close(got, fn(x), equal_nan=True)


# Loops of exactly 16 iterations that are not row reductions also become vector code
# (lane_vectors.py) when that is exact: elementwise ops over rows of 16, permuted copies, bool
# results (stored one byte each: never as a packed vector<16xi1>), integer compares.
SIXTEEN_WIDE = {
    "mask_from_ids": (lambda ids: ids != 0, lambda g: torch.randint(0, 3, (2, 16), generator=g)),
    "attention_mask": (lambda x: torch.where((x[:, 0, 0] > 0)[:, None, None, :], x, -1e9).softmax(-1),
                       lambda g: torch.randn(2, 4, 16, 16, generator=g)),
    "masked_fill": (lambda x: x.masked_fill(x > 0.5, -1.0) * 2, lambda g: torch.randn(5, 16, generator=g)),
    "transpose_heads": (lambda x: (x.view(2, 16, 4, 16).transpose(1, 2) * 3).contiguous(),
                        lambda g: torch.randn(2, 16, 64, generator=g)),
    "int_where": (lambda x: torch.where(x > 1, x * 3, x - 7), lambda g: torch.randint(-5, 5, (4, 16), generator=g)),
    "softmax_16": (_softmax, lambda g: torch.randn(3, 4, 16, 16, generator=g)),
}


@pytest.mark.parametrize("name", SIXTEEN_WIDE)
def test_sixteen_wide_loops_match_eager(name):
    fn, make = SIXTEEN_WIDE[name]
    x = make(torch.Generator().manual_seed(2))
    got = compile_and_run(fn, x)
    assert_all_compiled()
    want = fn(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
