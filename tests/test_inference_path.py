"""An inference graph goes to Dynamo without AOTAutograd's runtime wrapper only where that
wrapper had nothing to do (frontend/inference_path.py); everywhere else the wrapper stays, and
either way the results are eager's."""

import types

import torch

import dynamo_mlir
from dynamo_mlir.frontend.inference_path import InferencePath


def _compile(fn):
    return torch.compile(fn, backend="mlir", fullgraph=True)


def _called_directly() -> int:
    return dynamo_mlir.stats()["graphs_called_directly"]


def test_plain_inference_graph_is_called_directly_and_matches_eager():
    x, y = torch.randn(8, 16), torch.randn(8, 16)
    fn = _compile(lambda a, b: (a + b).exp())
    out = fn(x, y)
    torch.testing.assert_close(out, (x + y).exp())
    s = dynamo_mlir.stats()
    assert s["ops_compiled"] == 2 and s["ops_fallback"] == 0
    assert s["graphs_by_kind"] == {"inference": 1} and _called_directly() == 1
    assert "called directly, without AOTAutograd's runtime wrapper" in dynamo_mlir.explain()
    assert not out.requires_grad
    x2 = torch.randn(8, 16)  # new inputs, same graph
    torch.testing.assert_close(fn(x2, y), (x2 + y).exp())


def test_module_under_no_grad_is_called_directly_and_its_outputs_need_no_grad():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    x = torch.randn(5, 16)
    compiled = _compile(model)
    with torch.no_grad():
        out, expected = compiled(x), model(x)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    assert not out.requires_grad and _called_directly() == 1
    assert dynamo_mlir.stats()["ops_compiled"] > 0


def test_a_region_taking_the_graph_inputs_in_another_order_is_called_as_a_plain_function(monkeypatch):
    """A linear's region takes (x, weight, bias) where Dynamo's graph lists (weight, bias, x):
    direct_call reorders them instead of going through the GraphModule."""
    offered = []
    offer = InferencePath.offer
    monkeypatch.setattr(InferencePath, "offer", lambda self, fn, *rest: (offered.append(fn), offer(self, fn, *rest))[1])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 1))
    x = torch.randn(64, 10)
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-5, atol=1e-6)
    assert len(offered) == 1 and isinstance(offered[0], types.FunctionType)
    assert dynamo_mlir.stats()["ops_library"] == 3 and dynamo_mlir.stats()["ops_fallback"] == 0


def test_sizes_computed_from_symbolic_sizes_are_evaluated_by_the_plain_function(monkeypatch):
    """With symbolic sizes the graph computes sizes on the host (`2 * s0`, `s0 + 1`) and hands
    them to the region: direct_call evaluates them itself (DirectRecipe.steps) instead of going
    through the GraphModule and CompiledRegion's per-input checks (GPT-2's dynamic graph: 150
    inputs checked and copied per call). Each size must be right: a wrong one reshapes or sizes
    the results wrongly."""
    offered = []
    offer = InferencePath.offer
    monkeypatch.setattr(InferencePath, "offer", lambda self, fn, *rest: (offered.append(fn), offer(self, fn, *rest))[1])

    def f(x):
        n = x.shape[0]
        return (x.reshape(n * 2, -1) + 1).exp(), torch.arange(n + 1, dtype=torch.float32) * 2

    fn = torch.compile(f, backend="mlir", dynamic=True, fullgraph=True)
    for n in (3, 5, 8):
        x = torch.randn(n, 8)
        got, want = fn(x), f(x)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            torch.testing.assert_close(g, w)
    assert len(offered) == 1 and isinstance(offered[0], types.FunctionType)
    assert sorted(name for name, _ in offered[0].recipe.steps) == ["add", "mul"]
    assert dynamo_mlir.stats()["ops_fallback"] == 0 and dynamo_mlir.stats()["ops_compiled"] > 0


def test_several_outputs_picked_from_one_region_come_back_in_order():
    x = torch.randn(4, 8)
    fn = _compile(lambda a: (a.sin(), a * 2, a.sin() + 1))
    for got, want in zip(fn(x), (x.sin(), x * 2, x.sin() + 1)):
        torch.testing.assert_close(got, want)
    assert _called_directly() == 1


