"""as_strided (and as_strided_scatter) address storage, not values: after a view (diagonal,
narrow, select, a stepped slice, expand, unsafe_view, a split's piece) or on a channels-last
tensor, the result is eager's, compiled (frontend/storage_views.py, frontend/aten/movement.py).
Before, the view was compiled into a new contiguous tensor and as_strided read that one: a
storage size error, or silently other elements."""

import pytest
import torch

import dynamo_mlir
from helpers import assert_all_compiled


def _grid(*shape):
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape)


def _channels_last():
    return _grid(2, 3, 4, 5).to(memory_format=torch.channels_last)


CASES = {
    "diagonal": (lambda t: t.diagonal().as_strided((2, 2), (1, 2)), lambda: _grid(4, 4)),
    "diagonal_offset": (lambda t: t.diagonal().as_strided((2, 2), (1, 2), 1), lambda: _grid(4, 4)),
    "computed_diagonal": (lambda t: (t * 2).diagonal().as_strided((2, 2), (1, 2)), lambda: _grid(4, 4)),
    "narrow": (lambda t: t.narrow(1, 2, 5).as_strided((3, 3), (12, 1)), lambda: _grid(4, 12)),
    "select": (lambda t: t.select(0, 1).as_strided((2, 3), (3, 1)), lambda: _grid(4, 12)),
    "stepped_slice": (lambda t: t[:, ::2].as_strided((4, 3), (12, 2)), lambda: _grid(4, 12)),
    "expand": (lambda t: t[1:2].expand(3, 12).as_strided((3, 4), (0, 1)), lambda: _grid(4, 12)),
    "unsafe_view": (lambda t: torch.ops.aten._unsafe_view(t * 2, (12, 4)).as_strided((3, 3), (4, 1), 2),
                    lambda: _grid(4, 12)),
    "split_piece": (lambda t: t.split(3, dim=1)[1].as_strided((2, 2), (10, 1)), lambda: _grid(10, 10)),
    "as_strided_of_as_strided": (lambda t: t.as_strided((5, 5), (20, 2), 1).as_strided((3, 3), (11, 1)),
                                 lambda: _grid(10, 10)),
    "channels_last_input": (lambda t: t.as_strided((3, 4), (1, 3)), _channels_last),
    "channels_last_view": (lambda t: t[:, 1].as_strided((3, 4), (1, 3)), _channels_last),
    "channels_last_computed": (lambda t: (t * 2)[:, :, 1:].as_strided((3, 4), (1, 3), 7), _channels_last),
    "input_is_a_view": (lambda t: t.as_strided((2, 3), (10, 1), 35), lambda: _grid(10, 10)[3:, 2:]),
}


@pytest.mark.parametrize("name", CASES)
def test_as_strided_reads_the_storage_eager_reads(name):
    fn, make = CASES[name]
    x = make()
    got = torch.compile(fn, backend="mlir")(x)
    torch.testing.assert_close(got, fn(x), rtol=0, atol=0)
    stats = assert_all_compiled(min_ops=1)
    # one: an as_strided of a view reads the view's root (a view chain nothing else reads goes)
    assert stats["compiled_ops"]["aten.as_strided.default"] == 1, stats["compiled_ops"]


def test_storage_outside_a_view_input_runs_eagerly():
    """The input is x[3:, 2:] and as_strided reads x's elements before it: only eager has them."""
    x = _grid(10, 10)
    fn = lambda t: t.as_strided((2, 3), (10, 1), 5) * 2  # noqa: E731
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x[3:, 2:]), fn(x[3:, 2:]), rtol=0, atol=0)
    stats = dynamo_mlir.stats()
    assert stats["fallback_ops"] == {"aten.as_strided.default": 1}, stats
    assert stats["compiled_ops"] == {"aten.mul.Tensor": 1}, stats


GRADIENT_CASES = ["computed_diagonal", "narrow", "stepped_slice", "channels_last_computed"]


@pytest.mark.parametrize("name", GRADIENT_CASES)
def test_as_strided_gradients(name):
    fn, make = CASES[name]
    grad_fn = lambda t: torch.sin(fn(t * 1.5))  # noqa: E731  (a graph with forward and backward)
    x, ref = make().requires_grad_(), make().requires_grad_()
    out = torch.compile(grad_fn, backend="mlir")(x)
    want = grad_fn(ref)
    weight = torch.randn(want.shape)
    torch.testing.assert_close(out, want)
    got, = torch.autograd.grad((out * weight).sum(), x)
    expected, = torch.autograd.grad((want * weight).sum(), ref)
    torch.testing.assert_close(got, expected)
    assert_all_compiled(min_ops=4)
    assert dynamo_mlir.stats()["graphs_by_kind"] == {"forward": 1, "backward": 1}


SCATTER_CASES = {
    "transposed_self": lambda a, b: torch.as_strided_scatter(a.t(), b, (2, 3), (1, 4), 2),
    "computed_transposed_self": lambda a, b: torch.as_strided_scatter((a * 2).t(), b, (2, 3), (1, 4), 2),
    "diagonal_self": lambda a, b: torch.as_strided_scatter(a.diagonal(), b[0, :2], (2,), (1,), 1),
}


@pytest.mark.parametrize("name", SCATTER_CASES)
def test_as_strided_scatter_into_a_view(name):
    """The result is self's clone, laid out as self (where dense): the view addresses that."""
    fn, args = SCATTER_CASES[name], (_grid(4, 5), -_grid(2, 3) - 1)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(*args), fn(*args), rtol=0, atol=0)
    assert_all_compiled(min_ops=1)
    assert dynamo_mlir.stats()["compiled_ops"]["aten.as_strided_scatter.default"] == 1
