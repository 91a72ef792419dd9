"""Saved views are taken again in the backward from the tensor they view
(frontend/recomputed_views.py), and an attention backward's gradients are written where the
qkv projection's backward reads them (codegen/cuda/to_gpu.py fold_transposes_of_attention,
codegen/cuda/forwarded_copies.py).

A training step through the fused-attention op the cuda target keeps (attention_call: what
SDPA becomes in a training graph on CUDA tensors), its heads split from one qkv projection. On
CPU tensors the cuda target is compiled, not run (zeros_runtime): what is checked is the host
schedule. tests/test_cuda_attention.py checks such steps' gradients on a GPU."""

import re

import torch
import torch.nn as nn

import dynamo_mlir
from dynamo_mlir.frontend.attention_call import attention_call
from helpers import zeros_runtime
from test_recomputed_pointwise import _saved

B, L, HEADS, DIM = 2, 16, 2, 8
WIDTH = HEADS * DIM


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        q, k, v = self.qkv(x).split(WIDTH, dim=-1)
        q, k, v = (t.view(B, L, HEADS, DIM).transpose(1, 2) for t in (q, k, v))
        return self.out(attention_call(q, k, v).transpose(1, 2).reshape(B, L, WIDTH)).pow(2).mean()


def _train(tmp_path):
    torch.manual_seed(0)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(Heads(), backend="mlir", options=options)(torch.randn(B, L, WIDTH)).backward()
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["partitions_failed"] == 0, dynamo_mlir.explain()
    assert s["library_ops"].get("dynamo_mlir.attention_grad.default") == 1, dynamo_mlir.explain()
    read = lambda kind: "".join(p.read_text() for p in tmp_path.glob(f"*_{kind}_*.host.*"))  # noqa: E731
    return read("forward"), read("backward")


def _call(host: str, op: str) -> list[tuple[str, str]]:
    """(slot, view) of each operand of the host's `op` call."""
    (line,) = [x for x in host.splitlines() if f"torch {op}(" in x]
    return re.findall(r"(%\d+)(\[[^\]]+\])", line)


def test_the_heads_are_views_of_the_projection_in_both_directions(tmp_path):
    forward, backward = _train(tmp_path)
    # The forward: q, k, v read as views of the projection's output (one slot), no copy kernel
    # for them; it saves that output, not three heads.
    q, k, v = _call(forward, "torch.attention")[:3]
    assert q[0] == k[0] == v[0], forward
    assert "permute" not in " ".join(re.findall(r"launch (\w+)", forward)), forward
    saved = list(_saved(str(tmp_path)).values())
    assert any(t in saved for t in (f"f32[{B * L}, {3 * WIDTH}]", f"f32[{B}, {L}, {3 * WIDTH}]")), saved
    assert not any(t.endswith(f"[{B}, {HEADS}, {L}, {DIM}]") for t in saved), saved
    # The backward: attention_grad writes dq, dk, dv into thirds of one buffer, which the
    # projection's weight gradient reads: no transpose or concatenation kernel between them.
    dq, dk, dv = _call(backward, "torch.attention_grad")[-3:]
    assert dq[0] == dk[0] == dv[0], backward
    assert [view.split("+")[1] for _, view in (dq, dk, dv)] == ["0]", f"{WIDTH}]", f"{2 * WIDTH}]"], backward
    kernels = " ".join(re.findall(r"launch (\w+)", backward))
    assert "permute" not in kernels and "cat" not in kernels, backward