def test_a_non_contiguous_input_is_read_as_eager_reads_it(monkeypatch):
    """Dynamo guards a static input's strides: a transposed input recompiles. The graph compiled
    for contiguous inputs calls the region on them as they come; for the transposed input eager's
    result is transposed too, and so is ours (output_layouts.py: computed in that order, handed
    back through a view)."""
    offered = []
    offer = InferencePath.offer
    monkeypatch.setattr(InferencePath, "offer", lambda self, fn, *rest: (offered.append(fn), offer(self, fn, *rest))[1])
    x = torch.randn(16, 8)
    fn = _compile(lambda a: a * 3 + 1)
    torch.testing.assert_close(fn(x), x * 3 + 1)
    xt = torch.randn(8, 16).t()  # same shape, other strides
    torch.testing.assert_close(fn(xt), xt * 3 + 1)
    assert fn(xt).stride() == (xt * 3 + 1).stride() == (1, 16)
    torch.testing.assert_close(fn(x + 1), x * 3 + 4)  # the first graph again
    assert dynamo_mlir.stats()["ops_compiled"] >= 2
    assert len(offered) == 2 and offered[0].recipe.copied == ()
    assert dynamo_mlir.stats()["outputs_in_eager_layout"] == 1


def test_only_an_input_not_kept_contiguous_by_the_guards_is_copied(monkeypatch):
    """With a transposed input beside a contiguous one, the graph makes only that one contiguous
    (a parameter-heavy graph with symbolic sizes would otherwise call .contiguous() on every
    parameter every call)."""
    offered = []
    offer = InferencePath.offer
    monkeypatch.setattr(InferencePath, "offer", lambda self, fn, *rest: (offered.append(fn), offer(self, fn, *rest))[1])
    w, xt = torch.randn(16, 8), torch.randn(8, 16).t()
    fn = _compile(lambda w, x: w * 3 + x)
    torch.testing.assert_close(fn(w, xt), w * 3 + xt)
    (recipe,) = [f.recipe for f in offered]
    assert len(recipe.copied) == 1 and recipe.copied[0] == (1 if recipe.order is None else recipe.order.index(1))


def test_input_mutation_is_written_back_by_the_graph_called_directly():
    def f(a):
        a.add_(1)
        return a * 2

    x = torch.randn(6)
    x_eager = x.clone()
    out = _compile(f)(x)
    expected = f(x_eager)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(x, x_eager)  # the input was mutated, as eager does
    # AOTAutograd left the copy into `a` in the graph (input_mutations.py): no wrapper needed.
    assert _called_directly() == 1 and dynamo_mlir.stats()["ops_compiled"] > 0


def test_output_aliasing_an_input_keeps_the_wrapper_and_stays_a_view():
    x = torch.randn(4, 6)
    view, other = _compile(lambda a: (a.view(-1), a + 1))(x)
    assert view.data_ptr() == x.data_ptr() and view.shape == (24,)
    torch.testing.assert_close(other, x + 1)
    assert _called_directly() == 0


def test_training_graph_keeps_the_wrapper_and_gradients_match():
    x = torch.randn(8, 4, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    _compile(lambda a: (a.tanh() * a).sum())(x).backward()
    (x_eager.tanh() * x_eager).sum().backward()
    torch.testing.assert_close(x.grad, x_eager.grad)
    assert _called_directly() == 0
    assert dynamo_mlir.stats()["graphs_by_kind"] == {"forward": 1, "backward": 1}


def test_under_autocast_the_result_has_eager_s_dtype_and_values():
    """AOTAutograd turns autocast off around its wrapper's call only if it was on while the graph
    compiled (Dynamo compiles with it off: the graph carries its casts); the direct call does as
    it would."""
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = _compile(lambda p, q: (p @ q).relu() * 2)(a, b)
        expected = (a @ b).relu() * 2
    assert out.dtype == expected.dtype == torch.bfloat16
    reference = ((a.bfloat16().float() @ b.bfloat16().float()).relu() * 2).bfloat16()
    torch.testing.assert_close(out, reference, rtol=1.6e-2, atol=1e-2)
    assert dynamo_mlir.stats()["ops_compiled"] > 0


def test_the_same_function_as_a_training_graph_after_an_inference_one():
    """Dynamo guards requires_grad: a later call needing gradients gets its own graph, never
    the directly called inference one."""
    fn = _compile(lambda a: (a * a).sum())
    x = torch.randn(5)
    torch.testing.assert_close(fn(x), (x * x).sum())
    w = torch.randn(5, requires_grad=True)
    fn(w).backward()
    torch.testing.assert_close(w.grad, 2 * w.detach())
    assert dynamo_mlir.stats()["graphs_by_kind"] == {"inference": 1, "forward": 1, "backward": 1}
    assert _called_directly() == 1
