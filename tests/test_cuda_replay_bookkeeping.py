"""The CUDA replay's bookkeeping (codegen/cuda/runtime.py), checked without a GPU: which outputs a
caller still holds (it only counts references, which CPU tensors have too), and which inputs a
replay reads where they live, through GraphedFunction on a stand-in for CUDA graph capture whose
kernels, like a graph's, read and write fixed addresses."""

import contextlib
import ctypes
import gc
from types import SimpleNamespace

import pytest
import torch

from dynamo_mlir.codegen.cuda import runtime
from dynamo_mlir.codegen.cuda.runtime import GraphedFunction, _Replay, _is_replay_output, _storage_uses, _tensor_refs
from dynamo_mlir.codegen.signature import SizeSpec, TensorSpec


class _Outputs(_Replay):
    """A replay's output bookkeeping without a captured graph."""

    def __init__(self, outputs):
        self.outputs = outputs
        self.alone = _tensor_refs(self.outputs), _storage_uses(self.outputs)


def test_held_outputs_sees_tensors_views_and_lists_and_their_release():
    replay = _Outputs([torch.randn(3), torch.randn(4), torch.randn(5)])
    assert replay.held_outputs() == []
    first = replay.outputs[0]
    assert replay.held_outputs() == [0]
    del first
    view = replay.outputs[2][1:]  # only a view: the storage is still read
    assert replay.held_outputs() == [2]
    del view
    everything = list(replay.outputs)  # the list a call returned
    assert replay.held_outputs() == [0, 1, 2]
    del everything
    assert replay.held_outputs() == []


def _at(address: int, shape, stride) -> torch.Tensor:
    """The float32 tensor at an address, keeping nothing alive: what a captured kernel reads."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    memory = (ctypes.c_float * span).from_address(address)
    return torch.frombuffer(memory, dtype=torch.float32).as_strided(shape, stride)


class _Graph:
    """A captured graph: the steps recorded while capturing, run again by replay()."""

    capturing = None

    def __init__(self):
        self.steps = []

    def replay(self):
        for step in self.steps:
            step()


@contextlib.contextmanager
def _capture(graph):
    _Graph.capturing = graph
    try:
        yield
    finally:
        _Graph.capturing = None


class _Kernels:
    """A CudaFunction stand-in: out = 2 * x + 1, then x += 1 where x is written. Its step reads
    and writes addresses, as a kernel does: recorded while capturing, run at once otherwise."""

    # x of symbolic length: its shape is in a replay's key (runtime.InputLayouts)
    signature = SimpleNamespace(name="kernels", inputs=(TensorSpec((-1,), torch.float32),))

    def __init__(self, written=()):
        self.written = frozenset(written)

    def __call__(self, x):
        out = torch.empty(x.shape)
        where = [(t.data_ptr(), tuple(t.shape), t.stride()) for t in (x, out)]

        def step():
            x, out = (_at(*w) for w in where)
            out.copy_(2 * x + 1)
            if 0 in self.written:
                x.add_(1)

        if _Graph.capturing:
            _Graph.capturing.steps.append(step)
        else:
            step()
        return [out]


class _Stream:
    def wait_stream(self, other):
        pass


@pytest.fixture
def fake_capture(monkeypatch):
    """torch.cuda's graphs and streams as the stand-ins above: GraphedFunction runs unchanged."""
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "graph", _capture)
    monkeypatch.setattr(torch.cuda, "Stream", _Stream)
    monkeypatch.setattr(torch.cuda, "current_stream", _Stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())


def _graphed(kernels) -> GraphedFunction:
    """A GraphedFunction past its first call, which runs uncaptured (tested on its own below):
    from here each call replays or captures."""
    f = GraphedFunction(kernels)
    f.called = True
    return f


def _captured(fn: GraphedFunction) -> list[_Replay]:
    return [r for replays in fn.replays.values() for r in replays]


def _copied(replay: _Replay) -> list[int]:
    """The input positions a replay copies into its own buffers."""
    return sorted(i for _, positions in replay.copies for i in positions)


