"""3-d convolution and pooling, and the general pooling rules (ceil_mode, count_include_pad=False,
divisor_override, overlapping max-pool backward): compiled with no eager fallback, equal to eager.
Half types are compared with the float32 computation on the same values, rounded once (see
helpers.assert_close_to_float32), never with eager's half kernel bit by bit."""

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from helpers import HALF_RTOL, assert_all_compiled, assert_close_to_float32, read_stage

r = torch.randn


def _tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _run(fn, *args, dtype=torch.float32, exact=False, magnitude_rtol=None, library=None):
    """fn compiled vs eager; for a half dtype vs fn in float32 on the same values (indices exact).
    library: the ops expected to make a library call (MKL's sgemm_ for their matmul part); such an
    op counts as a library call, not compiled, although the rest of it is generated code."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    args = [a.to(dtype) for a in args]
    got = torch.compile(fn, backend="mlir")(*args)
    assert_all_compiled(min_ops=0 if library else 1, library=library)
    if dtype in HALF_RTOL:
        for g, w in zip(_tuple(got), _tuple(fn(*[a.float() for a in args]))):
            if g.is_floating_point():
                assert_close_to_float32(g, w, magnitude_rtol)
            else:
                assert torch.equal(g, w)
        return
    tol = dict(rtol=0, atol=0) if exact else dict(rtol=1.3e-6, atol=1e-5)
    for g, w in zip(_tuple(got), _tuple(fn(*args))):
        torch.testing.assert_close(g, w, **tol)


FORWARD = {
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, padding=1), lambda: (r(2, 4, 5, 6, 7), r(6, 4, 3, 3, 3), r(6))),
    "conv3d_grouped_strided": (lambda x, w: F.conv3d(x, w, stride=(1, 2, 2), dilation=(2, 1, 1), groups=2),
                               lambda: (r(2, 4, 7, 8, 9), r(6, 2, 2, 3, 3))),
    "avg_pool2d_ceil_exclude_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                    lambda: (r(2, 3, 9, 10),)),
    "avg_pool2d_ceil_include_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), lambda: (r(2, 3, 9, 10),)),
    "avg_pool2d_divisor": (lambda x: F.avg_pool2d(x, (3, 2), 2, 1, divisor_override=5), lambda: (r(3, 9, 10),)),
    "avg_pool1d_ceil": (lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), lambda: (r(2, 3, 10),)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 2), lambda: (r(2, 3, 6, 7, 8),)),
    "avg_pool3d_ceil_exclude_pad": (lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                    lambda: (r(2, 3, 7, 8, 9),)),
    "max_pool3d_ceil": (lambda x: F.max_pool3d(x, 3, 2, 1, ceil_mode=True), lambda: (r(2, 3, 7, 8, 9),)),
    "max_pool3d_indices": (lambda x: F.max_pool3d(x, 3, 2, 1, dilation=(2, 1, 1), ceil_mode=True, return_indices=True),
                           lambda: (r(2, 3, 7, 8, 9),)),
    "max_pool3d_unbatched_indices": (lambda x: F.max_pool3d(x, 2, return_indices=True), lambda: (r(3, 4, 5, 6),)),
    "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False), lambda: (r(2, 3, 5, 6), torch.rand(2, 4, 5, 2) * 2.4 - 1.2)),
    "bilinear": (lambda a, b, w, c: F.bilinear(a, b, w, c), lambda: (r(3, 4), r(3, 5), r(2, 4, 5), r(2))),
    "addbmm": (lambda m, a, b: torch.addbmm(m, a, b, beta=0.5, alpha=2.0), lambda: (r(4, 6), r(3, 4, 5), r(3, 5, 6))),
    "upsample_bilinear_aa_down": (lambda x: F.interpolate(x, size=(4, 7), mode="bilinear", antialias=True),
                                  lambda: (r(2, 3, 10, 20),)),
    "upsample_bilinear_aa_up_corners": (lambda x: F.interpolate(x, size=(13, 30), mode="bilinear", antialias=True,
                                                                align_corners=True), lambda: (r(2, 3, 10, 20),)),
    "max_pool2d_ceil_indices": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                                lambda: (r(2, 3, 9, 10),)),
    # padding 1 where the kernel reaches 0 (its size is 1): the convolution crops its input
    "conv_transpose2d_padding_beyond_kernel": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, dilation=(2, 3)),
        lambda: (r(1, 2, 4, 5), r(2, 3, 4, 1))),
}


# Ops whose decomposition has a float32 matmul: it runs in MKL (a library call, counted per op);
# float32 convolutions run torch's kernel (transposed ones: the convolution they are imported as).
CONV = {"aten.convolution.default": 1}
FORWARD_LIBRARY = {
    "conv3d": CONV,
    "conv3d_grouped_strided": CONV,
    "conv_transpose2d_padding_beyond_kernel": CONV,
    "addbmm": {"aten.addbmm.default": 1},
    "upsample_bilinear_aa_down": {"aten._upsample_bilinear2d_aa.default": 1},
    "upsample_bilinear_aa_up_corners": {"aten._upsample_bilinear2d_aa.default": 1},
}


@pytest.mark.parametrize("name", FORWARD)
def test_forward_matches_eager(name):
    fn, make = FORWARD[name]
    torch.manual_seed(0)
    _run(fn, *make(), library=FORWARD_LIBRARY.get(name))


@pytest.mark.parametrize("name", ["conv3d", "conv3d_grouped_strided"])
def test_conv3d_in_our_loops(tmp_path, name):
    """With library calls off, a 3-d convolution is our own one linalg.generic."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    fn, make = FORWARD[name]
    torch.manual_seed(0)
    args = make()
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path), "library_matmul": False})(*args)
    torch.testing.assert_close(got, fn(*args), rtol=1.3e-6, atol=1e-5)
    assert dynamo_mlir.stats()["compiled_ops"]["aten.convolution.default"] == 1
    assert_all_compiled()
    assert '"dynamo.conv2d"' in read_stage(str(tmp_path), "dynamo")
    assert "linalg.generic" in read_stage(str(tmp_path), "linalg")


