"""Bisect a wrong training step under cuda_fuse_rows: which fused row group (forward = host
function 0, backward = 1) makes the GPT-2-like model's gradients differ from eager.

Each configuration runs in a fresh process; the cuda option cuda_rowfuse_only selects the groups
kept, keyed on the graph ('forward:0-5': groups 0-4 of the forward graph, none of the backward),
so a configuration does not depend on what the process compiled before. Prints the worst
gradient's relative error per configuration."""
import json, os, subprocess, sys

import torch

def step(fuse: bool, dtype: str, rows: str | None):
    import copy
    from dynamo_mlir.tools.models import TinyGPT
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    model = TinyGPT().cuda().to(dt)
    x = torch.randint(0, 256, (2, 32), device="cuda")
    ref = copy.deepcopy(model)
    options = {"strict": True, "cuda_fuse_rows": fuse}
    if rows is not None:
        options["cuda_rowfuse_only"] = rows
    f = torch.compile(model, backend="mlir", options=options)
    for m, fn in ((model, f), (ref, ref)):
        m.train()
        fn(x).float().square().mean().backward()
    errs = {}
    for (n, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        g, h = p.grad.float(), q.grad.float()
        errs[n] = ((g - h).norm() / h.norm().clamp_min(1e-12)).item()
    return errs

def run(spec, fuse=True, dtype="float32"):
    env = dict(os.environ)
    env.pop("DYNAMO_MLIR_CUDA_ROWFUSE_ONLY", None)
    out = subprocess.run([sys.executable, __file__, "--child", str(int(fuse)), dtype, spec or ""], env=env,
                         capture_output=True, text=True, timeout=240)
    line = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not line:
        print(out.stdout[-2000:], out.stderr[-4000:])
        return None
    return json.loads(line[-1])

def worst(errs):
    n = max(errs, key=errs.get)
    return errs[n], n

if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(step(sys.argv[2] == "1", sys.argv[3], sys.argv[4] or None)))
        sys.exit(0)
    TOL = 1e-3
    results = {}
    def show(label, spec, **kw):
        e = run(spec, **kw)
        results[label] = e
        if e is None:
            print(f"{label:40s} FAILED", flush=True)
            return None
        w, n = worst(e)
        bad = sorted((k for k, v in e.items() if v > TOL), key=lambda k: -e[k])
        print(f"{label:40s} worst {w:.2e} {n}  bad={len(bad)} {bad[:6]}", flush=True)
        return w
    show("off", None, fuse=False)
    show("on", None)
    wf = show("forward groups only", "forward:0-99")
    wb = show("backward groups only", "backward:0-99")
    for call, w in (("forward", wf), ("backward", wb)):
        if w is None or w < TOL:
            continue
        lo, hi = 0, 40
        while hi - lo > 1:  # the first group whose inclusion (with all before it) breaks it
            mid = (lo + hi) // 2
            w = show(f"call {call}: groups 0-{mid}", f"{call}:0-{mid}")
            if w is not None and w > TOL:
                hi = mid
            else:
                lo = mid
        show(f"call {call}: group {lo} alone", f"{call}:{lo}-{lo + 1}")
    show("on bf16", None, dtype="bfloat16")
    json.dump(results, open(os.path.join(os.environ.get("OUT", "/tmp"), "bisect.json"), "w"), indent=1)
