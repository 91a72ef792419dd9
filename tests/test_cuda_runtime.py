"""cuda target on a GPU: generated kernels and torch.compile(backend="mlir") against eager.
Skips cleanly where there is no CUDA GPU or no cuda-bindings."""

import copy
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch_mlir import ir

import dynamo_mlir
from cuda_models import MODELS
from dynamo_mlir.codegen import resolve, run_stages
from dynamo_mlir.codegen.cuda import runtime as cuda_runtime
from dynamo_mlir.codegen.cuda.runtime import GraphedFunction
from dynamo_mlir.codegen.signature import Signature, TensorSpec
from dynamo_mlir.codegen.target import get_target
from dynamo_mlir.dialects import new_context
from helpers import assert_all_compiled

TARGET = get_target("cuda")
pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not TARGET.available(), reason="needs a CUDA GPU and cuda-bindings")]

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "i64": torch.int64}


def _spec(t) -> TensorSpec:
    t = ir.RankedTensorType(t)
    return TensorSpec(tuple(t.shape), DTYPES[str(t.element_type)])


def compile_model(model: str, mode=None, fuse=True, **kwargs):
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS[model](**kwargs))
        fn = module.body.operations[0]
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        sig = Signature(ir.StringAttr(fn.attributes["sym_name"]).value,
                        tuple(_spec(t) for t in ftype.inputs), tuple(_spec(t) for t in ftype.results))
        options = resolve({"cuda_fuse_rows": fuse}, mode=mode)
        run = run_stages(module, TARGET, options)
        return TARGET.load(run.artifact, sig, run.options), sig


def random_inputs(sig):
    return [torch.randn(s.shape, dtype=s.dtype, device="cuda") for s in sig.inputs]


REFERENCES = {
    "elementwise_chain": lambda x, y: [torch.relu(torch.exp(x) * y + x)],
    "softmax": lambda x: [torch.softmax(x, 1)],
    "layernorm": lambda x, w, b: [F.layer_norm(x, x.shape[-1:], w, b, 1e-5)],
    "mlp": lambda x, w1, b1, w2, b2: (lambda y: [y, y.sum(0)])(torch.relu(x @ w1 + b1) @ w2 + b2),
    "attention_bits": lambda q, k: (lambda s: [s, s.argmax(2), s.bfloat16()])(q @ k.transpose(1, 2)),
}


def assert_close(got, want):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if w.dtype == torch.int64:
            assert torch.equal(g, w)
        else:
            torch.testing.assert_close(g.float(), w.float(), rtol=2e-2 if w.dtype == torch.bfloat16 else 1e-4,
                                       atol=1e-2 if w.dtype == torch.bfloat16 else 1e-4)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_model_matches_eager(model):
    torch.backends.cuda.matmul.allow_tf32 = False
    fn, sig = compile_model(model)
    inputs = random_inputs(sig)
    assert_close(fn(*inputs), REFERENCES[model](*inputs))
    inputs = random_inputs(sig)  # fresh inputs: the same kernels compute the same function
    assert_close(fn(*inputs), REFERENCES[model](*inputs))


@pytest.mark.parametrize("shape", [(3, 1000), (128, 4096), (7, 33)])
def test_softmax_odd_shapes(shape):
    fn, sig = compile_model("softmax", r=shape[0], c=shape[1])
    (x,) = random_inputs(sig)
    assert_close(fn(x), [torch.softmax(x, 1)])


def test_bf16_elementwise():
    fn, sig = compile_model("elementwise_chain", n=4096 + 8, dt="bf16")
    x, y = random_inputs(sig)
    assert_close(fn(x, y), [torch.relu(torch.exp(x) * y + x)])


def test_non_contiguous_and_misaligned_inputs():
    fn, sig = compile_model("elementwise_chain", n=1024)
    big = torch.randn(2, 1025, device="cuda")
    x, y = big[0, 1:], big[1, :1024]  # x starts 4 bytes past a 16-byte boundary
    assert_close(fn(x, y), REFERENCES["elementwise_chain"](x, y))


def test_reduce_overhead_graph_replay():
    fn, sig = compile_model("layernorm")
    fn = GraphedFunction(fn)  # load() graphs only schedules of MIN_GRAPHED_LAUNCHES or more
    for _ in range(3):
        inputs = random_inputs(sig)
        assert_close(fn(*inputs), REFERENCES["layernorm"](*inputs))