def test_avg_pool_bf16():
    """Windows past the padding and their divisors in bf16 (eager rounds its sums in bf16 too)."""
    torch.manual_seed(0)
    _run(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), r(2, 3, 9, 10),
         dtype=torch.bfloat16)


BACKWARD = {  # overlapping, padded, dilated, ceil_mode windows: eager's scatter-add, replayed
    "2d_overlap_pad_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 9, 10)),
    "3d_dilated": (lambda x: F.max_pool3d(x, 3, 2, 1, dilation=(1, 2, 1)), (2, 3, 7, 8, 9)),
}


def _input_grad(fn, x, g):
    x = x.detach().requires_grad_()
    return torch.autograd.grad(fn(x), x, g)[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", BACKWARD)
def test_max_pool_backward(name, dtype):
    """float32: eager's scatter-add order, bit-exact; bf16: the float32 gradient of the same
    values, rounded once, within bf16 precision (the windows each input position sums are right)."""
    fn, shape = BACKWARD[name]
    torch.manual_seed(0)
    torch._dynamo.reset()
    dynamo_mlir.reset()
    x = r(*shape).to(dtype)
    g = torch.randn_like(fn(x))
    got = _input_grad(torch.compile(fn, backend="mlir"), x, g)
    s = assert_all_compiled()
    assert s["graphs_by_kind"].get("backward") == 1, dynamo_mlir.explain()
    if dtype in HALF_RTOL:
        assert_close_to_float32(got, _input_grad(fn, x.float(), g.float()))
    else:
        torch.testing.assert_close(got, _input_grad(fn, x, g), rtol=0, atol=0)  # eager's order


@pytest.mark.parametrize("kwargs", [
    dict(stride=2, padding=2, output_padding=1),
    dict(stride=(2, 1, 2), padding=1, output_padding=(1, 0, 1), dilation=(1, 2, 1))])
def test_conv_transpose3d_sums_like_eager(kwargs):
    """float32, eager's slow kernel: fused multiply-add columns, then col2vol in kernel order: bit-exact."""
    torch.manual_seed(0)
    x, w, b = (torch.empty(s).uniform_(-9, 9) for s in [(1, 4, 4, 4, 4), (4, 3, 3, 3, 3), (3,)])
    fn = lambda x, w, b: F.conv_transpose3d(x, w, b, **kwargs)  # noqa: E731
    _run(fn, x, w, b, exact=True)


HALF_CONV_TRANSPOSE = {
    "strided": ([(1, 4, 4, 4, 4), (4, 3, 3, 3, 3)], dict(stride=2, padding=1, output_padding=1), torch.bfloat16),
    "onednn": ([(2, 3, 5, 4, 6), (3, 5, 2, 3, 2)], dict(stride=(1, 2, 1), padding=(0, 1, 0)), torch.bfloat16),
    "onednn_f16": ([(2, 3, 5, 4, 6), (3, 5, 2, 3, 2)], dict(stride=(1, 2, 1), padding=(0, 1, 0)), torch.float16),
    "grouped_dilated": ([(2, 4, 3, 3, 3), (4, 2, 3, 3, 3)], dict(stride=2, groups=2, dilation=(1, 2, 1)), torch.bfloat16),
    "padding_beyond_kernel": ([(1, 1, 4, 5, 2), (1, 1, 4, 3, 1)],
                              dict(stride=2, padding=1, output_padding=1, dilation=(2, 3, 2)), torch.bfloat16),
    "2d": ([(2, 4, 6, 5), (4, 3, 3, 2)], dict(stride=(2, 1), padding=(1, 2), output_padding=(1, 0)), torch.bfloat16),
}


@pytest.mark.parametrize("name", HALF_CONV_TRANSPOSE)
def test_conv_transpose_half_is_float32_rounded_once(name):
    """Half inputs: the float32 computation, rounded once. Rounding the columns and col2vol's
    partial sums to bf16 as eager's slow kernel does was up to 8 off (values near 0 where terms
    of several hundred cancel), and on CPUs where eager runs oneDNN it matched nothing."""
    shapes, kwargs, dtype = HALF_CONV_TRANSPOSE[name]
    torch.manual_seed(0)
    x, w = (torch.empty(s).uniform_(-9, 9) for s in shapes)
    b = torch.empty(w.shape[1] * kwargs.get("groups", 1)).uniform_(-9, 9)
    conv = F.conv_transpose3d if x.dim() == 5 else F.conv_transpose2d
    # the float32 convolution it is imported as is torch's kernel (a library call); the rest is ours
    _run(lambda x, w, b: conv(x, w, b, **kwargs), x, w, b, dtype=dtype, magnitude_rtol=1e-5, library=CONV)


@pytest.mark.parametrize("mode,padding_mode,align_corners", [(0, 2, False), (1, 1, True)])
def test_grid_sampler_3d_is_exact(mode, padding_mode, align_corners):
    torch.manual_seed(0)
    x, g = torch.empty(2, 3, 5, 6, 7).uniform_(-9, 9), torch.empty(2, 4, 3, 5, 3).uniform_(-1.3, 1.3)
    _run(lambda x, g: torch.grid_sampler_3d(x, g, mode, padding_mode, align_corners), x, g, exact=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("spatial,mode,padding_mode,align_corners", [(2, 0, 2, True), (3, 0, 0, False), (2, 1, 1, False)])
def test_grid_sample_half_is_float32_rounded_once(spatial, mode, padding_mode, align_corners, dtype):
    """Half grid sampling computes coordinates and weights in float32 and rounds once, as CUDA's
    kernel does. (Eager's CPU kernels round every step in the half type: coordinates of size ~10
    end up to 1/32 of a pixel off, and nearest sampling may take the neighbouring pixel.)"""
    torch.manual_seed(0)
    x = torch.empty(2, 3, *[9, 10, 11][-spatial:]).uniform_(-9, 9).to(dtype)
    g = torch.empty(2, 4, *[3, 5][:spatial - 1], spatial).uniform_(-1.3, 1.3).to(dtype)
    sampler = torch.grid_sampler_2d if spatial == 2 else torch.grid_sampler_3d
    fn = lambda x, g: sampler(x, g, mode, padding_mode, align_corners)  # noqa: E731
    got = torch.compile(fn, backend="mlir")(x, g)
    assert_all_compiled()
    assert_close_to_float32(got, fn(x.float(), g.float()), magnitude_rtol=1e-5)
