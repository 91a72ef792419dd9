"""CUDA differences from issue 22, measured: where do they come from?

    python benchmarks/cuda_trust_checks.py        (needs a CUDA GPU)

1. `F.conv_transpose3d` float32: every OpInfo sample, compiled against eager (cuDNN with TF32,
   torch's default for convolutions), eager with TF32 off, and a float64 reference.
2. `aten._flash_attention_forward` (half types, no dropout): what its third output, rng_state,
   holds in eager over repeated calls, and what the compiled call returns.
3. ResNet-50's layout (tests/real_models.py), one training step: every gradient's RMSE against
   a float64 copy, compiled and eager, and eager again with other kernels (cuDNN's
   deterministic algorithms; channels_last; the convolutions' backward as forward convolutions,
   as frontend/aten/conv.py imports it): how far apart two correct float32 runs are.
4. `F.batch_norm(training=False)` with no weight: the bias's gradient on cpu and cuda.
5. Why the ResNet-50 step's last-block gradients were up to 96x eager's error: the model cut in
   two (resnet50_split), the front's pieces compiled one at a time (resnet50_front_parts), the
   back traced module by module (resnet50_back_trace: one ReLU input flips sign), and correct
   float32 variants judged by the same rule (resnet50_variants). DEVICE=cpu runs them on the CPU.

    python benchmarks/cuda_trust_checks.py resnet50_training_grads   (one check by name)
"""

import copy
import os
import sys


import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import dynamo_mlir


def _err(a, b) -> float:
    return (a.double() - b.double()).abs().max().item()


def conv_transpose3d() -> None:
    op = next(o for o in op_db if o.name == "nn.functional.conv_transpose3d")
    print("conv_transpose3d float32: max |x - float64| per sample")
    print("sample | compiled | eager (tf32 on) | eager (tf32 off) | compiled vs eager")
    for i, s in enumerate(op.sample_inputs("cuda", torch.float32)):
        fn = lambda x, *a: F.conv_transpose3d(x, *a, **s.kwargs)
        args = [s.input, *s.args]
        ref = F.conv_transpose3d(*[a.double() if isinstance(a, torch.Tensor) else a for a in args], **s.kwargs)
        eager = fn(*args)  # torch's default: cuDNN may use TF32 for float32 convolutions
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            eager32 = fn(*args)
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="mlir")(*args)
        print(f"{i} | {_err(compiled, ref):.2e} | {_err(eager, ref):.2e} | {_err(eager32, ref):.2e} | "
              f"{_err(compiled, eager):.2e}")
    print("stats of the last:", dynamo_mlir.stats()["library_ops"], dynamo_mlir.stats()["compiled_ops"])


def flash_rng_state() -> None:
    q = torch.randn(1, 64, 2, 32, device="cuda", dtype=torch.float16)
    call = lambda q: torch.ops.aten._flash_attention_forward(q, q, q, None, None, 64, 64, 0.0, False, False)
    print("flash attention forward, dropout 0: rng_state (output 2) of consecutive eager calls")
    for _ in range(3):
        print("  eager   ", call(q)[2].tolist())
    torch._dynamo.reset()
    compiled = torch.compile(call, backend="mlir")
    for _ in range(2):
        print("  compiled", compiled(q)[2].tolist())
    print("  explain:", dynamo_mlir.stats()["compiled_ops"], dynamo_mlir.stats()["fallback_ops"])


def _step(model, inputs, target, case, compiled: bool, options=None):
    model.train()
    loss = lambda: case.loss(model(**inputs) if case.output is None else getattr(model(**inputs), case.output), target)
    (torch.compile(loss, backend="mlir", options=options) if compiled else loss)().backward()
    return {n: p.grad for n, p in model.named_parameters()}


def _rmse(a, b) -> float:
    return (a.double() - b.double()).pow(2).mean().sqrt().item()