def test_reduce_overhead_outputs_held_by_the_caller_stay_valid():
    fn, sig = compile_model("layernorm")
    fn = GraphedFunction(fn)
    calls = [random_inputs(sig) for _ in range(6)]
    held = [fn(*inputs) for inputs in calls]  # every output kept: no replay may overwrite one
    for inputs, got in zip(calls, held):
        assert_close(got, REFERENCES["layernorm"](*inputs))
    view = fn(*calls[0])[0][1:]  # only a view of the output is kept
    want = REFERENCES["layernorm"](*calls[0])[0][1:].clone()
    fn(*calls[1])
    torch.testing.assert_close(view, want)


def test_reduce_overhead_torch_compile_reads_parameters_in_place_and_runs_on_a_second_stream():
    torch.manual_seed(0)
    dynamo_mlir.reset()
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256)).cuda()  # a schedule long enough to be graphed
    compiled = torch.compile(model, backend="mlir", mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(64, 256, device="cuda")  # a new address each call
            torch.testing.assert_close(compiled(x), model(x))
        model[0].weight.mul_(2.0)  # a parameter changed in place: the replay must see it
        x = torch.randn(64, 256, device="cuda")
        torch.testing.assert_close(compiled(x), model(x))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            got = compiled(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.testing.assert_close(got, model(x))
    assert_all_compiled(min_ops=2, library={"aten.mm.default": 2})


def test_default_mode_replays_cuda_graphs_and_outputs_held_by_the_caller_stay_valid(monkeypatch):
    """cuda_graphs_in_default_mode: the default mode replays a static region's schedule too.
    The first call runs uncaptured. A replay whose outputs the caller holds is not reused; the
    outputs callers keep are learnt and returned as clones from then on, so one more replay
    serves every later call."""
    replays, captured = [], []
    replay = torch.cuda.CUDAGraph.replay
    monkeypatch.setattr(torch.cuda.CUDAGraph, "replay", lambda graph: (replays.append(graph), replay(graph))[1])

    class Counted(cuda_runtime._Replay):
        def __init__(self, *args):
            captured.append(self)
            super().__init__(*args)

    monkeypatch.setattr(cuda_runtime, "_Replay", Counted)
    torch.manual_seed(0)
    dynamo_mlir.reset()
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256)).cuda()
    compiled = torch.compile(model, backend="mlir")
    with torch.no_grad():
        xs = [torch.randn(64, 256, device="cuda") for _ in range(6)]
        held = [compiled(x) for x in xs]  # every output kept
        for x, got in zip(xs, held):
            torch.testing.assert_close(got, model(x))
        assert len(replays) == len(xs) - 1 and len(captured) == 2  # every call but the first replayed; one learnt to clone
        assert held[1].data_ptr() != held[2].data_ptr()  # clones, not the replay's buffer twice
        del held, got
        for x in xs:  # outputs dropped each time: replays are reused
            torch.testing.assert_close(compiled(x), model(x))
    assert len(replays) == 2 * len(xs) - 1 and len(captured) == 2
    assert_all_compiled(min_ops=2, library={"aten.mm.default": 2})


