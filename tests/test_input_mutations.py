"""Inputs an inference graph mutates are written by the graph itself (frontend/input_mutations.py):
on a target with the `written_inputs` capability (cpu, cuda) the region computes each new value
into its input (codegen/written_inputs.py); otherwise, and where that is not safe, one
multi-tensor copy after the regions writes them back. Optimizer steps give eager's parameters, and
the copies are neither AOTAutograd's per-tensor ones nor eager fallbacks. The cuda cases run on a
GPU; without one, the cuda host schedule is checked (tests/helpers.py: zeros_runtime)."""

import copy
import math

import pytest
import torch
import torch.fx as fx

import dynamo_mlir
from dynamo_mlir.frontend.compile import CompiledRegion
from dynamo_mlir.frontend.input_mutations import take_input_writes
from helpers import zeros_runtime


@pytest.fixture
def write_backs(monkeypatch):
    """The destinations of every multi-tensor copy made, one list per call, in call order."""
    calls = []
    real = torch._foreach_copy_

    def counting(destinations, values, **kwargs):
        calls.append(list(destinations))
        return real(destinations, values, **kwargs)

    monkeypatch.setattr(torch, "_foreach_copy_", counting)
    return calls


@pytest.fixture
def replays(monkeypatch):
    """The CUDA graphs replayed, in call order (none without a GPU)."""
    calls = []
    if torch.cuda.is_available():
        real = torch.cuda.CUDAGraph.replay
        monkeypatch.setattr(torch.cuda.CUDAGraph, "replay", lambda graph: (calls.append(graph), real(graph))[1])
    return calls


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _matches_eager(f, args, compiled=None, **tolerances) -> None:
    """f compiled gives eager's result and leaves its arguments as eager leaves them."""
    expected_args = [a.clone() for a in args]
    got = (compiled or torch.compile(f, backend="mlir", fullgraph=True))(*args)
    torch.testing.assert_close(got, f(*expected_args), **tolerances)
    for a, e in zip(args, expected_args):
        torch.testing.assert_close(a, e, **tolerances)


ON_GPU = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]
DEVICES = ["cpu", pytest.param("cuda", marks=ON_GPU)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make_optimizer", [
    lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9),
], ids=["adamw", "sgd_momentum"])
def test_optimizer_step_writes_every_state_in_place(write_backs, replays, make_optimizer, device, monkeypatch):
    """Two models of the same shapes, each with its optimizer, stepped in turn by one compiled
    function: every step leaves each one's parameters and state as eager's."""
    pairs = []
    for _ in range(2):
        model, ref = _model().to(device), _model().to(device)
        with torch.no_grad():
            for p, q in zip(model.parameters(), ref.parameters()):
                p.copy_(q.normal_())  # the two pairs start apart
        pairs.append((model, make_optimizer(model.parameters()), ref, make_optimizer(ref.parameters())))
    x, y = torch.randn(10, 6, device=device), torch.randn(10, 3, device=device)

    def step(m, o):
        o.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    compiled = torch.compile(step, backend="mlir")
    for _ in range(3):
        for model, opt, ref, ref_opt in pairs:
            torch.testing.assert_close(compiled(model, opt), step(ref, ref_opt), rtol=1e-5, atol=1e-6)
    write_backs.clear()
    region_calls = []
    through_module = CompiledRegion.forward
    monkeypatch.setattr(CompiledRegion, "forward",
                        lambda self, *a: (region_calls.append(self.region.split("_")[1]), through_module(self, *a))[1])
    model, opt, ref, ref_opt = pairs[0]
    torch.testing.assert_close(compiled(model, opt), step(ref, ref_opt), rtol=1e-5, atol=1e-6)
    for other, _, other_ref, _ in pairs:
        for p, q in zip(other.parameters(), other_ref.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    stats = dynamo_mlir.stats()
    assert stats["graphs_by_kind"].get("inference", 0) >= 1 and stats["ops_fallback"] == 0
    # The last step wrote every parameter and state tensor (AdamW: param, exp_avg, exp_avg_sq,
    # step; SGD: param, momentum buffer), each computed in place: no copy after the region, and on
    # cuda none into or out of a CUDA graph's buffers either (static inputs, written where they live).
    updated = {id(t) for t in model.parameters()}
    updated |= {id(v) for state in opt.state.values() for v in state.values() if torch.is_tensor(v)}
    assert len(updated) == {"AdamW": 16, "SGD": 8}[type(opt).__name__]
    assert [c for c in write_backs if any(id(t) in updated for t in c)] == []
    assert f"{len(updated)} mutated input(s) computed in place" in dynamo_mlir.explain()
    assert stats["inputs_written_back"] == 0 and stats["inputs_written_in_place"] >= len(updated)
    assert bool(replays) == (device == "cuda")  # the cuda steps ran as CUDA graphs
    # The optimizer's graph (its inputs static and contiguous, so written where they live) calls
    # its region directly (compile.direct_call), and so does the forward (its inputs guarded,
    # through run_compiled): only the backward's region (inputs saved by the forward, unguarded)
    # went through CompiledRegion.forward's check in the last step.
    assert region_calls == ["backward"]


@pytest.mark.parametrize("make_optimizer,updated", [
    (lambda ps: torch.optim.AdamW(ps, lr=1e-2), 16),
    (lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9), 8),
], ids=["adamw", "sgd_momentum"])
def test_cuda_host_schedule_writes_every_optimizer_state_in_its_input(tmp_path, make_optimizer, updated):
    """Compiled for cuda without a GPU (every stage runs, the regions return zeros): the optimizer
    step's region computes each parameter and state tensor into its input, and its host schedule
    marks those slots written (the runtime copies back only where it handed the kernels a copy)."""
    model = _model()
    opt = make_optimizer(model.parameters())
    model(torch.randn(10, 6)).sum().backward()
    opt.step()  # eager: the state exists, so the compiled step takes it as inputs
    with zeros_runtime("cuda"):
        options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
        torch.compile(opt.step, backend="mlir", options=options)()
    stats = dynamo_mlir.stats()
    assert stats["inputs_written_in_place"] == updated and stats["inputs_written_back"] == 0, dynamo_mlir.explain()
    assert stats["ops_fallback"] == 0 and stats["graphs_by_kind"] == {"inference": 1}
    (host,) = [p.read_text() for p in tmp_path.glob("*inference_fused_*.host.txt")]
    header = host.splitlines()[0]
    assert header.count(" written") == updated, host