def _resnet50(device: str):
    """tests/real_models.py's ResNet-50 layout on `device`: (case, model, inputs, target), the
    model and batch seeded as the test seeds them."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from real_models import FLOAT64_CASES

    case = FLOAT64_CASES["resnet50"]
    torch.manual_seed(0)
    model = case.build(None).to(device)
    inputs, target = case.batch(torch.Generator().manual_seed(0))
    return case, model, {k: v.to(device) for k, v in inputs.items()}, target.to(device)


def _resnet50_training(device: str):
    """_resnet50 in training mode with TF32 matmuls off: (model, images, target)."""
    _, base, inputs, target = _resnet50(device)
    base.train()
    torch.backends.cuda.matmul.allow_tf32 = False
    return base, inputs["pixel_values"], target


def _widened(inputs: dict) -> dict:
    return {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}


class _ConvWithForwardConvBackward(torch.autograd.Function):
    """F.conv2d (groups=1) whose backward is what frontend/aten/conv.py imports: the input
    gradient a forward convolution of the stride-dilated, padded output gradient with the
    flipped, transposed weight; the weight gradient a forward convolution of the input by the
    output gradient with batch and channels swapped. Eager with it shows how far that choice of
    convolutions alone moves the gradients' rounding from eager's convolution_backward."""

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation):
        ctx.save_for_backward(x, w)
        ctx.conf, ctx.no_bias = (stride, padding, dilation), b is None
        return F.conv2d(x, w, b, stride, padding, dilation)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        (sh, sw), (ph, pw), (dh, dw) = ctx.conf
        kh, kw = w.shape[2:]
        up = g.new_zeros(g.shape[0], g.shape[1], (g.shape[2] - 1) * sh + 1, (g.shape[3] - 1) * sw + 1)
        up[:, :, ::sh, ::sw] = g
        qh, qw = dh * (kh - 1) - ph, dw * (kw - 1) - pw
        extra_h = x.shape[2] - ((up.shape[2] + 2 * qh) - dh * (kh - 1))
        extra_w = x.shape[3] - ((up.shape[3] + 2 * qw) - dw * (kw - 1))
        up = F.pad(up, (qw, qw + extra_w, qh, qh + extra_h))
        gx = F.conv2d(up, w.transpose(0, 1).flip(2, 3), dilation=(dh, dw))
        gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1), stride=(dh, dw), padding=(ph, pw), dilation=(sh, sw))
        gw = gw[:, :, :kh, :kw].transpose(0, 1)
        return gx, gw, None if ctx.no_bias else g.sum((0, 2, 3)), None, None, None


def _forward_conv_backward(model):
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d) and m.groups == 1:
            m.forward = lambda x, m=m: _ConvWithForwardConvBackward.apply(x, m.weight, m.bias, m.stride, m.padding, m.dilation)
    return model


def resnet50_training_grads(threshold: float = 1.5, device: str = os.environ.get("DEVICE", "cuda")) -> None:
    case, base, inputs, target = _resnet50(device)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        torch.backends.cuda.matmul.allow_tf32 = False
        exact = _step(copy.deepcopy(base).double(), _widened(inputs), target, case, False)
        eager = _step(copy.deepcopy(base), inputs, target, case, False)
        torch._dynamo.reset()
        got = _step(copy.deepcopy(base), inputs, target, case, True)
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False, deterministic=True):
            det = _step(copy.deepcopy(base), inputs, target, case, False)
        fwd = _step(_forward_conv_backward(copy.deepcopy(base)), inputs, target, case, False)
        cl = copy.deepcopy(base).to(memory_format=torch.channels_last)
        nhwc = _step(cl, {k: v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v
                          for k, v in inputs.items()}, target, case, False)
    print(f"resnet50 training step: gradients whose RMSE vs float64 is over {threshold}x eager's")
    print("parameter | numel | compiled | eager | eager deterministic | eager channels_last | "
          "eager, backward as forward convolutions | compiled/eager")
    worst = {"compiled": 0.0, "deterministic": 0.0, "channels_last": 0.0, "forward_conv_backward": 0.0}
    for name, r in exact.items():
        e = _rmse(eager[name], r) or 1e-30
        ratios = {"compiled": _rmse(got[name], r) / e, "deterministic": _rmse(det[name], r) / e,
                  "channels_last": _rmse(nhwc[name], r) / e, "forward_conv_backward": _rmse(fwd[name], r) / e}
        worst = {k: max(worst[k], v) for k, v in ratios.items()}
        if max(ratios.values()) > threshold:
            print(f"{name} | {r.numel()} | {_rmse(got[name], r):.3g} | {e:.3g} | {_rmse(det[name], r):.3g} | "
                  f"{_rmse(nhwc[name], r):.3g} | {_rmse(fwd[name], r):.3g} | {ratios['compiled']:.2f}")
    print("largest ratio to eager's error over all gradients:", {k: round(v, 2) for k, v in worst.items()})


def _tail_grads(tail, x, target) -> dict:
    """The gradients (input's and parameters') of cross-entropy through `tail` on features `x`,
    by kind: float64, eager float32, compiled float32."""
    grads = {}
    for kind, dtype, compiled in [("float64", torch.float64, False), ("eager", torch.float32, False),
                                  ("compiled", torch.float32, True)]:
        torch._dynamo.reset()
        mod, xin = copy.deepcopy(tail).to(dtype), x.to(dtype).clone().requires_grad_()
        loss = lambda: F.cross_entropy(mod(xin), target)  # noqa: E731
        (torch.compile(loss, backend="mlir") if compiled else loss)().backward()
        grads[kind] = {"input": xin.grad, **{n: p.grad for n, p in mod.named_parameters()}}
    return grads


def resnet50_tail(device: str = os.environ.get("DEVICE", "cuda")) -> None:
    """Where the last block's gradients lose accuracy: the model's tail (its last bottleneck,
    the pooler, the classifier and the loss) compiled alone on features eager computed, and the
    head without the block; each gradient's RMSE against float64, compiled and eager."""
    _, model, inputs, target = _resnet50(device)
    model.train()
    stages = model.resnet.encoder.stages
    with torch.no_grad():
        h = model.resnet.embedder(inputs["pixel_values"])
        for layer in [l for st in stages[:3] for l in st.layers] + list(stages[3].layers[:2]):
            h = layer(h)
    block, head = stages[3].layers[2], torch.nn.Sequential(model.resnet.pooler, torch.nn.Flatten(1), model.classifier)
    for name, tail, x in [("head", head, block(h).detach()), ("block + head", torch.nn.Sequential(block, head), h)]:
        grads = _tail_grads(tail, x, target)
        print(f"{name}: gradient | eager RMSE | compiled RMSE | ratio")
        for k, r in grads["float64"].items():
            e, c = _rmse(grads["eager"][k], r), _rmse(grads["compiled"][k], r)
            print(f"  {k} | {e:.3g} | {c:.3g} | {c / (e or 1e-30):.2f}")


