"""scaled_dot_product_attention through backend="mlir": every mask form, forward and gradients.

A boolean mask (True = attend) must become an additive -inf mask before the math form runs: added
as 0/1 it gives a plausible but wrong answer (the transformers models' default masks are boolean).
"""

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled


def _inputs(gqa=False):
    torch.manual_seed(0)
    q = torch.randn(2, 4, 16, 32, requires_grad=True)
    kv_heads = 2 if gqa else 4
    k = torch.randn(2, kv_heads, 16, 32, requires_grad=True)
    v = torch.randn(2, kv_heads, 16, 32, requires_grad=True)
    return q, k, v


def _bool_mask():
    mask = torch.rand(2, 1, 16, 16) > 0.3
    mask[:, :, :, 0] = True  # no fully masked row: its gradient is NaN in eager's math kernel
    return mask


CASES = {
    "bool_mask": (lambda: {"attn_mask": _bool_mask()}, False),
    "float_mask": (lambda: {"attn_mask": torch.randn(2, 1, 16, 16)}, False),
    "causal": (lambda: {"is_causal": True}, False),
    "scale": (lambda: {"scale": 0.3, "attn_mask": _bool_mask()}, False),
    "gqa_bool_mask": (lambda: {"enable_gqa": True, "attn_mask": _bool_mask()}, True),
}


@pytest.mark.parametrize("case", CASES)
def test_sdpa_forward_and_gradients_match_eager(case):
    make_kwargs, gqa = CASES[case]
    q, k, v = _inputs(gqa)
    kwargs = make_kwargs()

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    expected = attend(q, k, v)
    grads_expected = torch.autograd.grad(expected.square().sum(), (q, k, v))
    got = torch.compile(attend, backend="mlir")(q, k, v)
    grads_got = torch.autograd.grad(got.square().sum(), (q, k, v))
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    for g, e in zip(grads_got, grads_expected):
        torch.testing.assert_close(g, e, rtol=1e-3, atol=1e-5)
    # the two bmm forward (q k^T, weights v) and four backward run as MKL calls (library_matmul)
    assert_all_compiled(min_ops=5, library={"aten.bmm.default": 6})


@pytest.mark.parametrize("library", [True, False], ids=["fused_kernel", "math_form"])
def test_sdpa_fully_masked_row_gives_eagers_zeros(library):
    """Inference: with library_matmul, the graph keeps SDPA whole and torch's fused CPU kernel runs
    it (codegen/cpu/library_attention.py); without, the math form runs as our loops."""
    q, k, v = (t.detach() for t in _inputs())
    mask = _bool_mask()
    mask[0, 0, 3, :] = False

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    expected = attend(q, k, v, mask)
    got = torch.compile(attend, backend="mlir", options={"library_matmul": library})(q, k, v, mask)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert got[0, :, 3].abs().max() == 0
    if library:  # the boolean mask made additive (compiled), then one call
        assert_all_compiled(min_ops=2, library={"aten._scaled_dot_product_flash_attention_for_cpu.default": 1})
    else:
        assert_all_compiled(min_ops=5)


def test_inference_grouped_query_attention_runs_torchs_fused_kernel_on_repeated_heads():
    """enable_gqa in an inference graph: the key and value heads are repeated in place (query head
    h reads key head h // 2) before torch's fused CPU kernel, no eager op."""
    q, k, v = (t.detach() for t in _inputs(gqa=True))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    with torch.no_grad():
        got = torch.compile(attend, backend="mlir")(q, k, v)
    torch.testing.assert_close(got, attend(q, k, v), rtol=1e-4, atol=1e-5)
    # the whole graph is the one call (the head repeat is part of the op's import, no ATen op of its own)
    assert_all_compiled(min_ops=0, library={"aten._scaled_dot_product_flash_attention_for_cpu.default": 1})


def test_half_inference_attention_keeps_the_math_form():
    """A bfloat16 inference graph: the fused CPU op's import takes float32/float64 only, so the
    graph keeps the math form (half_attention.py, eager's roundings), compiled, not run eagerly."""
    q, k, v = (t.detach().to(torch.bfloat16) for t in _inputs())

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    with torch.no_grad():
        got = torch.compile(attend, backend="mlir")(q, k, v)
    want = attend(q.double(), k.double(), v.double())
    assert (got.double() - want).abs().max() < 3e-2
    assert_all_compiled(min_ops=5, library={"aten.bmm.default": 2})