def test_the_first_call_runs_uncaptured_and_the_second_captures(fake_capture):
    f = GraphedFunction(_Kernels())
    x = torch.randn(8)
    (y,) = f(x)
    torch.testing.assert_close(y, 2 * x + 1)
    assert _captured(f) == [] and not _is_replay_output(y)
    (z,) = f(x)
    torch.testing.assert_close(z, 2 * x + 1)
    assert len(_captured(f)) == 1 and _is_replay_output(z)


def test_a_replay_reads_another_replays_outputs_in_place_and_keeps_none_of_them(fake_capture):
    forward, backward = _graphed(_Kernels()), _graphed(_Kernels())
    for step in range(3):
        x = torch.randn(8)
        (y,) = forward(x)
        assert _is_replay_output(y) and not _is_replay_output(x)
        (z,) = backward(y)
        torch.testing.assert_close(z, 4 * x + 3)
        del y, z  # the backward keeps no reference: the forward's one replay is free again
    assert len(_captured(forward)) == 1
    (replay,) = _captured(backward)
    assert _copied(replay) == []


def test_views_are_read_in_place_at_their_own_address_and_strides(fake_capture):
    forward, backward = _graphed(_Kernels()), _graphed(_Kernels())
    x = torch.randn(8)
    (y,) = forward(x)
    (z,) = backward(y[2:])  # a view at an offset
    torch.testing.assert_close(z, 2 * y[2:] + 1)
    rows, columns = y.view(2, 4), y.view(4, 2).t()  # the same address and shape, not the same strides
    torch.testing.assert_close(backward(rows)[0], 2 * rows + 1)
    torch.testing.assert_close(backward(columns)[0], 2 * columns + 1)
    assert len(_captured(backward)) == 3 and all(_copied(r) == [] for r in _captured(backward))


def test_a_clone_of_a_replay_output_and_the_same_memory_under_another_storage_are_copied(fake_capture):
    forward, backward = _graphed(_Kernels()), _graphed(_Kernels())
    (y,) = forward(torch.randn(8))
    alias = torch.from_numpy(y.numpy())  # the output's memory, not its storage
    assert not _is_replay_output(y.clone()) and not _is_replay_output(alias)
    (z,) = backward(y.clone())
    torch.testing.assert_close(z, 2 * y + 1)
    assert [_copied(r) for r in _captured(backward)] == [[0]]


def test_a_dead_replays_outputs_are_ordinary_tensors(fake_capture):
    forward = _graphed(_Kernels())
    (y,) = forward(torch.randn(8))
    address = y.untyped_storage().data_ptr()
    assert address in runtime._REPLAY_OUTPUTS
    del forward
    gc.collect()
    assert not _is_replay_output(y) and address not in runtime._REPLAY_OUTPUTS


def test_each_consumer_reads_its_own_producers_outputs(fake_capture):
    """Two forwards before their backwards: the first's outputs are still held at the second,
    which then runs another replay into other buffers (and learns to return that output as a
    clone); each backward reads its own forward's output."""
    forward, backward = _graphed(_Kernels()), _graphed(_Kernels())
    for step in range(3):
        x1, x2 = torch.randn(8), torch.randn(8)
        (y1,), (y2,) = forward(x1), forward(x2)
        assert y1.data_ptr() != y2.data_ptr()
        torch.testing.assert_close(backward(y2)[0], 4 * x2 + 3)
        torch.testing.assert_close(backward(y1)[0], 4 * x1 + 3)
        del y1, y2
    assert len(_captured(forward)) == 2