def resnet50_stage_tails(device: str = os.environ.get("DEVICE", "cuda")) -> None:
    """Which part of the model the wrong gradients need: the last stage (and the last two) with
    the head compiled alone on features eager computed, TF32 off: the gradients whose RMSE
    against float64 is over 5x eager's (rounding stays near 1-2x), and how many elements are
    10x farther than eager's."""
    _, model, inputs, target = _resnet50(device)
    model.train()
    stages = model.resnet.encoder.stages
    head = torch.nn.Sequential(model.resnet.pooler, torch.nn.Flatten(1), model.classifier)
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for first in (3, 2):
            with torch.no_grad():
                h = model.resnet.embedder(inputs["pixel_values"])
                for st in stages[:first]:
                    h = st(h)
            tail = torch.nn.Sequential(*stages[first:], head)
            grads = _tail_grads(tail, h, target)
            bad = []
            for k, r in grads["float64"].items():
                e, c = grads["eager"][k].double(), grads["compiled"][k].double()
                far = int(((c - r).abs() > 10 * (e - r).abs() + 1e-9).sum())
                if _rmse(c, r) > 5 * _rmse(e, r):
                    bad.append(f"{k}: {far} of {r.numel()} (RMSE {_rmse(c, r):.3g}, eager's {_rmse(e, r):.3g})")
            print(f"stages {first}.. + head, compiled alone: {len(bad)} gradients with RMSE over 5x eager's"
                  + "".join(f"\n  {b}" for b in bad[:12]))


