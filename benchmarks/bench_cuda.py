"""cuda target benchmark: achieved GB/s of generated kernels (elementwise chain, softmax,
layernorm on 64M-element tensors) against a device-to-device copy measured in the same run,
and against eager and inductor; compile times; reduce-overhead vs default on a small graph.
The same cases with symbolic sizes (torch.compile(dynamic=True): the kernels of
codegen/gpu/, one for every size) against the copy and inductor's dynamic kernels.

Usage (GPU machine):  python benchmarks/bench_cuda.py --device cuda [--out results.md]
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch_mlir import ir

import dynamo_mlir

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from cuda_models import MODELS  # noqa: E402
from dynamo_mlir.codegen import resolve, run_stages  # noqa: E402
from dynamo_mlir.codegen.signature import Signature, TensorSpec  # noqa: E402
from dynamo_mlir.codegen.target import get_target  # noqa: E402
from dynamo_mlir.dialects import new_context  # noqa: E402

N = 64 * 1024 * 1024
ROWS, COLS = 16384, 4096  # 64M elements


def median_ms(fn, warmup=3, reps=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def kernel_ms(fn, calls=5):
    """GPU time of the kernels (and copies) one call runs, from torch.profiler: the call's time
    less its host time before the first kernel (Dynamo's guards, a runtime's set-up), which a
    single timed call on an idle GPU also counts."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / calls / 1e3


def compile_ours(model, mode=None, options=None, **kw):
    target = get_target("cuda")
    t0 = time.perf_counter()
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(MODELS[model](**kw))
        fn = module.body.operations[0]
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        spec = lambda t: TensorSpec(tuple(ir.RankedTensorType(t).shape), torch.float32)
        sig = Signature(ir.StringAttr(fn.attributes["sym_name"]).value,
                        tuple(spec(t) for t in ftype.inputs), tuple(spec(t) for t in ftype.results))
        options = resolve({"cuda_fuse_rows": True, **(options or {})}, mode=mode)
        run = run_stages(module, target, options)
        loaded = target.load(run.artifact, sig, run.options)
    return loaded, time.perf_counter() - t0, len(run.artifact.kernels)


CASES = {
    # name: (model kwargs, eager fn, input shapes, minimum bytes moved)
    "elementwise_chain": (dict(n=N), lambda x, y: torch.relu(torch.exp(x) * y + x), [(N,), (N,)], 3 * N * 4),
    "softmax": (dict(r=ROWS, c=COLS), lambda x: torch.softmax(x, 1), [(ROWS, COLS)], 2 * N * 4),
    "layernorm": (dict(r=ROWS, c=COLS), lambda x, w, b: F.layer_norm(x, (COLS,), w, b, 1e-5),
                  [(ROWS, COLS), (COLS,), (COLS,)], 2 * N * 4),
    "log_softmax": (dict(r=ROWS, c=COLS), lambda x: torch.log_softmax(x, 1), [(ROWS, COLS)], 2 * N * 4),
    "rmsnorm": (dict(r=ROWS, c=COLS), lambda x, w: x * torch.rsqrt(x.square().mean(1, keepdim=True) + 1e-6) * w,
                [(ROWS, COLS), (COLS,)], 2 * N * 4),
}
ROW_CASES = ("softmax", "layernorm", "log_softmax", "rmsnorm")  # also timed unfused (before row fusion)


def copy_speeds() -> tuple[float, float, float]:
    """A device-to-device copy of N floats: its ms timed by events around the call, and GB/s
    (read and write counted) by that time and by its kernel's time (kernel_ms), to which kernel
    times are compared."""
    src, dst = torch.randn(N, device="cuda"), torch.empty(N, device="cuda")
    copy_ms = median_ms(lambda: dst.copy_(src))
    kernel = kernel_ms(lambda: dst.copy_(src))
    return copy_ms, 2 * N * 4 / copy_ms / 1e6, 2 * N * 4 / kernel / 1e6


