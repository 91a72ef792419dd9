"""The row sums of a cross-entropy backward's one-hot gradient are folded to the scattered value
(frontend/one_hot_sums.py): no sum over the classes is left in the backward graph, and the
gradients match eager's (ignored rows included)."""

import glob
import os

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import dynamo_mlir
from dynamo_mlir.frontend.one_hot_sums import fold_one_hot_sums
from helpers import assert_all_compiled

ROWS, CLASSES = 24, 1000
aten = torch.ops.aten


def _labels():
    labels = torch.randint(0, CLASSES, (ROWS,))
    labels[::5] = -100  # ignored rows: their weight, and so their sum, is zero
    return labels


def _sums_over_classes(graph: torch.fx.Graph) -> list:
    return [n for n in graph.nodes if n.target is aten.sum.dim_IntList
            and n.args[0].meta["val"].shape[-1] == CLASSES and n.args[1] in ([1], [-1])]


@pytest.mark.parametrize("keepdim", [True, False])
def test_the_sum_of_a_weighted_one_hot_is_its_weight_times_the_value(keepdim):
    def fn(x, index, weight):
        one_hot = torch.scatter(torch.zeros_like(x), 1, index, -1.0) * weight
        return one_hot.sum(1, keepdim=keepdim), one_hot

    x, index, weight = torch.randn(ROWS, CLASSES), torch.randint(0, CLASSES, (ROWS, 1)), torch.randn(ROWS, 1)
    gm = make_fx(fn, tracing_mode="fake")(x, index, weight)
    assert len(_sums_over_classes(gm.graph)) == 1
    assert fold_one_hot_sums(gm.graph) == 1
    gm.recompile()
    assert not _sums_over_classes(gm.graph), gm.code
    for got, want in zip(gm(x, index, weight), fn(x, index, weight)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_sum_of_rows_with_several_or_no_elements_is_left_alone():
    """An index two wide along the dim (two elements a row), or narrower than the rows (rows
    with none): the sum is not the scattered value."""
    def fn(x, wide, narrow, weight):
        a = torch.scatter(torch.zeros_like(x), 1, wide, 1.0) * weight
        b = torch.scatter(torch.zeros_like(x), 1, narrow, 1.0) * weight
        return a.sum(1, keepdim=True), b.sum(1, keepdim=True)

    x, weight = torch.randn(ROWS, CLASSES), torch.randn(ROWS, 1)
    wide, narrow = torch.randint(0, CLASSES, (ROWS, 2)), torch.randint(0, CLASSES, (ROWS // 2, 1))
    gm = make_fx(fn, tracing_mode="fake")(x, wide, narrow, weight)
    assert fold_one_hot_sums(gm.graph) == 0


@pytest.mark.parametrize("reduce", [torch.sum, torch.amax, torch.logsumexp])
def test_a_reduction_of_a_scalar_in_training_compiles(reduce):
    """dim 0 of a 0-d tensor (OpInfo's first sample of sum, amax, logsumexp): the joint graph's
    sums over it have no rows to fold, and must not stop the graph from compiling (the rewrite
    once took `dim % 0`: the whole graph ran eagerly)."""
    x = torch.tensor(1.5, requires_grad=True)
    ref = x.detach().clone().requires_grad_()
    out = torch.compile(lambda x: reduce(x, 0, keepdim=True) * 3.0, backend="mlir")(x)
    out.backward()
    (reduce(ref, 0, keepdim=True) * 3.0).backward()
    assert_all_compiled()
    assert dynamo_mlir.stats()["graphs_by_kind"].get("forward") == 1, dynamo_mlir.explain()
    torch.testing.assert_close(out, reduce(ref.detach(), 0, keepdim=True) * 3.0)
    torch.testing.assert_close(x.grad, ref.grad)


def test_a_cross_entropy_backward_sums_no_one_hot_rows(tmp_path):
    fn = lambda x, t: F.cross_entropy(x.float(), t)  # noqa: E731
    logits, labels = (torch.randn(ROWS, CLASSES) * 4).to(torch.bfloat16), _labels()
    leaf, ref = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})(leaf, labels)
    loss.backward()
    expected = fn(ref, labels)
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(leaf.grad, ref.grad, rtol=1.6e-2, atol=1e-6)
    assert_all_compiled(min_ops=10)
    (path,) = glob.glob(os.path.join(str(tmp_path), "*_backward.aten.txt"))
    backward = open(path).read()
    assert "scatter" in backward and "sum.dim_IntList" not in backward, backward


def test_symbolic_rows_are_folded_too(tmp_path):
    """With dynamic=True the rows are a symbol: the index's and the matrix's rows are the same
    one, which the rewrite sees without adding a guard; one compile serves both sizes."""
    fn = lambda x, t: F.cross_entropy(x, t)  # noqa: E731
    compiled = torch.compile(fn, backend="mlir", dynamic=True, options={"dump_dir": str(tmp_path)})
    for rows in (24, 40):
        logits, labels = torch.randn(rows, CLASSES), torch.randint(0, CLASSES, (rows,))
        leaf, ref = logits.clone().requires_grad_(), logits.clone().requires_grad_()
        compiled(leaf, labels).backward()
        fn(ref, labels).backward()
        torch.testing.assert_close(leaf.grad, ref.grad)
    # (the scatter itself runs eagerly at symbolic sizes: its rule does not take them yet)
    assert set(dynamo_mlir.stats()["fallback_ops"]) <= {"aten.scatter.value"}, dynamo_mlir.explain()
    backwards = glob.glob(os.path.join(str(tmp_path), "*_backward.aten.txt"))
    assert len(backwards) == 1, backwards
    backward = open(backwards[0]).read()
    assert "scatter" in backward and "sum.dim_IntList" not in backward, backward