def resnet50_split(device: str = os.environ.get("DEVICE", "cuda"),
                   name: str = "resnet.encoder.stages.3.layers.2.layer.1.normalization.bias") -> None:
    """The model cut in two after stage 1, each half compiled on its own or run eagerly: which
    half the wrong last-block gradient needs. Per split, the channels of `name`'s gradient 10x
    farther from float64 than eager's, and the gradient's RMSE against eager's."""
    base, x, target = _resnet50_training(device)

    def run(model, dtype, front_compiled, back_compiled):
        model = copy.deepcopy(model).to(dtype)
        stages = model.resnet.encoder.stages
        front = torch.nn.Sequential(model.resnet.embedder, stages[0], stages[1])
        back = torch.nn.Sequential(stages[2], stages[3], model.resnet.pooler, torch.nn.Flatten(1), model.classifier)
        torch._dynamo.reset()
        if front_compiled == "whole":  # one graph, as the test compiles it
            torch.compile(lambda: F.cross_entropy(back(front(x.to(dtype))), target), backend="mlir")().backward()
        else:
            f = torch.compile(front, backend="mlir") if front_compiled else front
            b = torch.compile(back, backend="mlir") if back_compiled else back
            F.cross_entropy(b(f(x.to(dtype))), target).backward()
        return dict(model.named_parameters())[name].grad.double()

    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        r, e = run(base, torch.float64, False, False), run(base, torch.float32, False, False)
        for front_c, back_c in (("whole", "whole"), (True, True), (True, False), (False, True)):
            c = run(base, torch.float32, front_c, back_c)
            far = int(((c - r).abs() > 10 * (e - r).abs() + 1e-9).sum())
            label = lambda v: "in one graph" if v == "whole" else "compiled" if v else "eager"  # noqa: E731
            print(f"front {label(front_c)}, back {label(back_c)}: "
                  f"{far} of {r.numel()} channels far; RMSE vs float64 {_rmse(c, r):.3g} (eager's {_rmse(e, r):.3g})")


def _front_and_back(model):
    """The model cut after stage 1: the front's eight pieces (stem, 3 + 4 bottlenecks) and the back."""
    stages = model.resnet.encoder.stages
    pieces = [model.resnet.embedder, *stages[0].layers, *stages[1].layers]
    return pieces, torch.nn.Sequential(stages[2], stages[3], model.resnet.pooler, torch.nn.Flatten(1), model.classifier)


def _through_front(pieces, h, compiled_piece):
    """The front's output, the piece numbered `compiled_piece` compiled, the others eager."""
    torch._dynamo.reset()
    for i, piece in enumerate(pieces):
        h = (torch.compile(piece, backend="mlir") if i == compiled_piece else piece)(h)
    return h