def bench_kernels(rows):
    copy_ms, copy_gbs, copy_kernel_gbs = copy_speeds()
    rows.append(dict(case="d2d copy (64M f32)", ms=copy_ms, gbs=copy_gbs, kernel_gbs=copy_kernel_gbs))
    for name, (kw, eager, shapes, nbytes) in CASES.items():
        ours, compile_s, n_kernels = compile_ours(name, **kw)
        inputs = [torch.randn(s, device="cuda") for s in shapes]
        want = eager(*inputs)
        err = ((ours(*inputs)[0] - want).norm() / want.norm()).item()
        inductor = torch.compile(eager)
        t0 = time.perf_counter()
        inductor(*inputs)
        torch.cuda.synchronize()
        inductor_compile_s = time.perf_counter() - t0
        t = {k: median_ms(lambda f=f: f(*inputs)) for k, f in (("mlir", ours), ("eager", eager), ("inductor", inductor))}
        kernels = {k: kernel_ms(lambda f=f: f(*inputs)) for k, f in (("mlir", ours), ("inductor", inductor))}
        unfused = {}
        if name in ROW_CASES:
            before, _, n_before = compile_ours(name, options={"cuda_fuse_rows": False}, **kw)
            ms = median_ms(lambda: before(*inputs))
            unfused = dict(unfused_ms=ms, unfused_kernels=n_before, unfused_vs_copy=nbytes / ms / 1e6 / copy_gbs,
                           unfused_vs_inductor=t["inductor"] / ms)
        rows.append(dict(case=name, ms=t["mlir"], gbs=nbytes / t["mlir"] / 1e6, eager_ms=t["eager"],
                         inductor_ms=t["inductor"], vs_copy=nbytes / t["mlir"] / 1e6 / copy_gbs,
                         vs_eager=t["eager"] / t["mlir"], vs_inductor=t["inductor"] / t["mlir"],
                         kernels=n_kernels, rel_err=err, compile_s=compile_s, inductor_compile_s=inductor_compile_s,
                         kernel_ms=kernels["mlir"], kernel_vs_copy=nbytes / kernels["mlir"] / 1e6 / copy_kernel_gbs,
                         inductor_kernel_ms=kernels["inductor"],
                         inductor_kernel_vs_copy=nbytes / kernels["inductor"] / 1e6 / copy_kernel_gbs, **unfused))
        del inputs, want


def bench_dynamic_kernels(rows):
    """CASES compiled with symbolic sizes by both compilers (dynamic=True), timed at the same
    sizes as the static ones."""
    _, copy_gbs, copy_kernel_gbs = copy_speeds()
    for name, (_, eager, shapes, nbytes) in CASES.items():
        inputs = [torch.randn(s, device="cuda") for s in shapes]
        want = eager(*inputs)
        dynamo_mlir.reset()
        torch._dynamo.reset()
        ours = torch.compile(eager, backend="mlir", dynamic=True)
        err = ((ours(*inputs) - want).norm() / want.norm()).item()
        stats = dynamo_mlir.stats()
        inductor = torch.compile(eager, dynamic=True)
        inductor(*inputs)
        t = {k: median_ms(lambda f=f: f(*inputs)) for k, f in (("mlir", ours), ("inductor", inductor))}
        kernels = {k: kernel_ms(lambda f=f: f(*inputs)) for k, f in (("mlir", ours), ("inductor", inductor))}
        rows.append(dict(case=name, dynamic=True, ms=t["mlir"], gbs=nbytes / t["mlir"] / 1e6,
                         vs_copy=nbytes / t["mlir"] / 1e6 / copy_gbs, inductor_ms=t["inductor"],
                         vs_inductor=t["inductor"] / t["mlir"], rel_err=err, eager_ops=stats["ops_fallback"],
                         kernel_ms=kernels["mlir"], kernel_vs_copy=nbytes / kernels["mlir"] / 1e6 / copy_kernel_gbs,
                         inductor_kernel_ms=kernels["inductor"],
                         inductor_kernel_vs_copy=nbytes / kernels["inductor"] / 1e6 / copy_kernel_gbs))
        del inputs, want


