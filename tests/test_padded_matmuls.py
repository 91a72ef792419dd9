"""Half-precision matmuls with an unaligned dim, padded in the graph (frontend/padded_matmuls.py)
and their padded operands written in place (codegen/padded_producers.py).

An AMP language-model head over a 250-token vocabulary (not a multiple of 8, as GPT-2's 50257):
its logits, the logits' gradient and the head weight's gradient are [256, 250], [256, 250] and
[250, 128] products or operands. On CPU tensors the cuda target is compiled but not run
(zeros_runtime): what is checked there is the host schedule; on a GPU, the numbers.
"""

import re

import torch
import torch.nn as nn
import torch.nn.functional as F

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import zeros_runtime, on_gpu

TARGET = get_target("cuda")
VOCAB, TOKENS, WIDTH = 250, 512, 128



class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj, self.head = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):
            return self.head(F.gelu(self.proj(x), approximate="tanh"))


def _loss(model, x, labels):
    return F.cross_entropy(model(x).float(), labels)


def _host(folder, kind: str) -> str:
    return "".join(p.read_text() for p in folder.glob(f"*_{kind}_*.host.*"))


def _matmul_shapes(host: str) -> list[list[str]]:
    return [re.findall(r"%\d+\[([0-9x]+)\|", line) for line in host.splitlines() if "torch linalg.matmul(" in line]


def _train_on_cpu(tmp_path, **options):
    """One training step of the head and its loss (one graph, as a training loop compiles it)."""
    torch.manual_seed(0)
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path), **options}
    model, x, labels = Head(), torch.randn(TOKENS, WIDTH), torch.randint(0, VOCAB, (TOKENS,))
    with zeros_runtime("cuda"):
        torch.compile(lambda x, labels: _loss(model, x, labels), backend="mlir", options=options)(x, labels).backward()
    assert dynamo_mlir.stats()["ops_fallback"] == 0, dynamo_mlir.explain()
    return _host(tmp_path, "forward"), _host(tmp_path, "backward")


def test_the_head_and_its_gradients_run_on_padded_operands_written_in_place(tmp_path):
    forward, backward = _train_on_cpu(tmp_path)
    head = [s for s in _matmul_shapes(forward) if s[-1] == f"{TOKENS}x256"]
    assert head, forward  # the logits' product, 256 wide, read through a [256, 250] slice
    grads = _matmul_shapes(backward)
    assert [f"256x{TOKENS}", f"{TOKENS}x{WIDTH}", f"256x{WIDTH}"] in grads, backward  # d weight (its 256 rows sliced)
    assert [f"{TOKENS}x256", f"256x{WIDTH}", f"{TOKENS}x{WIDTH}"] in grads, backward  # d input
    for shapes in _matmul_shapes(forward) + grads:  # every library product of aligned sizes: no copy at run time
        assert all(int(n) % 8 == 0 for s in shapes for n in s.split("x")), (shapes, forward + backward)
    # The backward takes the padded logits the forward saved, not a [256, 250] copy of them.
    assert f"{TOKENS}x256xbfloat16" in backward.splitlines()[0] and f"{TOKENS}x{VOCAB}xbfloat16" not in backward
    # The logits' gradient: one padded buffer both gradient matmuls read (the second through a
    # transposed view), written by the cross-entropy's backward kernel and a fill of its 6
    # border columns, nothing else (no fill of the whole, no copy into it).
    gradient = re.search(rf"torch linalg\.matmul\((%\d+)\[{TOKENS}x256\|256,1\+0\]", backward)[1]
    writers = [line for line in backward.splitlines() if "launch " in line and line.rstrip().endswith(f"{gradient})")]
    assert len(writers) == 2, writers
    # 8 lanes a thread over the 256 padded columns (a row's last 2 columns lane by lane), not 2.
    kernel = next(line for line in writers if "constant_pad_nd" not in line)
    assert f"grid=({TOKENS * 256 // 8 // 256}, 1, 1) block=(256, 1, 1)" in kernel, kernel
    assert sum(f"{gradient}[256x{TOKENS}|1,256+0]" in line for line in backward.splitlines()) == 1, backward
    assert len(re.findall(r"launch \w*constant_pad_nd", backward)) == 1, backward  # the border fill


def test_off_the_library_pads_at_run_time(tmp_path):
    """cuda_padded_matmuls=False: the graph keeps the 250-wide products (library.py pads per call)."""
    forward, backward = _train_on_cpu(tmp_path, cuda_padded_matmuls=False)
    assert [s for s in _matmul_shapes(forward) if s[-1] == f"{TOKENS}x{VOCAB}"], forward
    assert f"{TOKENS}x{VOCAB}xbfloat16" in backward.splitlines()[0]


@on_gpu
def test_padded_head_matches_eager_on_the_gpu():
    """Loss, gradients and inference logits: at most 3x eager's error against a float64 copy."""
    torch.manual_seed(0)
    model = Head().cuda()
    x, labels = torch.randn(TOKENS, WIDTH, device="cuda"), torch.randint(0, VOCAB, (TOKENS,), device="cuda")
    reference = Head().cuda().double()
    reference.load_state_dict(model.state_dict())

    def step(m, x, loss=_loss):
        m.zero_grad()
        value = loss(m, x, labels)
        value.backward()
        return [value] + [p.grad.clone() for p in m.parameters()]

    compiled_loss = torch.compile(_loss, backend="mlir")  # the step's graph: the gradient padded where it is made
    got = step(model, x, loss=compiled_loss)
    with torch.no_grad():
        got.append(torch.compile(model, backend="mlir")(x))  # the logits returned: a contiguous copy of the slice
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"].get("aten.mm.default", 0) >= 4, dynamo_mlir.explain()
    eager = step(model, x)
    with torch.no_grad():
        eager.append(model(x))
    with torch.autocast("cuda", enabled=False):
        want = [t.double() for t in step(reference, x.double())]
        with torch.no_grad():
            want.append(reference(x.double()))
    for mine, theirs, ref in zip(got, eager, want):
        assert mine.shape == ref.shape
        error = lambda t: (t.double() - ref).pow(2).mean().sqrt().item()  # noqa: E731
        assert error(mine) <= 3 * error(theirs) + 1e-6, (error(mine), error(theirs))