def resnet50_front_parts(device: str = os.environ.get("DEVICE", "cuda"),
                         name: str = "resnet.encoder.stages.3.layers.2.layer.1.normalization.bias") -> None:
    """The front half (embedder, stages 0 and 1) as eight pieces, one compiled at a time, the rest
    eager: which piece's forward moves the front's output (RMSE against float64, eager's beside
    it) and how many channels of `name`'s gradient end 10x farther from float64 than eager's."""
    base, x, target = _resnet50_training(device)

    def run(dtype, compiled_piece=None):
        model = copy.deepcopy(base).to(dtype)
        pieces, back = _front_and_back(model)
        h = _through_front(pieces, x.to(dtype), compiled_piece)
        F.cross_entropy(back(h), target).backward()
        return h.detach().double(), dict(model.named_parameters())[name].grad.double()

    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        (hr, r), (he, e) = run(torch.float64), run(torch.float32)
        print(f"all eager: front output RMSE vs float64 {_rmse(he, hr):.3g}")
        for i in range(8):
            hc, c = run(torch.float32, i)
            far = int(((c - r).abs() > 10 * (e - r).abs() + 1e-9).sum())
            print(f"piece {i} compiled: front output RMSE {_rmse(hc, hr):.3g}, max {(hc - hr).abs().max().item():.3g} "
                  f"(eager's {(he - hr).abs().max().item():.3g}); {far} of {r.numel()} channels far")


def resnet50_back_trace(device: str = os.environ.get("DEVICE", "cuda"), piece: int = 0,
                        name: str = "resnet.encoder.stages.3.layers.2.layer.1.normalization") -> None:
    """With one front piece compiled (resnet50_front_parts) and the rest eager: every module of
    the back half whose output, or output gradient, is over 5x eager's RMSE against float64, in
    the order they ran; and, for `name`'s far channels, the variance of its input in float64."""
    base, x, target = _resnet50_training(device)

    def run(dtype, compiled_piece=None):
        model = copy.deepcopy(base).to(dtype)
        pieces, back = _front_and_back(model)
        seen, grads, live = {}, {}, {}

        def record(n, i, o):  # a hook returning None keeps the module's output
            seen.setdefault(n, (i.detach().double(), o.detach().double()))
            live.setdefault(n, (o, o._version))
            if o.requires_grad:
                o.register_hook(lambda g: (grads.setdefault(n, g.detach().double()), None)[1])
        for n, m in model.named_modules():
            if not list(m.children()) and n.startswith(("resnet.encoder.stages.2", "resnet.encoder.stages.3")):
                m.register_forward_hook(lambda m, i, o, n=n: record(n, i[0], o))
        F.cross_entropy(back(_through_front(pieces, x.to(dtype), compiled_piece)), target).backward()
        bias = dict(model.named_parameters())[name + ".bias"].grad.double()
        if x.is_cuda:
            torch.cuda.synchronize()
        changed = [f"{n} ({(o.double() - seen[n][1]).abs().max().item():.3g})" for n, (o, v) in live.items()
                   if o._version == v and not torch.equal(o.double(), seen[n][1])]
        print(f"  {dtype} piece {compiled_piece}: outputs changed after their module ran, with no in-place op: "
              f"{len(changed)} {changed[:6]}")
        return seen, grads, bias

    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        (fr, gr, br), (fe, ge, be), (fc, gc, bc) = run(torch.float64), run(torch.float32), run(torch.float32, piece)
    print(f"piece {piece} compiled: back modules over 5x eager's RMSE (forward output, then output gradient)")
    for kind, r, e, c in (("out", fr, fe, fc), ("grad", gr, ge, gc)):
        shown = 0
        for n in r:
            ro = r[n][1] if kind == "out" else r[n]
            eo = e[n][1] if kind == "out" else e[n]
            co = c[n][1] if kind == "out" else c[n]
            ratio = _rmse(co, ro) / (_rmse(eo, ro) or 1e-30)
            if ratio > 5 and shown < 12:
                shown += 1
                print(f"  {kind} {n}: {ratio:.1f}x (compiled {_rmse(co, ro):.3g}, eager {_rmse(eo, ro):.3g})")
    act = name.rsplit(".", 1)[0] + ".activation"
    for label, f in (("eager", fe), ("compiled", fc)):
        flips = ((f[act][1] > 0) != (fr[act][1] > 0))
        print(f"{act}: {label} ReLU mask differs from float64's at {int(flips.sum())} elements; their float64 "
              f"inputs {fr[act][0][flips].tolist()[:5]}")
    far = ((bc - br).abs() > 10 * (be - br).abs() + 1e-9).nonzero().flatten()
    var = fr[name][0].var(dim=(0, 2, 3), unbiased=False)
    print(f"{name}: {far.numel()} far channels; input variance median {var.median().item():.3g}, "
          f"far channels' {var[far].tolist()[:8] if far.numel() else []}; smallest {var.sort().values[:5].tolist()}")
    print("  far channels' float64 / eager / compiled bias grads:",
          [(round(br[k].item(), 6), round(be[k].item(), 6), round(bc[k].item(), 6)) for k in far.tolist()[:6]])


