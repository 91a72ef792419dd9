"""input_views.py: a graph output that is a view of an input is returned as that view, and an
input that comes permuted is read through its contiguous layout; no region copies either.

The case that needed it: a language model's head tied to its embedding (GPT-2) computes
`h @ E.t()`; AOTAutograd's forward saves `E.t()` for the backward, which the forward region
used to materialise as a transposed copy of E (GPT-2's 154 MB per step), and the backward then
read through another transpose."""

import copy
import glob
import os

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from dynamo_mlir.frontend.input_views import is_input_view, split_output_views, unpermute_inputs
from helpers import assert_all_compiled

V, D, T = 96, 24, 10  # vocabulary, width, tokens: the transposed weight is the only D x V tensor


class TiedLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.norm = torch.nn.LayerNorm(D)

    def forward(self, ids):
        return self.norm(self.embed(ids)) @ self.embed.weight.t()


def _stage(folder, graph_kind: str) -> str:
    paths = glob.glob(os.path.join(folder, f"*_{graph_kind}_fused_*.linalg.mlir"))
    assert len(paths) == 1, os.listdir(folder)
    return open(paths[0]).read()


def test_tied_head_weight_is_neither_transposed_nor_copied(tmp_path):
    torch.manual_seed(0)
    model, ids = TiedLM(), torch.randint(0, V, (1, T))
    labels = ids.roll(-1, dims=1)
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path), "cache": False})
    F.cross_entropy(compiled(ids).flatten(0, 1), labels.flatten()).backward()
    F.cross_entropy(ref(ids).flatten(0, 1), labels.flatten()).backward()
    assert_all_compiled(library={"aten.mm.default": 3})
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
    transposed = f"tensor<{D}x{V}xf32>"
    # forward: the matmul reads E through its indexing maps; the saved E.t() is E's own view
    assert transposed not in _stage(tmp_path, "forward")
    # backward: the saved view comes in as E's layout (V x D), read as it is
    assert transposed not in _stage(tmp_path, "backward")


def _fake_graph(fn, *args):
    return make_fx(fn, tracing_mode="fake")(*args)


def test_output_view_of_input_gets_an_eager_copy_of_its_chain():
    gm = _fake_graph(lambda w, x: (x @ w.t(), w.t().unsqueeze(0)), torch.randn(V, D), torch.randn(T, D))
    assert split_output_views(gm, frozenset()) == 1
    output = next(n for n in gm.graph.nodes if n.op == "output")
    view = output.args[0][1]
    assert is_input_view(view) and is_input_view(view.args[0]) and view.args[0].args[0].op == "placeholder"
    mm = output.args[0][0]
    assert not any(is_input_view(n) for n in mm.all_input_nodes)  # the matmul keeps its own t()
    w, x = torch.randn(V, D), torch.randn(T, D)
    out = gm(w, x)
    assert out[1]._base is w or out[1].data_ptr() == w.data_ptr()


def test_written_input_is_not_viewed():
    gm = _fake_graph(lambda w: (w.t(),), torch.randn(V, D))
    w = next(n for n in gm.graph.nodes if n.op == "placeholder")
    assert split_output_views(gm, frozenset({w})) == 0
    assert not any(is_input_view(n) for n in gm.graph.nodes)


def test_permuted_input_is_read_through_its_contiguous_layout():
    gm = _fake_graph(lambda wt, x: (x @ wt.t(), wt * 2), torch.randn(V, D).t(), torch.randn(T, V))
    assert unpermute_inputs(gm, frozenset()) == 1
    base = next(n for n in gm.graph.nodes if is_input_view(n))
    assert base.meta["val"].is_contiguous() and tuple(base.meta["val"].shape) == (V, D)
    mm = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.mm.default)
    assert base in mm.args  # t() of the transposed input is the base itself: no permute left
    w, x = torch.randn(V, D), torch.randn(T, V)
    out = gm(w.t(), x)
    torch.testing.assert_close(out[0], x @ w)
    torch.testing.assert_close(out[1], w.t() * 2)


def test_a_training_graph_with_input_views_is_called_as_a_plain_function(monkeypatch):
    """A forward handing the backward a view of an input, and a backward taking such a view back to
    its contiguous layout, are each one region plus eager views: compile.direct_call makes both a
    plain function (no GraphModule call around the region), whose results and gradients are
    eager's."""
    from dynamo_mlir.frontend import backend

    made = []
    real = backend.direct_call
    monkeypatch.setattr(backend, "direct_call", lambda fused, **kw: made.append(real(fused, **kw)) or made[-1])
    torch.manual_seed(0)
    model, ids = TiedLM(), torch.randint(0, V, (2, T))
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir", options={"cache": False})
    for _ in range(2):  # the second step runs the functions the first one compiled
        for m in (model, ref):
            m.zero_grad()
        out = compiled(ids)
        torch.testing.assert_close(out, ref(ids), rtol=1e-5, atol=1e-5)
        F.cross_entropy(out.flatten(0, 1), ids.flatten()).backward()
        F.cross_entropy(ref(ids).flatten(0, 1), ids.flatten()).backward()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
    assert len(made) == 2 and all(callable(f) and not isinstance(f, torch.nn.Module) for f in made), made
    assert_all_compiled(library={"aten.mm.default": 3})