def test_a_large_output_held_takes_another_replay_instead_of_a_clone_at_every_call(fake_capture, monkeypatch):
    """A caller keeping one output of a replay (the first sweep's logits) would make every later
    call clone that output, a pass over its memory each time, if the output is large: it takes
    a replay of its own instead, returning its outputs in place. A small one held is cloned."""
    monkeypatch.setattr(GraphedFunction, "KEEP_BY_CLONE_BYTES", 8 * 4)
    f = _graphed(_Kernels())
    kept = f(torch.randn(16))[0]  # 16 floats, over the limit: held for the rest of the test
    for step in range(3):
        x = torch.randn(16)
        (y,) = f(x)
        torch.testing.assert_close(y, 2 * x + 1)
        assert _is_replay_output(y) and y.data_ptr() != kept.data_ptr()  # in place, not a clone
        del y
    assert f.kept == set() and len(_captured(f)) == 2
    small = f(torch.randn(8))[0]  # 8 floats: a size of its own, held
    for step in range(3):
        x = torch.randn(8)
        (y,) = f(x)
        torch.testing.assert_close(y, 2 * x + 1)
    assert f.kept == {0} and not _is_replay_output(y) and _is_replay_output(small)
    assert len(_captured(f)) == 4  # at 8 floats: the one `small` holds, and the one whose outputs are cloned


def test_a_written_input_is_written_in_place_when_a_replay_output_else_copied_back(fake_capture):
    forward, update = _graphed(_Kernels()), _graphed(_Kernels(written={0}))
    for step in range(2):
        (y,) = forward(torch.randn(8))
        before = y.clone()
        torch.testing.assert_close(update(y)[0], 2 * before + 1)
        torch.testing.assert_close(y, before + 1)  # once: the capture's warm-up wrote a copy
        plain = torch.randn(8)
        before = plain.clone()
        torch.testing.assert_close(update(plain)[0], 2 * before + 1)
        torch.testing.assert_close(plain, before + 1)
        del y
    in_place, copied = sorted(_captured(update), key=lambda r: len(r.copies))
    assert (_copied(in_place), in_place.write_backs) == ([], [])
    assert _copied(copied) == [0] and [positions for _, positions in copied.write_backs] == [[0]]


def test_a_function_fed_its_own_outputs_captures_a_bounded_number_of_replays(fake_capture):
    """x = f(x): each replay's output is a new address; past MAX_OUTPUT_ADDRESSES of them the
    outputs are copied in, and the replays take turns."""
    f = _graphed(_Kernels())
    x = torch.randn(8)
    for step in range(4 * GraphedFunction.MAX_OUTPUT_ADDRESSES):
        want = 2 * x + 1
        (x,) = f(x)
        torch.testing.assert_close(x, want)
        assert _is_replay_output(x)
    assert len(_captured(f)) == 1 + GraphedFunction.MAX_OUTPUT_ADDRESSES


class _FixedKernels(_Kernels):
    """_Kernels over an input of static shape: Dynamo's guards check its shape and strides, so a
    replay's key holds only its address where it is read in place (runtime.InputLayouts)."""

    signature = SimpleNamespace(name="fixed", inputs=(TensorSpec((8,), torch.float32),))


def test_a_parameter_is_read_where_it_lives_and_its_address_keys_the_replay(fake_capture):
    f = _graphed(_FixedKernels())
    w = torch.nn.Parameter(torch.randn(8), requires_grad=False)
    for _ in range(2):
        (y,) = f(w)
        torch.testing.assert_close(y, 2 * w + 1)
        del y
    assert len(_captured(f)) == 1 and _copied(_captured(f)[0]) == []
    with torch.no_grad():
        w.add_(1)  # changed in place: the replay reads it where it lives
    (y,) = f(w)
    torch.testing.assert_close(y, 2 * w + 1)
    del y
    w.data = torch.randn(8)  # moved: a new address, a new capture
    (y,) = f(w)
    torch.testing.assert_close(y, 2 * w + 1)
    assert len(_captured(f)) == 2


class _Uncapturable(_Kernels):
    """A schedule with a step that cannot be captured (one that synchronizes)."""

    def __call__(self, x):
        if _Graph.capturing:
            raise RuntimeError("operation not permitted when stream is capturing")
        return super().__call__(x)


def _one_replay() -> GraphedFunction:
    f = _graphed(_Kernels())
    f.MAX_REPLAYS = 1  # its outputs held, it has no room for another
    return f


@pytest.mark.parametrize("make", [lambda: _graphed(_Uncapturable()), _one_replay],
                         ids=["capture_fails", "max_replays"])
