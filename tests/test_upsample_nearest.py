"""Nearest upsampling reads the input index eager's kernel reads (ATen's UpSample.h nearest_idx,
nearest_exact_idx): floor(dst * s) in float32 with s = 1 / scale where a scale is given, at most
the last index; the same index where the size is kept. torch's decomposition took
s = isize / (isize * scale) unclamped, and was wrong on torch-mlir's UpSampleNearest2dDynamicFactor
(17% of elements: the last row read index 2 of a size-2 dim). frontend/aten/resample.py."""

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from helpers import assert_all_compiled

CASES = {
    # torch-mlir's UpSampleNearest2dDynamicFactor: an output size and scales that do not give it
    "size_and_scales": (lambda x: torch._C._nn.upsample_nearest2d(x, output_size=[6, 10], scales_h=2.3, scales_w=4.7),
                        (2, 3, 2, 2)),
    "exact_size_and_scales": (lambda x: torch._C._nn._upsample_nearest_exact2d(x, [6, 10], 2.3, 4.7), (2, 3, 2, 2)),
    # floor(5 * 1.1) = 5: eager keeps every index, 1 / 1.1 would move the last one
    "size_kept_at_1.1": (lambda x: F.interpolate(x, scale_factor=1.1), (2, 3, 5, 7)),
    "scale_2.3": (lambda x: F.interpolate(x, scale_factor=2.3), (2, 3, 5, 7)),
    "vec_scales": (lambda x: torch.ops.aten.upsample_nearest2d.vec(x, None, [1.7, 3.1]), (1, 2, 6, 5)),
    "1d": (lambda x: F.interpolate(x, scale_factor=1.7), (2, 3, 9)),
    "3d_size": (lambda x: F.interpolate(x, size=(3, 7, 11)), (1, 2, 4, 5, 6)),
    "exact_3d": (lambda x: F.interpolate(x, scale_factor=(1.5, 0.6, 2.2), mode="nearest-exact"), (1, 2, 4, 5, 6)),
}


@pytest.mark.parametrize("name", CASES)
def test_forward_and_gradient_match_eager(name):
    fn, shape = CASES[name]
    torch.manual_seed(0)
    x = torch.rand(shape, requires_grad=True)
    got = torch.compile(fn, backend="mlir", dynamic=False)(x)
    want = fn(x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)  # a gather: eager's values exactly
    w = torch.randn(want.shape)
    grad, = torch.autograd.grad((got * w).sum(), x)
    grad_eager, = torch.autograd.grad((want * w).sum(), x)
    torch.testing.assert_close(grad, grad_eager, rtol=1e-6, atol=1e-6)
    assert_all_compiled(min_ops=2)


def test_dynamic_input_sizes_match_eager():
    """Input sizes that vary between calls (the scales given): the source indices are computed
    in the compiled region; the gather and the clamp to a symbolic bound still run eagerly."""
    fn, _ = CASES["size_and_scales"]
    compiled = torch.compile(fn, backend="mlir", dynamic=True)
    for shape in [(2, 3, 2, 2), (1, 2, 3, 4), (3, 1, 2, 5)]:
        x = torch.rand(shape)
        torch.testing.assert_close(compiled(x), fn(x), rtol=0, atol=0)
    s = dynamo_mlir.stats()
    assert s["compiled_ops"].get("aten.mul.Tensor", 0) >= 2, s["compiled_ops"]  # dst * (float)(1 / scale)
    assert set(s["fallback_ops"]) <= {"aten.clamp.default", "aten.index.Tensor"}, s["fallback_ops"]
