"""Pointwise values the backward reads are computed again there from what the forward saves
anyway (frontend/recomputed_pointwise.py): GPT-2's tanh GELU saves its input and output, not
the three intermediates its backward reads, and every gradient matches eager's."""

import glob
import os
import re

import torch
import torch.fx

from dynamo_mlir.frontend.recomputed_pointwise import _pointwise
from helpers import HALF_RTOL, assert_all_compiled

ROWS, WIDTH = 64, 96


def _saved(dump_dir: str) -> dict[str, str]:
    """The backward graph's inputs (what the forward saved): name -> "dtype[sizes]"."""
    (path,) = glob.glob(os.path.join(dump_dir, "*_backward.aten.txt"))
    signature = re.search(r"def forward\(self, (.*)\):", open(path).read()).group(1)
    return dict(re.findall(r'(\w+): "([^"]+)"', signature))


def _wide(dump_dir: str) -> list[str]:
    return sorted(name for name, t in _saved(dump_dir).items() if t.endswith(f"[{ROWS}, {WIDTH}]"))


def _gelu_tanh(x):  # transformers' NewGELUActivation, as GPT-2 runs it
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))


def _mlp(dtype):
    torch.manual_seed(0)
    w1 = (torch.randn(WIDTH, WIDTH) / WIDTH ** 0.5).to(dtype).requires_grad_()
    w2 = (torch.randn(WIDTH, WIDTH) / WIDTH ** 0.5).to(dtype).requires_grad_()
    return w1, w2, lambda x: (_gelu_tanh(x @ w1) @ w2).float().pow(2).mean()


def _gradients(fn, w1, w2, x):
    loss = fn(x)
    loss.backward()
    grads = (w1.grad.clone(), w2.grad.clone())
    w1.grad = w2.grad = None
    return loss.detach(), grads


def test_gelu_tanh_saves_its_input_and_output_only(tmp_path):
    w1, w2, fn = _mlp(torch.float32)
    x = torch.randn(ROWS, WIDTH)
    compiled = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})
    loss, grads = _gradients(compiled, w1, w2, x)
    expected, expected_grads = _gradients(fn, w1, w2, x)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grads, expected_grads)
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 5})
    # x (the first weight's gradient reads it), x @ w1 (the GELU's input: tanh's and pow's
    # gradients), the GELU's output (the second weight's gradient) and the second matmul's output
    # (the square's gradient); no 0.5 * x, tanh(...) or 1 + tanh(...)
    wide = _wide(str(tmp_path))
    assert len(wide) == 4 and not any(n.startswith(("tanh", "add", "alias")) for n in wide), wide


def test_half_gelu_tanh_gradients_match_with_the_casts_recomputed(tmp_path):
    w1, w2, fn = _mlp(torch.bfloat16)
    x = torch.randn(ROWS, WIDTH, dtype=torch.bfloat16)
    compiled = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})
    loss, grads = _gradients(compiled, w1, w2, x)
    reference = [w.detach().float().requires_grad_() for w in (w1, w2)]
    ref_fn = lambda x: (_gelu_tanh(x @ reference[0]) @ reference[1]).pow(2).mean()  # noqa: E731
    expected, expected_grads = _gradients(ref_fn, *reference, x.float())
    torch.testing.assert_close(loss, expected, rtol=HALF_RTOL[torch.bfloat16] * 4, atol=1e-3)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got.float(), want, rtol=HALF_RTOL[torch.bfloat16] * 4, atol=2e-3)
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 5})
    wide = _wide(str(tmp_path))
    assert len(wide) == 4 and not any(n.startswith(("tanh", "add", "alias")) for n in wide), wide


def _gelu_tanh_cuda_autocast(x):  # the same under CUDA's autocast: pow in float32, the chain after it too
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x.float(), 3.0))))


def test_a_float32_chain_of_a_half_input_saves_the_half_input(tmp_path):
    """x.float() (the first float32 value of the chain) is saved neither, nor tanh or 0.5 * x:
    all are computed again from the bf16 x, which is saved instead (half x.float()'s bytes)."""
    w1, w2, _ = _mlp(torch.bfloat16)
    fn = lambda x: (_gelu_tanh_cuda_autocast(x @ w1).bfloat16() @ w2).float().pow(2).mean()  # noqa: E731
    x = torch.randn(ROWS, WIDTH, dtype=torch.bfloat16)
    compiled = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path)})
    loss, grads = _gradients(compiled, w1, w2, x)
    expected, expected_grads = _gradients(fn, w1, w2, x)
    torch.testing.assert_close(loss, expected, rtol=HALF_RTOL[torch.bfloat16], atol=1e-3)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got.float(), want.float(), rtol=HALF_RTOL[torch.bfloat16] * 4, atol=2e-3)
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 5})
    saved = {name: t for name, t in _saved(str(tmp_path)).items() if t.endswith(f"[{ROWS}, {WIDTH}]")}
    assert not [t for t in saved.values() if t.startswith("f32")], saved
    assert sorted(saved.values()) == [f"bf16[{ROWS}, {WIDTH}]"] * 4, saved  # x, x @ w1, the output, the product


def test_random_ops_are_never_recomputed():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(4)
    for target, args in ((torch.ops.aten.bernoulli.p, (x, 0.5)), (torch.ops.aten.rand_like.default, (x,)),
                         (torch.ops.aten.native_dropout.default, (x, 0.5, True))):
        node = graph.call_function(target, args)
        node.meta["val"] = torch.empty(4)
        assert not _pointwise(node), target
    tanh = graph.call_function(torch.ops.aten.tanh.default, (x,))
    tanh.meta["val"] = torch.empty(4)
    assert _pointwise(tanh)


def test_save_all_saves_the_intermediates(tmp_path):
    w1, w2, fn = _mlp(torch.float32)
    x = torch.randn(ROWS, WIDTH)
    compiled = torch.compile(fn, backend="mlir", options={"dump_dir": str(tmp_path), "partitioner": "save_all"})
    loss, grads = _gradients(compiled, w1, w2, x)
    expected, expected_grads = _gradients(fn, w1, w2, x)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(grads, expected_grads)
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 5})
    assert len(_wide(str(tmp_path))) > 4