def test_a_replay_output_into_an_uncaptured_call(fake_capture, make):
    forward, backward = _graphed(_Kernels()), make()
    for step in range(3):
        x = torch.randn(8)
        (y,) = forward(x)
        held = [backward(y)[0] for _ in range(3)]
        for z in held:
            torch.testing.assert_close(z, 4 * x + 3)
        del y, held, z
    assert len(_captured(forward)) == 1  # a failed capture kept no reference to its inputs either
    assert len(_captured(backward)) == (0 if backward.uncapturable else 1)


class _SizedKernels(_Kernels):
    """out = 2 * x[:n] + 1 for an `index` size input n: the capture fixes n in its step, as a
    launch's grid and size arguments are fixed at capture."""

    signature = SimpleNamespace(name="sized", inputs=(TensorSpec((-1,), torch.float32), SizeSpec("n")))

    def __call__(self, x, n):
        return super().__call__(x[:n])


def _call_at_sizes(sizes) -> GraphedFunction:
    """A graphed _SizedKernels called at each of `sizes`, every result checked and dropped."""
    f = _graphed(_SizedKernels())
    x = torch.randn(8)
    for n in sizes:
        (y,) = f(x, n)
        torch.testing.assert_close(y, 2 * x[:n] + 1)
        del y
    return f


def test_a_size_input_keys_the_replays_by_its_value(fake_capture):
    """A graph with an int input (a symbolic size Dynamo passes) is replayed: one capture per
    value, each replay run only for the value it was captured with, none copying the int."""
    f = _call_at_sizes((3, 5, 3, 5, 8))
    assert sorted(key[0][1][1] for key in f.replays) == [3, 5, 8]
    assert len(_captured(f)) == 3 and all(_copied(r) == [0] for r in _captured(f))


def test_past_max_signatures_a_new_size_runs_uncaptured(fake_capture, monkeypatch):
    """Ever new sizes (a growing length) stop capturing after MAX_SIGNATURES: the ones captured
    keep replaying, a new one runs directly (still correct)."""
    monkeypatch.setattr(GraphedFunction, "MAX_SIGNATURES", 2)
    f = _call_at_sizes((2, 3, 4, 5, 2))
    assert sorted(key[0][1][1] for key in f.replays) == [2, 3] and len(_captured(f)) == 2


def test_a_gradient_from_a_replay_becomes_grad_itself_and_is_read_in_place_after(fake_capture):
    """runtime._alias: a replay returns new tensor objects over its storage, so autograd's
    AccumulateGrad takes a backward's gradient as .grad as it is (it clones one that anything
    else holds, and the replay holds its own objects), and an optimizer step's replay reading
    that .grad reads it in place. A .grad still held at the next backward is not replayed over:
    from then on that output comes as a clone (gradients accumulated over steps)."""
    backward, step = _graphed(_Kernels()), _graphed(_Kernels())

    class Compiled(torch.autograd.Function):  # a backward whose gradient is the replay's output
        @staticmethod
        def forward(ctx, p):
            return p.clone()

        @staticmethod
        def backward(ctx, grad):
            return backward(grad)[0]

    for _ in range(3):  # a training loop: .grad dropped before each backward
        p = torch.nn.Parameter(torch.zeros(8))
        Compiled.apply(p).sum().backward()
        torch.testing.assert_close(p.grad, torch.full((8,), 3.0))
        assert _is_replay_output(p.grad)  # taken as it is: a clone would be no replay's output
        (out,) = step(p.grad)
        torch.testing.assert_close(out, torch.full((8,), 7.0))
        del p, out
    assert len(_captured(backward)) == 1 and all(_copied(r) == [] for r in _captured(step))
    p = torch.nn.Parameter(torch.zeros(8))
    Compiled.apply(p).sum().backward()
    (again,) = backward(torch.ones(8))  # p.grad holds the replay's memory: another capture
    assert len(_captured(backward)) == 2 and not _is_replay_output(again)
    torch.testing.assert_close(p.grad, torch.full((8,), 3.0))
