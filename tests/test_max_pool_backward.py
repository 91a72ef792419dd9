"""Max-pool backward. With overlapping windows an input element that is the maximum of several
windows (its index repeats in the saved indices) receives the SUM of their gradients, as eager's
scatter-add gives it; ties (many equal values) make such repeats common. Given indices that did not
come from its forward (a direct call), the backward scatters into them as eager does."""

import glob

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from helpers import assert_all_compiled, read_stage

CASES = {
    "2d_k3_s1": (F.max_pool2d, [2, 3, 9, 9], dict(kernel_size=3, stride=1)),
    "2d_k2_s2_disjoint": (F.max_pool2d, [2, 3, 8, 8], dict(kernel_size=2, stride=2)),
    "2d_k3_s2": (F.max_pool2d, [2, 3, 11, 11], dict(kernel_size=3, stride=2)),
    "2d_k3_s2_p1_ceil": (F.max_pool2d, [2, 3, 10, 10], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "2d_k3_s1_dilation2": (F.max_pool2d, [2, 3, 10, 10], dict(kernel_size=3, stride=1, dilation=2)),
    "1d_k4_s1": (F.max_pool1d, [2, 3, 30], dict(kernel_size=4, stride=1)),
    "3d_k3_s2": (F.max_pool3d, [1, 2, 7, 7, 7], dict(kernel_size=3, stride=2)),
}


@pytest.fixture(params=["gathered", "large"])
def window_form(request, monkeypatch):
    """The backward's forms: gathered, for small tensors (a gather of every window that holds
    an input position); large, for tensors whose gathered windows would be too large
    (MAX_WINDOW_ELEMENTS made 1): the scatter-add."""
    if request.param == "large":
        from dynamo_mlir.frontend.aten import max_pool_backward
        monkeypatch.setattr(max_pool_backward, "MAX_WINDOW_ELEMENTS", 1)
    return request.param


@pytest.mark.parametrize("values", ["ties", "randn", "nan"])
@pytest.mark.parametrize("name", CASES)
def test_gradient_accumulates_over_overlapping_windows(name, values, window_form):
    pool, shape, kwargs = CASES[name]
    torch.manual_seed(0)
    x = torch.randint(0, 3, shape).float() if values == "ties" else torch.randn(shape)
    if values == "nan":  # eager's kernels take a NaN as the window's maximum (the last one)
        x.flatten()[::7] = float("nan")
    x.requires_grad_()
    fn = lambda t: pool(t, **kwargs)  # noqa: E731
    out = torch.compile(fn, backend="mlir")(x)
    weight = torch.randn(out.shape)
    got, = torch.autograd.grad((out * weight).sum(), x)
    want, = torch.autograd.grad((fn(x) * weight).sum(), x)
    torch.testing.assert_close(out, fn(x), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)
    assert_all_compiled(min_ops=2)
    spatial = len(shape) - 2 if pool is not F.max_pool1d else 2  # max_pool1d runs as a 2-d pool
    backward = dynamo_mlir.stats()["compiled_ops"].get(f"aten.max_pool{spatial}d_with_indices_backward.default")
    assert backward == 1, dynamo_mlir.stats()["compiled_ops"]
    overlapping = kwargs["stride"] < kwargs["kernel_size"]
    if values == "ties" and overlapping:  # the case this guards: some input elements are the max of several windows
        _, indices = pool(x.detach(), **kwargs, return_indices=True)
        assert _most_repeated(indices) > 1


def _most_repeated(indices) -> int:
    """The most windows of one plane that name the same input element."""
    return max(int(row.unique(return_counts=True)[1].max()) for row in indices.flatten(2).flatten(0, 1))


# ----------------------------------------------------------------------------- indices given by the caller

def _backward(spatial, kernel, stride, padding):
    op = {2: torch.ops.aten.max_pool2d_with_indices_backward, 3: torch.ops.aten.max_pool3d_with_indices_backward}[spatial]
    n = spatial
    return lambda g, x, i: op(g, x, [kernel] * n, [stride] * n, [padding] * n, [1] * n, False, i)


# torch-mlir's MaxPool2dWithIndicesBackward{Static,Dynamic}{4D,3D}Module: random indices in [0, 16),
# most of them outside their window; plus a 3-d pool, and -1 (no maximum: eager adds nothing).
GIVEN = {
    "2d_batched": (_backward(2, 2, 1, 1), [2, 4, 6, 5], [2, 4, 7, 6], 16),
    "2d_unbatched": (_backward(2, 2, 1, 1), [4, 6, 5], [4, 7, 6], 16),
    "2d_disjoint": (_backward(2, 2, 2, 0), [2, 3, 8, 8], [2, 3, 4, 4], 64),
    "3d": (_backward(3, 2, 1, 0), [2, 3, 4, 5, 3], [2, 3, 3, 4, 2], 60),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", GIVEN)
def test_backward_scatters_into_the_indices_it_is_given(name, dtype, tmp_path):
    fn, x_shape, out_shape, high = GIVEN[name]
    torch.manual_seed(0)
    g, x = torch.rand(out_shape, dtype=dtype), torch.rand(x_shape, dtype=dtype)
    i = torch.randint(0, high, out_shape)
    i.view(-1)[::7] = -1
    got = torch.compile(fn, backend="mlir", dynamic=False, options={"dump_dir": str(tmp_path)})(g, x, i)
    # eager adds in the dtype, in output order, as the scatter does: a bf16 sum rounds each step
    torch.testing.assert_close(got, fn(g, x, i), rtol=1e-6 if dtype == torch.float32 else 1.6e-2, atol=1e-6)
    assert_all_compiled()
    assert '"dynamo.scatter"' in read_stage(str(tmp_path), "dynamo")


def test_training_backward_keeps_the_window_form(tmp_path):
    """In a training step the indices are the forward's (AOTAutograd's joint graph shows it, and
    backend._partition marks the backward node): the gather form, no serial scatter."""
    x = torch.randn(2, 3, 9, 9, requires_grad=True)
    fn = lambda t: F.max_pool2d(t, 3, stride=1)  # noqa: E731
    out = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    w = torch.randn(out.shape)
    got, = torch.autograd.grad((out * w).sum(), x)
    want, = torch.autograd.grad((fn(x) * w).sum(), x)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert_all_compiled(min_ops=2)
    backward = "".join(open(p).read() for p in glob.glob(str(tmp_path / "*backward*.dynamo.mlir")))
    assert '"dynamo.gather"' in backward and '"dynamo.scatter"' not in backward


def test_indices_from_the_forward_in_the_same_graph_use_the_window_form(tmp_path):
    def fn(g, x):
        _, i = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
        return torch.ops.aten.max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i)

    g, x = torch.randn(2, 3, 4, 4), torch.randn(2, 3, 8, 8)
    got = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(g, x)
    torch.testing.assert_close(got, fn(g, x), rtol=0, atol=0)
    assert_all_compiled(min_ops=2)
    assert '"dynamo.scatter"' not in read_stage(str(tmp_path), "dynamo")


def test_resnet_stem_pooling_backward_compiles():
    """ResNet-50's first pooling (3x3, stride 2, padding 1 over 112x112, 64 channels): its
    gathered windows would be too large, so the backward is the scatter-add of the forward's
    indices (it ran eagerly before), and matches eager's gradient exactly."""
    torch.manual_seed(0)
    x = torch.randn(2, 64, 112, 112, requires_grad=True)
    fn = lambda t: F.max_pool2d(t, 3, 2, 1).relu()  # noqa: E731
    weight = torch.randn(2, 64, 56, 56)
    got, = torch.autograd.grad((torch.compile(fn, backend="mlir")(x) * weight).sum(), x)
    want, = torch.autograd.grad((fn(x) * weight).sum(), x)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert_all_compiled(min_ops=2)
    assert dynamo_mlir.stats()["compiled_ops"].get("aten.max_pool2d_with_indices_backward.default") == 1