@pytest.mark.parametrize("device", DEVICES)
def test_mutated_inputs_of_mixed_dtypes_of_one_graph_computed_in_place(write_backs, device):
    def f(counter, weights, mask):
        counter.add_(1)
        weights.mul_(0.5).add_(counter.float())
        mask.logical_not_()
        return weights.sum()

    args = [torch.tensor([3], device=device), torch.randn(5, 4, device=device), torch.rand(5, device=device) > 0.5]
    _matches_eager(f, args)
    assert write_backs == [] and "3 mutated input(s) computed in place" in dynamo_mlir.explain()
    assert dynamo_mlir.stats()["ops_fallback"] == 0 and dynamo_mlir.stats()["ops_compiled"] > 0


def _graph_with_copy_then_read() -> fx.GraphModule:
    g = fx.Graph()
    a = g.placeholder("a")
    new = g.call_function(torch.ops.aten.add.Tensor, (a, 1))
    g.call_function(torch.ops.aten.copy_.default, (a, new))
    after = g.call_function(torch.ops.aten.mul.Tensor, (a, 2))  # reads `a` after the copy
    g.output((after,))
    return fx.GraphModule(torch.nn.Module(), g)


def test_a_copy_followed_by_a_read_of_its_input_is_left_in_the_graph():
    gm = _graph_with_copy_then_read()
    assert take_input_writes(gm) == []
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.copy_.default in targets
    x = torch.ones(3)
    torch.testing.assert_close(gm(x)[0], torch.full((3,), 4.0))  # (1 + 1) * 2: in order


def test_trailing_copies_become_outputs():
    g = fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    new_a = g.call_function(torch.ops.aten.mul.Tensor, (a, b))
    total = g.call_function(torch.ops.aten.sum.default, (new_a,))
    g.call_function(torch.ops.aten.copy_.default, (a, new_a))
    g.output((total,))
    gm = fx.GraphModule(torch.nn.Module(), g)
    writes = take_input_writes(gm)
    assert [(d.name, v.name) for d, v in writes] == [("a", new_a.name)]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    assert output.args[0] == (total, new_a)
    assert all(n.target is not torch.ops.aten.copy_.default for n in gm.graph.nodes)


def test_training_forward_with_buffer_mutation_still_matches_eager():
    """A training graph's mutations (BatchNorm's running stats) stay AOTAutograd's."""
    torch.manual_seed(0)
    bn, ref = torch.nn.BatchNorm1d(4), None
    ref = copy.deepcopy(bn)
    x = torch.randn(8, 4, requires_grad=True)
    torch.compile(bn, backend="mlir")(x).sum().backward()
    ref(x.detach().clone().requires_grad_()).sum()
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)


@pytest.mark.parametrize("device", DEVICES)
def test_one_input_copied_into_another_that_is_then_updated(device):
    """x.copy_(y); y.add_(1): x gets y's old value. Functionalized, x's new value is a fresh
    tensor (aten.copy), not y itself, so both go in one write-back; where a source is a
    destination itself, the next test shows the copies stay in order."""
    def f(x, y):
        x.copy_(y)
        y.add_(1)
        return x.sum()

    args = [torch.zeros(4, 4, device=device), torch.randn(4, 4, device=device)]
    _matches_eager(f, args)
    assert "2 mutated input(s) written back in one call" in dynamo_mlir.explain()


