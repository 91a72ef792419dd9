"""The `partitioner` option: how AOTAutograd splits a training graph into forward and backward.

min_cut (opt-in) is AOTAutograd's min-cut rematerialization, with log_softmax decomposed so that
a cross-entropy's forward saves its logits and row statistics and the backward recomputes the
log-probabilities; default is AOTAutograd's default split after our own recomputations (the
log-probabilities from the same statistics: saved_log_softmax.py); save_all saves what the
backward reads, as traced."""

import glob
import os

import pytest
import torch
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.codegen import config
from dynamo_mlir.codegen.options import OptionError
from tests.helpers import assert_all_compiled


def _loss(h, w, target):
    return F.cross_entropy(h @ w.t(), target)


def _inputs():
    torch.manual_seed(0)
    h = torch.randn(16, 12, requires_grad=True)
    w = torch.randn(40, 12, requires_grad=True)
    return h, w, torch.randint(0, 40, (16,))


def _graph_text(folder, kind: str) -> str:
    (path,) = glob.glob(os.path.join(folder, f"*_{kind}.aten.txt"))
    return open(path).read()


@pytest.mark.parametrize("partitioner", ["min_cut", "default", "save_all"])
def test_a_cross_entropy_trains_as_eager_under_either_partitioner(tmp_path, partitioner):
    dynamo_mlir.reset()
    torch._dynamo.reset()
    h, w, target = _inputs()
    eager = _loss(h, w, target)
    eager.backward()
    want = (h.grad.clone(), w.grad.clone())
    h.grad = w.grad = None
    options = {"partitioner": partitioner, "dump_dir": str(tmp_path), "cache": False}
    got = torch.compile(_loss, backend="mlir", options=options)(h, w, target)
    got.backward()
    torch.testing.assert_close(got, eager)
    torch.testing.assert_close((h.grad, w.grad), want)
    assert_all_compiled(min_ops=20, library={"aten.mm.default": 3})  # the matmuls as library calls on cpu
    forward, backward = _graph_text(tmp_path, "forward"), _graph_text(tmp_path, "backward")
    saved = forward[forward.index("return ("):]
    if partitioner == "save_all":
        assert "_log_softmax" in saved and "aten.exp.default" in backward  # the backward's softmax
    else:
        # log_softmax as ops: the backward recomputes the log-probabilities from the saved row max
        # and log-sum (an exp of its own), the forward saves none.
        assert "aten._log_softmax" not in forward and "amax" in saved and "log" in saved, saved
        assert "aten.exp.default" in backward, backward


def test_save_all_saves_what_the_backward_reads(tmp_path):
    dynamo_mlir.reset()
    torch._dynamo.reset()
    h, w, target = _inputs()
    options = {"dump_dir": str(tmp_path), "cache": False, "partitioner": "save_all"}
    got = torch.compile(_loss, backend="mlir", options=options)(h, w, target)
    got.backward()
    grads = (h.grad.clone(), w.grad.clone())
    h.grad = w.grad = None
    eager = _loss(h, w, target)
    eager.backward()
    torch.testing.assert_close(got, eager)
    torch.testing.assert_close(grads, (h.grad, w.grad))
    assert_all_compiled(min_ops=20, library={"aten.mm.default": 3})
    forward = _graph_text(tmp_path, "forward")
    assert "_log_softmax" in forward[forward.index("return ("):]


def test_an_unknown_partitioner_is_refused_naming_the_choices():
    with pytest.raises(OptionError, match="'partitioner'.*must be one of"):
        config.resolve({"partitioner": "greedy"})


def test_equal_results_stay_two_tensors_and_equal_saved_values_one(tmp_path):
    """joint_graph.merge_forward_duplicates: two equal values the backward reads are saved once
    (each attention layer's mask), but two equal results the user gets are two tensors, as eager
    returns them: writing one must not change the other."""
    def fn(x):
        return x.sin(), x.sin(), (x.cumsum(0) * x.cumsum(0)).sum()

    x = torch.randn(6, requires_grad=True)
    a, b, s = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(x)
    assert_all_compiled(min_ops=3)
    assert a.data_ptr() != b.data_ptr()
    with torch.no_grad():
        b.mul_(0)
    torch.testing.assert_close(a, x.detach().sin())
    (a.sum() + s).backward()
    c = x.detach().cumsum(0)
    torch.testing.assert_close(x.grad, x.detach().cos() + (2 * c).flip(0).cumsum(0).flip(0))
    (path,) = glob.glob(os.path.join(str(tmp_path), "*_backward.aten.txt"))
    signature = open(path).read().split("def forward(self, ", 1)[1].split(")", 1)[0]
    saved = [p for p in signature.split(", ") if not p.startswith("tangents")]
    assert len(saved) == 2 and sum("cumsum" in p for p in saved) == 1, signature  # x (sin's) and one cumsum
