"""A training graph's log_softmax is saved as its row statistics (frontend/saved_log_softmax.py):
the backward reads the logits and two [rows, 1] tensors, never the [rows, classes] float32
log-probabilities, and the gradients match eager's."""

import glob
import os
import re

import pytest
import torch
import torch.nn.functional as F

from helpers import HALF_RTOL, assert_all_compiled

ROWS, CLASSES = 24, 1000


def _backward_inputs(dump_dir: str) -> str:
    """The signature line of the backward graph AOTAutograd handed us: what the forward saved."""
    (path,) = glob.glob(os.path.join(dump_dir, "*_backward.aten.txt"))
    return re.search(r"def forward\(self, (.*)\):", open(path).read()).group(1)


def _labels():
    labels = torch.randint(0, CLASSES, (ROWS,))
    labels[::5] = -100  # ignored rows: nll_loss's backward writes them zeros
    return labels


def _train(fn, logits, labels, tmp_path, compiled=None):
    compiled = compiled or torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})
    leaf = logits.detach().clone().requires_grad_()
    loss = compiled(leaf, labels)
    loss.backward()
    ref = logits.detach().clone().requires_grad_()
    expected = fn(ref, labels)
    expected.backward()
    return loss, leaf.grad, expected, ref.grad


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_upcast_cross_entropy_saves_the_half_logits_and_row_statistics(dtype, tmp_path):
    logits = (torch.randn(ROWS, CLASSES) * 4).to(dtype)
    loss, grad, expected, expected_grad = _train(lambda x, t: F.cross_entropy(x.float(), t), logits, _labels(),
                                                 tmp_path)
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, expected_grad, rtol=HALF_RTOL[dtype], atol=1e-6)
    assert_all_compiled(min_ops=10)
    saved = _backward_inputs(str(tmp_path))
    assert f"f32[{ROWS}, {CLASSES}]" not in saved, saved
    half = {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    assert f"{half}[{ROWS}, {CLASSES}]" in saved and saved.count(f"f32[{ROWS}, 1]") == 2, saved


def test_float32_cross_entropy_saves_its_input_not_the_log_probabilities(tmp_path):
    w = torch.randn(CLASSES, 16, requires_grad=True)
    h = torch.randn(ROWS, 16)
    labels = _labels()

    def fn(w, t):
        return F.cross_entropy(h @ w.t(), t)

    loss, grad, expected, expected_grad = _train(fn, w, labels, tmp_path)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grad, expected_grad)
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 2})
    saved = _backward_inputs(str(tmp_path))
    # the logits h @ w.t() (the log_softmax's input) and two row statistics; not its output too
    assert saved.count(f"f32[{ROWS}, {CLASSES}]") == 1 and saved.count(f"f32[{ROWS}, 1]") == 2, saved


def test_log_probabilities_read_whole_in_the_forward_are_right_too(tmp_path):
    """The forward reads every log-probability (a mean), not only gathered ones; the backward
    still computes them again from the statistics, and the gradient of both uses matches."""
    logits = torch.randn(ROWS, CLASSES, dtype=torch.bfloat16)

    def fn(x, t):
        logp = F.log_softmax(x.float(), dim=-1)
        return F.nll_loss(logp, t) + 0.1 * logp.mean()

    loss, grad, expected, expected_grad = _train(fn, logits, _labels(), tmp_path)
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, expected_grad, rtol=HALF_RTOL[torch.bfloat16], atol=1e-6)
    assert_all_compiled(min_ops=10)
    assert f"f32[{ROWS}, {CLASSES}]" not in _backward_inputs(str(tmp_path))


def test_save_all_saves_the_log_probabilities(tmp_path):
    """partitioner="save_all": AOTAutograd's default split as traced, the matrix saved."""
    fn = lambda x, t: F.cross_entropy(x.float(), t)  # noqa: E731
    logits = torch.randn(ROWS, CLASSES, dtype=torch.bfloat16)
    compiled = lambda x, t: torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path),  # noqa: E731
                                                                     "partitioner": "save_all"})(x, t)
    loss, grad, expected, expected_grad = _train(fn, logits, _labels(), tmp_path, compiled)
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, expected_grad, rtol=HALF_RTOL[torch.bfloat16], atol=1e-6)
    assert_all_compiled(min_ops=10)
    assert f"f32[{ROWS}, {CLASSES}]" in _backward_inputs(str(tmp_path))