def test_a_view_of_a_destination_as_a_source_is_seen():
    g = fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    view = g.call_function(torch.ops.aten.t.default, (b,))
    new_b = g.call_function(torch.ops.aten.mul.Tensor, (b, 2))
    g.call_function(torch.ops.aten.copy_.default, (a, view))
    g.call_function(torch.ops.aten.copy_.default, (b, new_b))
    g.output(())
    gm = fx.GraphModule(torch.nn.Module(), g)
    assert take_input_writes(gm) == []
    assert sum(n.target is torch.ops.aten.copy_.default for n in gm.graph.nodes) == 2


@pytest.mark.parametrize("device", DEVICES)
def test_mutated_input_read_after_its_new_value_is_computed(device):
    """p's old value is read after p + x is computed: the region computes the new value into a
    buffer of its own and copies it into p last (bufferization's analysis), eager's answer."""
    def f(p, x):
        y = p * x
        p.add_(x)
        return y + p.sum(0) * p[0]

    args = [torch.randn(5, 4, device=device), torch.randn(5, 4, device=device)]
    _matches_eager(f, args)
    assert dynamo_mlir.stats()["inputs_written_in_place"] == 1 and dynamo_mlir.stats()["ops_fallback"] == 0


@pytest.mark.parametrize("device", DEVICES)
def test_mutated_non_contiguous_input_gets_its_new_value(write_backs, device):
    """A transposed input goes to the region as a contiguous copy, which the code updates: the
    region copies that into the caller's tensor."""
    def f(p):
        p.mul_(2).add_(1)
        return p.sum()

    base = torch.randn(6, 4, device=device)
    expected = base.clone()
    got = torch.compile(f, backend="mlir", fullgraph=True)(base.t())
    torch.testing.assert_close(got, f(expected.t()))
    torch.testing.assert_close(base, expected)
    assert write_backs == [] and dynamo_mlir.stats()["inputs_written_in_place"] == 1


def test_written_input_kept_out_of_the_results_in_the_loops_ir(tmp_path):
    """The optimizer's loops write the parameter's buffer: no result, no copy for it."""
    def f(p, g):
        p.sub_(0.1 * g)
        return g.sum()

    torch.compile(f, backend="mlir", fullgraph=True, options={"dump_dir": str(tmp_path)})(torch.randn(8), torch.randn(8))
    loops = next(tmp_path.glob("*inference_fused_0.loops.mlir")).read_text()
    header = next(line for line in loops.splitlines() if "func.func @main" in line)
    assert header.count("memref<8xf32>") == 2 and "memref.copy" not in loops, loops
    assert dynamo_mlir.stats()["inputs_written_in_place"] == 1


def _update(x, y, w):
    """x += tanh(y @ w), then a softmax of the new x: on cuda a schedule of a matmul and row-fused
    kernels, long enough to be replayed as a CUDA graph (runtime.MIN_GRAPHED_LAUNCHES)."""
    x.add_(torch.tanh(y @ w))
    return torch.softmax(x, -1).sum(0)


def _misaligned(shape, device) -> torch.Tensor:
    """Contiguous, starting 4 bytes past a 16-byte boundary: the cuda runtime hands its kernels an
    aligned copy."""
    return torch.randn(math.prod(shape) + 1, device=device)[1:].view(shape)


def _statics(n, shape, device) -> list[torch.Tensor]:
    """Tensors marked as living at a fixed address (as Dynamo marks an optimizer's state): the cuda
    runtime's CUDA graphs read and write them in place, one capture per address."""
    tensors = [torch.randn(shape, device=device) for _ in range(n)]
    for t in tensors:
        torch._dynamo.mark_static_address(t)
    return tensors


@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["graphs", "direct"])
@pytest.mark.parametrize("device", [pytest.param("cuda", marks=ON_GPU)])
def test_written_input_gets_eager_value_on_every_call(replays, device, cuda_graphs):
    """The input a region computes into holds eager's value after each of many calls: the same
    tensor again (a replay's own input buffer, copied back), new tensors of the same shape, a
    misaligned one, a transposed one (CompiledRegion's contiguous copy), and static ones at two
    addresses (written where they live), each called twice."""
    torch.manual_seed(0)
    y, w = torch.randn(64, 16, device=device), torch.randn(16, 32, device=device)
    same = torch.randn(64, 32, device=device)
    statics = _statics(2, (64, 32), device)
    xs = [same, same, same, torch.randn(64, 32, device=device), torch.randn(64, 32, device=device),
          _misaligned((64, 32), device), torch.randn(32, 64, device=device).t(), *statics, *statics]
    compiled = torch.compile(_update, backend="mlir", options={"cuda_graphs": cuda_graphs})
    for x in xs:
        _matches_eager(_update, [x, y, w], compiled, rtol=1e-5, atol=1e-5)
    stats = dynamo_mlir.stats()
    assert stats["inputs_written_in_place"] >= 1 and stats["inputs_written_back"] == 0, dynamo_mlir.explain()
    assert stats["ops_fallback"] == 0
    assert bool(replays) == cuda_graphs