def bench_overhead(rows):
    """Launch-bound: a small layernorm, default mode vs reduce-overhead (CUDA graph)."""
    for mode in (None, "reduce-overhead"):
        fn, _, n = compile_ours("layernorm", mode=mode, r=64, c=256)
        inputs = [torch.randn(64, 256, device="cuda"), torch.randn(256, device="cuda"), torch.randn(256, device="cuda")]
        for _ in range(3):  # the first call loads the module (and captures, in reduce-overhead): not timed
            fn(*inputs)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            fn(*inputs)
        torch.cuda.synchronize()
        rows.append(dict(case=f"layernorm 64x256 mode={mode}", us_per_call=(time.perf_counter() - t0) / 200 * 1e6, kernels=n))
    eager = lambda x, w, b: F.layer_norm(x, (256,), w, b, 1e-5)
    eager(*inputs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        eager(*inputs)
    torch.cuda.synchronize()
    rows.append(dict(case="layernorm 64x256 eager", us_per_call=(time.perf_counter() - t0) / 200 * 1e6))


def report(rows) -> str:
    gpu = torch.cuda.get_device_name()
    lines = [f"# cuda benchmark on {gpu}", "", f"torch {torch.__version__}; medians of 20 timed runs (CUDA events)", "",
             "`ms`: one call on an idle GPU, timed by events around it (its launch included); `kernel ms`: the GPU "
             "time of its kernels (torch.profiler), compared with the copy's kernel time (`kernel vs copy`): the "
             "bandwidth the kernels reach.", "",
             "| case | ms | GB/s | vs copy | eager ms | inductor ms | vs eager | vs inductor | kernel ms | kernel vs copy | "
             "inductor kernel vs copy | kernels | rel err | compile s (ours / inductor) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("dynamic"):
            continue
        if "gbs" in r and "eager_ms" in r:
            lines.append(f"| {r['case']} | {r['ms']:.3f} | {r['gbs']:.0f} | {r['vs_copy']:.2f} | {r['eager_ms']:.3f} | "
                         f"{r['inductor_ms']:.3f} | {r['vs_eager']:.2f} | {r['vs_inductor']:.2f} | {r['kernel_ms']:.3f} | "
                         f"{r['kernel_vs_copy']:.2f} | {r['inductor_kernel_vs_copy']:.2f} | {r['kernels']} | "
                         f"{r['rel_err']:.1e} | {r['compile_s']:.2f} / {r['inductor_compile_s']:.2f} |")
        elif "gbs" in r:
            lines.append(f"| {r['case']} | {r['ms']:.3f} | {r['gbs']:.0f} | 1.00 | | | | | "
                         f"{2 * N * 4 / r['kernel_gbs'] / 1e6:.3f} | 1.00 | | | | |")
    lines += ["", "Before row fusion (same run, `cuda_fuse_rows=False`):", "",
              "| case | unfused ms | kernels | vs copy | vs inductor | fused ms | kernels | vs copy | vs inductor | speed-up |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['unfused_ms']:.3f} | {r['unfused_kernels']} | {r['unfused_vs_copy']:.2f} | "
              f"{r['unfused_vs_inductor']:.2f} | {r['ms']:.3f} | {r['kernels']} | {r['vs_copy']:.2f} | "
              f"{r['vs_inductor']:.2f} | {r['unfused_ms'] / r['ms']:.2f} |" for r in rows if "unfused_ms" in r]
    lines += ["", "Symbolic sizes (`dynamic=True`, both compilers; same sizes, same run):", "",
              "`ms`: one call on an idle GPU (Dynamo's guards and the host's set-up included); `kernel ms`: "
              "the GPU time of its kernels (torch.profiler), against the copy's kernel time.", "",
              "| case | ms | GB/s | vs copy | inductor ms | vs inductor | kernel ms | kernel vs copy | "
              "inductor kernel ms | inductor kernel vs copy | rel err | eager ops |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['ms']:.3f} | {r['gbs']:.0f} | {r['vs_copy']:.2f} | {r['inductor_ms']:.3f} | "
              f"{r['vs_inductor']:.2f} | {r['kernel_ms']:.3f} | {r['kernel_vs_copy']:.2f} | "
              f"{r['inductor_kernel_ms']:.3f} | {r['inductor_kernel_vs_copy']:.2f} | {r['rel_err']:.1e} | "
              f"{r['eager_ops']} |" for r in rows if r.get("dynamic")]
    lines += ["", "| small graph | us per call | kernels |", "|---|---|---|"]
    lines += [f"| {r['case']} | {r['us_per_call']:.1f} | {r.get('kernels', '')} |" for r in rows if "us_per_call" in r]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    assert args.device == "cuda" and torch.cuda.is_available(), "this benchmark needs --device cuda and a GPU"
    rows = []
    bench_kernels(rows)
    bench_dynamic_kernels(rows)
    bench_overhead(rows)
    text = report(rows)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
