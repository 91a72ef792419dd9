"""Reductions over too few outputs to fill a GPU one thread each run as `split` kernels
(codegen/gpu/kernels.py): each output's terms shared by the threads of a block, their partials
combined in shared memory. A bias gradient (a column sum) is the common case.

On CPU tensors the cuda target is compiled but not run (zeros_runtime): what is checked there is
which kernels the host schedule launches; on a GPU, the numbers against eager, the inputs
unchanged, and that the split kernels ran.
"""

import re

import torch

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import assert_all_compiled, zeros_runtime, on_gpu

TARGET = get_target("cuda")



def column_reductions(x, y, i):
    """A bf16 bias gradient's column sum in float32, a column max over 1000 x 300 (300 columns:
    the last block of 32 only partly used), an int32 column sum, two sums of one input, an argmax
    (no combiner for partials: it stays one thread per column), the bf16 sum rounded to bf16."""
    return (x.float().sum(0), y.amax(0), i.sum(0, dtype=torch.int32), (y * y).sum(0) + y.sum(0), y.argmax(0),
            x.sum(0))


def _inputs(device="cpu"):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, 768, generator=g).bfloat16()
    y = torch.randn(1000, 300, generator=g)
    i = torch.randint(-5, 5, (2000, 40), generator=g, dtype=torch.int32)
    return x.to(device), y.to(device), i.to(device)


def _launches(folder, graphs: str = "*") -> list[tuple[str, int, int]]:
    """(kernel, grid, block) of every launch in the host schedules (of the graphs matching `graphs`)."""
    host = "".join(p.read_text() for p in folder.glob(f"{graphs}.host.txt"))
    return [(k, int(g), int(b)) for k, g, b in re.findall(r"launch (\w+) grid=\((\d+), 1, 1\) block=\((\d+), 1, 1\)", host)]


def _layer_norm_step(device, folder, target_on_cpu=False):
    """A layer norm's training step compiled; (its weight and bias gradients, eager's)."""
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(768, device=device)
    torch.nn.init.normal_(ln.weight)
    torch.nn.init.normal_(ln.bias)
    ref = torch.nn.LayerNorm(768, device=device)
    ref.load_state_dict(ln.state_dict())
    x = torch.randn(8, 512, 768, device=device)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(folder)}
    torch.compile(lambda x: ln(x).square().mean(), backend="mlir", options=options)(x).backward()
    ref(x).square().mean().backward()
    return (ln.weight.grad, ln.bias.grad), (ref.weight.grad, ref.bias.grad)


def test_column_sums_are_split_on_cpu(tmp_path):
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(column_reductions, backend="mlir", options=options)(*_inputs())
    assert_all_compiled(min_ops=8)
    launches = _launches(tmp_path)
    split = [(g, b) for k, g, b in launches if k.startswith("split_")]
    # the bf16 gradient's 64-row blocks: 64 x 768 (block, column) points, 8 threads each, 32 a block
    assert (64 * 768 // 32, 256) in split, launches
    # y's two sums (of y * y and of y) read y alike: one split kernel with two results, over
    # 20 blocks of 50 rows x 300 columns (6000 points, 32 a block: 188 blocks)
    assert (188, 256) in split and len(split) == 2, launches
    assert any(k.startswith("serial_argmax") for k, _, _ in launches), launches


def test_layer_norm_weight_and_bias_gradients_are_one_kernel_on_cpu(tmp_path):
    """cuda-fuse-sibling-column-sums: the weight and bias gradients' column sums read the output
    gradient once, in one split kernel with two results, then one row kernel for both."""
    with zeros_runtime("cuda"):
        _layer_norm_step("cpu", tmp_path)
    backward = _launches(tmp_path, "*backward*")
    assert [k for k, _, _ in backward if k.startswith("split_")] == ["split_sum"], backward
    assert len(backward) == 3, backward  # the input gradient's row kernel, the two stages


@on_gpu
def test_layer_norm_weight_and_bias_gradients_match_eager(tmp_path):
    (w, b), (w_ref, b_ref) = _layer_norm_step("cuda", tmp_path)
    assert [k for k, _, _ in _launches(tmp_path, "*backward*") if k.startswith("split_")] == ["split_sum"]
    torch.testing.assert_close(w, w_ref, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(b, b_ref, rtol=1e-4, atol=1e-6)


@on_gpu
def test_split_reductions_match_eager(tmp_path):
    inputs = _inputs("cuda")
    before = [t.clone() for t in inputs]
    want = column_reductions(*inputs)
    got = torch.compile(column_reductions, backend="mlir", options={"target": "cuda", "dump_dir": str(tmp_path)})(*inputs)
    assert_all_compiled(min_ops=8)
    assert sum(k.startswith("split_") for k, _, _ in _launches(tmp_path)) == 2
    for t, b in zip(inputs, before):
        assert torch.equal(t, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.is_floating_point():
            # a bf16 result may round the other way from a float32 sum summed in another order: 1 ulp
            torch.testing.assert_close(g.float(), w.float(), rtol=1e-2 if w.dtype == torch.bfloat16 else 1e-4, atol=1e-3)
        else:
            assert torch.equal(g, w)


@on_gpu
def test_linear_bias_gradient_matches_eager(tmp_path):
    """A linear layer's bias gradient through the split column sum, at a size where the last
    block of points is partial (1000 columns) and the rows are a batch x sequence."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 1000, device="cuda")
    x = torch.randn(8, 500, 256, device="cuda")
    ref = torch.nn.Linear(256, 1000, device="cuda")
    ref.load_state_dict(lin.state_dict())
    options = {"target": "cuda", "dump_dir": str(tmp_path)}
    torch.compile(lambda x: lin(x).square().mean(), backend="mlir", options=options)(x).backward()
    ref(x).square().mean().backward()
    torch.testing.assert_close(lin.bias.grad, ref.bias.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad, rtol=1e-3, atol=1e-5)
    assert dynamo_mlir.stats()["ops_fallback"] == 0, dynamo_mlir.explain()
    assert any(k.startswith("split_sum") for k, _, _ in _launches(tmp_path))