def resnet50_variants(device: str = os.environ.get("DEVICE", "cuda")) -> None:
    """How far apart correct float32 training steps of the test's ResNet-50 are: eager with other
    kernels (cuDNN benchmark-chosen algorithms, deterministic ones, channels_last, the CPU's) and
    the compiled step, each judged as the test judges the compiled one (torch._dynamo.utils.same
    against eager and float64, tol 1e-4 and 1e-3): gradients failing, the largest RMSE ratio to
    eager's, and ReLU outputs whose sign differs from float64's."""
    from torch._dynamo.utils import same

    case, base, inputs, target = _resnet50(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    cl = lambda d: {k: v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v for k, v in d.items()}  # noqa: E731

    def step(dtype=torch.float32, where=device, compiled=False, channels_last=False, **flags):
        model = copy.deepcopy(base).to(device=where, dtype=dtype)
        batch = {k: v.to(where, dtype) if v.is_floating_point() else v.to(where) for k, v in inputs.items()}
        if channels_last:
            model, batch = model.to(memory_format=torch.channels_last), cl(batch)
        relus = []
        for n, m in model.named_modules():
            if n.endswith("activation") and isinstance(m, torch.nn.ReLU):
                m.register_forward_hook(lambda m, i, o: relus.append(i[0].detach().flatten().double().cpu()) and None)
        torch._dynamo.reset()
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False, **flags):
            _step(model, batch, target.to(where), case, compiled)
        return {n: p.grad.to(device) for n, p in model.named_parameters()}, torch.cat(relus)

    exact, act64 = step(torch.float64)
    eager, act_eager = step()
    runs = {"eager cudnn.benchmark": dict(benchmark=True), "eager deterministic": dict(deterministic=True),
            "eager channels_last": dict(channels_last=True), "eager on the cpu": dict(where="cpu"),
            "compiled": dict(compiled=True)}
    print("variant | gradients failing (tol 1e-4) | failing (tol 1e-2) | largest RMSE ratio to eager's | "
          "ReLU signs unlike float64's | ReLU inputs' RMSE / eager's | lowest cosine to float64 | largest RMSE / RMS")
    for label, kw in {"eager": {}, **runs}.items():
        grads, act = (eager, act_eager) if label == "eager" else step(**kw)
        fail = {t: sum(not same(eager[n], grads[n], fp64_ref=exact[n], tol=t, log_error=lambda *a, **k: None)
                       for n in exact) for t in (1e-4, 1e-2)}
        worst = max(_rmse(grads[n], exact[n]) / (_rmse(eager[n], exact[n]) or 1e-30) for n in exact)
        cos = min(F.cosine_similarity(grads[n].double().flatten(), exact[n].flatten(), dim=0).item() for n in exact)
        rel = max(_rmse(grads[n], exact[n]) / (exact[n].pow(2).mean().sqrt().item() or 1e-30) for n in exact)
        flips = int(((act > 0) != (act64 > 0)).sum())
        print(f"{label} | {fail[1e-4]} | {fail[1e-2]} | {worst:.2f} | {flips} | "
              f"{_rmse(act, act64) / _rmse(act_eager, act64):.2f} | {cos:.5f} | {rel:.3g}")


