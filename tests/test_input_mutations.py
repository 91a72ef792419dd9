"""Inputs an inference graph mutates are written by the graph itself (frontend/input_mutations.py):
on a target with the `written_inputs` capability (cpu) the region computes each new value into
its input (codegen/written_inputs.py); otherwise, and where that is not safe, one multi-tensor
copy after the regions writes them back. Optimizer steps give eager's parameters, and the
copies are neither AOTAutograd's per-tensor ones nor eager fallbacks."""

import copy

import pytest
import torch
import torch.fx as fx

import dynamo_mlir
from dynamo_mlir.frontend.input_mutations import take_input_writes


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


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def _matches_eager(f, args) -> None:
    """f compiled gives eager's result and leaves its arguments as eager leaves them."""
    expected_args = [a.clone() for a in args]
    got = torch.compile(f, backend="mlir", fullgraph=True)(*args)
    torch.testing.assert_close(got, f(*expected_args))
    for a, e in zip(args, expected_args):
        torch.testing.assert_close(a, e)


DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs an NVIDIA GPU")])]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make_optimizer", [
    lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9),
], ids=["adamw", "sgd_momentum"])
def test_optimizer_step_writes_every_state_in_place_or_in_one_call(write_backs, make_optimizer, device):
    model, ref = _model().to(device), _model().to(device)
    opt, ref_opt = make_optimizer(model.parameters()), make_optimizer(ref.parameters())
    x, y = torch.randn(10, 6, device=device), torch.randn(10, 3, device=device)

    def step(m, o):
        o.zero_grad()
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    compiled = torch.compile(step, backend="mlir")
    for _ in range(3):
        torch.testing.assert_close(compiled(model, opt), step(ref, ref_opt), rtol=1e-5, atol=1e-6)
    write_backs.clear()
    torch.testing.assert_close(compiled(model, opt), step(ref, ref_opt), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    stats = dynamo_mlir.stats()
    assert stats["graphs_by_kind"].get("inference", 0) >= 1 and stats["ops_fallback"] == 0
    # The last step wrote every parameter and state tensor (AdamW: param, exp_avg, exp_avg_sq,
    # step; SGD: param, momentum buffer): on cpu computed in place, no copy after the region; on
    # cuda in one call per (device, dtype) group (the other multi-tensor copies are CUDA-graph
    # replays filling their own input buffers).
    updated = {id(t) for t in model.parameters()}
    updated |= {id(v) for state in opt.state.values() for v in state.values() if torch.is_tensor(v)}
    assert len(updated) == {"AdamW": 16, "SGD": 8}[type(opt).__name__]
    calls = [c for c in write_backs if any(id(t) in updated for t in c)]
    if device == "cpu":
        assert calls == [] and f"{len(updated)} mutated input(s) computed in place" in dynamo_mlir.explain()
    else:
        assert {id(t) for c in calls for t in c} == updated and len(calls) <= 2


def test_mutated_inputs_of_mixed_dtypes_of_one_graph_computed_in_place(write_backs):
    def f(counter, weights, mask):
        counter.add_(1)
        weights.mul_(0.5).add_(counter.float())
        mask.logical_not_()
        return weights.sum()

    args = [torch.tensor([3]), torch.randn(5, 4), torch.rand(5) > 0.5]
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


def test_one_input_copied_into_another_that_is_then_updated():
    """x.copy_(y); y.add_(1): x gets y's old value. Functionalized, x's new value is a fresh
    tensor (aten.copy), not y itself, so both go in one write-back; where a source is a
    destination itself, the next test shows the copies stay in order."""
    def f(x, y):
        x.copy_(y)
        y.add_(1)
        return x.sum()

    args = [torch.zeros(4, 4), torch.randn(4, 4)]
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


def test_mutated_input_read_after_its_new_value_is_computed():
    """p's old value is read after p + x is computed: the region computes the new value into a
    buffer of its own and copies it into p last (bufferization's analysis), eager's answer."""
    def f(p, x):
        y = p * x
        p.add_(x)
        return y + p.sum(0) * p[0]

    args = [torch.randn(5, 4), torch.randn(5, 4)]
    _matches_eager(f, args)
    assert dynamo_mlir.stats()["inputs_written_in_place"] == 1 and dynamo_mlir.stats()["ops_fallback"] == 0


def test_mutated_non_contiguous_input_gets_its_new_value(write_backs):
    """A transposed input goes to the region as a contiguous copy, which the code updates: the
    region copies that into the caller's tensor."""
    def f(p):
        p.mul_(2).add_(1)
        return p.sum()

    base = torch.randn(6, 4)
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