class _Block(torch.nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)))).softmax(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_compile_block_forward_backward(dtype):
    torch.manual_seed(0)
    model = _Block().cuda().to(dtype)
    compiled = torch.compile(model, backend="mlir", options={"strict": True})
    x = torch.randn(8, 16, 64, device="cuda", dtype=dtype, requires_grad=True)
    want = model(x)
    got = compiled(x)
    assert_close([got], [want])
    got.float().square().sum().backward()
    g_compiled = x.grad.clone()
    x.grad = None
    want.float().square().sum().backward()
    tol = 5e-2 if dtype == torch.bfloat16 else 1e-3
    torch.testing.assert_close(g_compiled.float(), x.grad.float(), rtol=tol, atol=tol)
    # fc1, fc2: forward 2, backward 4; fc1's bias add in its epilogue (torch.addmm: the sum is
    # saved for GELU's backward; in bfloat16 with the add's two casts, the half product summed in
    # float32 and rounded once), fc2's fused with the softmax after it
    bias = {"aten.add.Tensor": 1} | ({} if dtype == torch.float32 else {"aten._to_copy.default": 2})
    assert_all_compiled(min_ops=10, library={"aten.mm.default": 6, **bias})


REFERENCES["log_softmax"] = lambda x: [torch.log_softmax(x, 1)]
REFERENCES["rmsnorm"] = lambda x, w: [x * torch.rsqrt(x.square().mean(1, keepdim=True) + 1e-6) * w]


@pytest.mark.parametrize("shape", [(3, 1000), (7, 33), (5, 100), (64, 4096), (2, 16384), (2, 1 << 16)])
@pytest.mark.parametrize("model", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
def test_fused_row_chains_match_eager(model, shape):
    """Fused rows (ragged last chunk, one warp to 1024 threads) and, past the register limit
    (2 x 65536), the unfused kernels."""
    fn, sig = compile_model(model, r=shape[0], c=shape[1])
    for _ in range(2):
        inputs = random_inputs(sig)
        assert_close(fn(*inputs), REFERENCES[model](*inputs))


@pytest.fixture
def replay_reads(monkeypatch):
    """Per replay captured: (its inputs that were replay outputs, those it reads in place); and
    how many replay outputs were copied into a replay's buffers (counts only: a reference kept
    here would make their replay find them held)."""
    seen = SimpleNamespace(captures=[], copied=0)
    copy_into = cuda_runtime._copy_into

    def counting(destinations, sources):
        seen.copied += sum(cuda_runtime._is_replay_output(t) for t in sources)
        copy_into(destinations, sources)

    class Counted(cuda_runtime._Replay):
        def __init__(self, fn, inputs, in_place):
            outputs = [cuda_runtime._is_replay_output(t) for t in inputs]
            seen.captures.append((sum(outputs), sum(o and p for o, p in zip(outputs, in_place))))
            super().__init__(fn, inputs, in_place)

    monkeypatch.setattr(cuda_runtime, "_copy_into", counting)
    monkeypatch.setattr(cuda_runtime, "_Replay", Counted)
    return seen


def _close(got, want, rtol=1e-4, atol=1e-5):
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


def test_training_step_backward_reads_the_forwards_activations_where_they_live(replay_reads):
    """zero_grad, forward, loss, backward, AdamW step: a forward, a backward and an optimizer
    graph, each replayed. The backward's saved activations are the forward replay's outputs: it
    reads them in place, and no replay copies another's output."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = _Block().cuda()
    ref = copy.deepcopy(model)
    opt, ref_opt = (torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, ref))

    def step(m, o, x, y):
        o.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    compiled = torch.compile(step, backend="mlir")
    for _ in range(4):
        captured = len(replay_reads.captures)
        x, y = torch.randn(8, 16, 64, device="cuda"), torch.randn(8, 16, 64, device="cuda")
        _close(compiled(model, opt, x, y), step(ref, ref_opt, x, y))
        for p, q in zip(model.parameters(), ref.parameters()):
            _close(p.grad, q.grad, rtol=1e-3, atol=1e-7)  # gradients of about 1e-4
            _close(p, q)
    assert len(replay_reads.captures) == captured  # the last step replayed graphs it had
    assert dynamo_mlir.stats()["graphs_by_kind"] == {"forward": 1, "backward": 1, "inference": 1}
    assert replay_reads.copied == 0
    assert all(outputs == read for outputs, read in replay_reads.captures), replay_reads.captures
    assert max(read for _, read in replay_reads.captures) >= 3  # the backward's saved activations


def test_two_forwards_then_their_backwards_match_eager(replay_reads):
    """Two losses accumulated into the gradients, their backwards in either order: the second
    forward replays into other buffers while the first's activations are held, and each backward
    reads its own forward's."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = _Block().cuda()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="mlir")
    for step in range(4):
        xs = [torch.randn(8, 16, 64, device="cuda") for _ in range(2)]
        losses = [compiled(x).square().mean() for x in xs]
        ref_losses = [ref(x).square().mean() for x in xs]
        _close(losses, ref_losses)
        for i in ([1, 0] if step % 2 else [0, 1]):
            losses[i].backward()
            ref_losses[i].backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            _close(p.grad, q.grad, rtol=1e-3, atol=1e-7)  # gradients of about 1e-4
        model.zero_grad()
        ref.zero_grad()
    assert replay_reads.copied == 0
    assert all(outputs == read for outputs, read in replay_reads.captures), replay_reads.captures
    assert max(read for _, read in replay_reads.captures) >= 3  # the first forward's activations, once