def resnet50_tf32(device: str = "cuda") -> None:
    """Does the compiled step follow cuDNN's TF32 switch as eager does? The gradients' RMSE
    against float64 with `torch.backends.cudnn.flags(allow_tf32=...)` off and on."""
    case, base, inputs, target = _resnet50(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    exact = _step(copy.deepcopy(base).double(), _widened(inputs), target, case, False)
    runs = {}
    for tf32 in (False, True):
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
            runs[f"eager tf32={tf32}"] = _step(copy.deepcopy(base), inputs, target, case, False)
            torch._dynamo.reset()
            runs[f"compiled tf32={tf32}"] = _step(copy.deepcopy(base), inputs, target, case, True)
    names = [n for n in exact if "stages.3.layers.2" in n or "stages.0.layers.0" in n]
    print("gradient | " + " | ".join(runs))
    for n in names:
        print(n, "|", " | ".join(f"{_rmse(g[n], exact[n]):.3g}" for g in runs.values()))


def resnet50_bias_grads(device: str = os.environ.get("DEVICE", "cuda"),
                        name: str = "resnet.encoder.stages.3.layers.2.layer.1.normalization.bias") -> None:
    """One gradient channel by channel: how many channels the compiled step has far from the
    float64 value (10x eager's distance), and the worst ones' values."""
    case, base, inputs, target = _resnet50(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        r = _step(copy.deepcopy(base).double(), _widened(inputs), target, case, False)[name]
        e = _step(copy.deepcopy(base), inputs, target, case, False)[name].double()
        for options in ({}, {"cuda_fuse_rows": False}, {"cuda_graphs_in_default_mode": False}):
            torch._dynamo.reset()
            c = _step(copy.deepcopy(base), inputs, target, case, True, options)[name].double()
            far = ((c - r).abs() > 10 * (e - r).abs() + 1e-9).nonzero().flatten()
            print(f"{name}, options {options}: {far.numel()} of {r.numel()} channels 10x farther from "
                  f"float64 than eager's; RMSE {_rmse(c, r):.3g}, eager's {_rmse(e, r):.3g}")
            for k in (c - r).abs().argsort(descending=True)[:3].tolist():
                print(f"  channel {k}: float64 {r[k].item():.9g} eager {e[k].item():.9g} compiled {c[k].item():.9g}")


def batch_norm_eval_bias_grad() -> None:
    """F.batch_norm(training=False) with weight None: the bias's gradient is the sum of the
    output's gradient, whatever the device (the fuzzer's programs 721 and 1416)."""
    print("batch_norm eval, weight None: gradient of the bias, and the sum of the output's gradient")
    for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
        for cudnn in (True, False):
            torch.manual_seed(0)
            x, mean, var = torch.randn(5, 1), torch.randn(1), torch.rand(1) + 0.5
            bias, g = torch.randn(1), torch.randn(5, 1)
            x, bias = x.to(device).requires_grad_(), bias.to(device).requires_grad_()
            with torch.backends.cudnn.flags(enabled=cudnn):
                y = F.batch_norm(x, mean.to(device), var.to(device), None, bias, training=False)
                gx, gb = torch.autograd.grad(y, (x, bias), g.to(device))
            print(f"  {device} cudnn={cudnn}: bias grad {gb.tolist()}, sum of grad {g.sum().item():.6g}, "
                  f"input grad {gx.flatten().tolist()[:3]}")


if __name__ == "__main__":
    checks = {"conv_transpose3d": conv_transpose3d, "flash_rng_state": flash_rng_state,
              "resnet50_training_grads": resnet50_training_grads, "batch_norm_eval_bias_grad": batch_norm_eval_bias_grad,
              "resnet50_tail": resnet50_tail, "resnet50_tf32": resnet50_tf32,
              "resnet50_bias_grads": resnet50_bias_grads, "resnet50_stage_tails": resnet50_stage_tails,
              "resnet50_split": resnet50_split, "resnet50_front_parts": resnet50_front_parts,
              "resnet50_back_trace": resnet50_back_trace,
              "resnet50_variants": resnet50_variants}
    for name in sys.argv[1:] or checks:
        checks[name]()
