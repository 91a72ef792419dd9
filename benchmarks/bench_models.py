"""Models, kernels and per-call overhead: eager vs inductor vs mlir, measured in one run, on CPU or CUDA.

The benchmark that speed is judged by. For each workload: median time per call of each backend
(after warm-up; CUDA times with device events), the ratios between them, each backend's compile
time (cold: first call minus a steady call), whether mlir matched eager and how many ops it left
to eager. Tables, each at every thread count asked for (default: torch's and 1):
  models    the MLP, the CNN, GPT-2, BERT and LLaMA (transformers, random weights), a GPT-2
            training step (forward, loss, backward, AdamW step); geomean row over them; also
            "dynamo floor": Dynamo running its graph unchanged (its own cost + the ops eagerly)
  kernels   softmax, layernorm, an elementwise chain, matmul, a conv
  overhead  one-op graphs: time per call in microseconds, and mlir's (inductor's) minus eager's;
            on CUDA also in mode="reduce-overhead"
With --train: all training steps instead (train_workloads.py), each backend on its own copy of
the model and optimizer, losses compared step by step.
With --scale: the workloads at the sizes and precisions people run (scale_workloads.py), judged
against a float64 copy of the model as PyTorch's benchmark suite does (torch._dynamo.utils.same),
at every thread count asked for. On cuda: GPT-2 small, BERT-base, a 1B LLaMA in bf16, ViT-B/16,
ResNet-50, AMP training steps, torch's own TF32 settings kept, and a GEMM table (ours against
torch.mm at 4096^3, bf16 / fp16 / fp32). On cpu (issue 27), float32: GPT-2 small, BERT-base and
ViT-B/16 cut to 4 layers, GPT-2 (4 layers) and ResNet-50 training steps, GPT-2 over 4 sequence
lengths with automatic dynamic shapes (one timed call = the sweep; mlir's graph count printed),
the MLP, a 100-step MLP Adam loop (one timed call = the 100 steps) and the small LLaMA.

    python benchmarks/bench_models.py [--device cpu|cuda] [--threads default,1] [--repeats 20]
        [--only mlp,softmax_4096x1024] [--train | --scale] [--quick] [--out results.md]

    python benchmarks/bench_models.py --device cpu --scale --out cpu_scale.md   # issue 27's table, 2 threads and 1
"""

import argparse
import datetime
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import torch

import dynamo_mlir
import scale_workloads as scale
from train_workloads import Training, losses_match, make_step, train_workloads
from workloads import HAVE_TRANSFORMERS, Inference, inference_workloads

# Backend name -> torch.compile's arguments (None: eager).
BACKENDS = {"eager": None, "inductor": dict(backend="inductor"), "mlir": dict(backend="mlir")}
# The one-op graphs on CUDA, also replayed as CUDA graphs: the launch overhead that mode removes.
REDUCE_OVERHEAD = {"inductor reduce-overhead": dict(backend="inductor", mode="reduce-overhead"),
                   "mlir reduce-overhead": dict(backend="mlir", mode="reduce-overhead")}


def _graph_as_is(gm, example_inputs):
    """A torch.compile backend that runs Dynamo's graph unchanged: what any backend pays per call."""
    return gm.forward


# The models and the one-op graphs also through that backend: Dynamo's own per-call cost plus the
# graph's ops run eagerly (for a one-op graph, the floor under every compiled backend's cost).
FLOOR = {"dynamo floor": dict(backend=_graph_as_is)}
WARMUP_CALLS = 3
OVERHEAD_CALLS = 50  # calls per timed sample of a one-op graph (one call is a few microseconds)
GEMM_CALLS = 20  # calls per timed sample of a GEMM of --scale


def _sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, inputs, calls: int, device: str) -> float:
    """Seconds per call over `calls` back-to-back calls (CUDA: device events around them)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn(*inputs)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / calls
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*inputs)
    return (time.perf_counter() - t0) / calls


def time_backends(fns: dict, inputs, repeats: int, device: str, calls: int = 1) -> dict:
    """backend -> (first call seconds, median seconds per call). Each backend's first call (its
    compile) in turn, then warm-up calls, then `repeats` samples of `calls` calls taken round-robin
    over the backends, so that a shared machine's changing load falls on all of them alike. Each
    round starts one backend later than the one before, so that none is always first after the
    host's pause between rounds (a GPU's clocks, caches the previous backend left warm)."""
    first = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn(*inputs)
        _sync(device)
        first[name] = time.perf_counter() - t0
    for fn in fns.values():
        for _ in range(WARMUP_CALLS):
            fn(*inputs)
    _sync(device)
    samples = {name: [] for name in fns}
    names = list(fns)
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(_timed(fns[name], inputs, calls, device))
    return {name: (first[name], statistics.median(samples[name])) for name in fns}


def _fresh():
    """Nothing compiled for an earlier workload is reused, and mlir's stats count this one only."""
    torch._dynamo.reset()
    dynamo_mlir.reset()


def _compiled(fn, how):
    return fn if how is None else torch.compile(fn, **how)


def _record(row, timings):
    for backend, (first, steady) in timings.items():
        row[backend], row[f"{backend}_compile"] = steady, max(first - steady, 0.0)


def _match(got, want, tol) -> str:
    if torch.allclose(got, want, **tol):
        return "yes"
    return f"NO (max abs err {(got - want).abs().max().item():.1e})"


def measure(name, w: Inference, repeats, device, backends):
    row = {"name": name, "group": w.group}
    calls = OVERHEAD_CALLS if w.group == "overhead" else 1
    _fresh()
    with torch.no_grad():
        reference = w.fn(*w.inputs)
        fns = {backend: _compiled(w.fn, how) for backend, how in backends.items()}
        _record(row, time_backends(fns, w.inputs, repeats, device, calls))
        row["mlir_fallbacks"] = where_ops_ran(dynamo_mlir.stats())
        # Every mlir variant (on CUDA's one-op graphs also reduce-overhead) against eager.
        verdicts = {b: _match(f(*w.inputs), reference, w.tol) for b, f in fns.items() if b.startswith("mlir")}
        wrong = [f"{b}: {v}" for b, v in verdicts.items() if v != "yes"]
        row["mlir_ok"] = "; ".join(wrong) if wrong else "yes"
    return row


def measure_training(name, w: Training, repeats, device, backends):
    """Like measure, for a training step: one model/optimizer copy per backend, same steps."""
    row, losses = {"name": name, "group": w.group}, {backend: [] for backend in backends}
    _fresh()

    def recording(backend, how):
        step = _compiled(make_step(w), how)
        return lambda *a: losses[backend].append(step(*a))

    fns = {backend: recording(backend, how) for backend, how in backends.items()}
    _record(row, time_backends(fns, (w.inputs, w.target), repeats, device))
    row["mlir_fallbacks"] = where_ops_ran(dynamo_mlir.stats())
    row["mlir_ok"] = "yes" if losses_match(losses["mlir"], losses["eager"]) else "NO (losses differ)"
    return row


def measure_scale(name, w: scale.ScaleInference, repeats, device, backends):
    """Like measure; mlir judged against a float64 copy of the model (scale_workloads.py)."""
    row = {"name": name, "group": w.group, "flops": w.flops, "calls": w.calls}
    _fresh()
    with torch.no_grad():
        fns = {backend: _compiled(w.fn, how) for backend, how in backends.items()}
        # A GEMM's samples are back-to-back calls, so that the host's per-call work overlaps the
        # kernels as in a model, and the table measures the GEMM, not one call's launch latency.
        _record(row, time_backends(fns, w.inputs, repeats, device, GEMM_CALLS if w.group == "gemm" else w.calls))
        row["mlir_fallbacks"] = where_ops_ran(dynamo_mlir.stats())
        eager_out, mlir_out = fns["eager"](*w.inputs), fns["mlir"](*w.inputs)
    row["mlir_ok"] = scale.accuracy(scale.inference_errors(w, eager_out, mlir_out))
    return row


def _loop(step, steps: int):
    """`steps` calls of the compiled step as one call (a training loop), returning the last loss."""
    if steps == 1:
        return step

    def loop(x, y):
        for _ in range(steps):
            loss = step(x, y)
        return loss
    return loop


def measure_scale_training(name, w: scale.ScaleTraining, repeats, device, backends):
    """Like measure_training; each backend's first step (its compile) from the same weights gives
    the loss and gradients judged against a float64 copy's (a loop too: then w.steps steps timed)."""
    row, results = {"name": name, "group": w.group}, {}
    _fresh()
    raw = {backend: make_step(w) for backend in backends}
    steps = {backend: _compiled(raw[backend], how) for backend, how in backends.items()}
    ref_loss, ref_grads = scale.reference_step(w)
    first = {}
    for backend, step in steps.items():
        t0 = time.perf_counter()
        loss = step(w.inputs, w.target)
        _sync(device)
        first[backend] = time.perf_counter() - t0
        results[backend] = (loss.detach().clone(), scale.gradients(raw[backend].model))
    loops = {backend: _loop(step, w.steps) for backend, step in steps.items()}
    timings = time_backends(loops, (w.inputs, w.target), repeats, device)
    # compile s = first - steady: a loop's first call would have been its first step and w.steps - 1 more
    _record(row, {b: (first[b] + steady * (1 - 1 / w.steps), steady) for b, (_, steady) in timings.items()})
    row["mlir_fallbacks"] = where_ops_ran(dynamo_mlir.stats())
    row["mlir_ok"] = scale.accuracy({"loss": (results["eager"][0], results["mlir"][0], ref_loss),
                                     "gradients": (results["eager"][1], results["mlir"][1], ref_grads)})
    return row


def measure_scale_sweep(name, w: scale.ScaleSweep, repeats, device, backends):
    """A model over several sequence lengths: each backend's first sweep compiles it with its own
    automatic dynamic shapes (the first length static, the second recompiled with symbolic sizes);
    the outputs of that sweep are judged against a float64 copy's, length by length."""
    from torch._dynamo.pgo import reset_code_state

    row, outs, first = {"name": name, "group": w.group}, {}, {}
    _fresh()
    with torch.no_grad():
        fns = {backend: scale.sweep(_compiled(w.fn, how)) for backend, how in backends.items()}
        for backend, fn in fns.items():
            # Dynamo keeps which sizes changed per code object, across backends: without this, the
            # first backend's recompile would make the next ones start with symbolic sizes.
            reset_code_state()
            t0 = time.perf_counter()
            outs[backend] = fn(*w.inputs)
            _sync(device)
            first[backend] = time.perf_counter() - t0
        timings = time_backends(fns, w.inputs, repeats, device)
    _record(row, {b: (first[b], steady) for b, (_, steady) in timings.items()})
    s = dynamo_mlir.stats()
    row["mlir_fallbacks"] = f"{where_ops_ran(s)} ({s['graphs']} graphs)"
    row["mlir_ok"] = scale.accuracy(scale.sweep_errors(w, outs["eager"], outs["mlir"]))
    return row


MEASURE = {Inference: measure, Training: measure_training, scale.ScaleInference: measure_scale,
           scale.ScaleTraining: measure_scale_training, scale.ScaleSweep: measure_scale_sweep}


def where_ops_ran(s: dict) -> str:
    """What did not run in our generated code: eager ops / calls a region ran eagerly / library calls."""
    return f"{s['ops_fallback']} / {s['runtime_fallback_calls']} / {s['ops_library']}"


def measure_all(chosen, args, backends) -> list[dict]:
    rows = []
    for name, w in chosen.items():
        t0 = time.perf_counter()
        replayed = w.group == "overhead" or (args.reduce_overhead and w.group in ("models", "scale"))
        how = backends | (FLOOR if w.group in ("overhead", "models") else {}) \
            | (REDUCE_OVERHEAD if replayed and args.device == "cuda" else {})
        try:
            rows.append(MEASURE[type(w)](name, w, args.repeats, args.device, how))
        except Exception as e:  # one workload failing leaves the others' figures standing
            traceback.print_exc()
            rows.append({"name": name, "group": w.group, "error": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
        print(f"measured {name} at {torch.get_num_threads()} thread(s) in {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    return rows


def _geomean(values) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


RATIOS = (("eager", "mlir"), ("inductor", "mlir"), ("eager", "inductor"))


def ms_table(rows, geomean: bool) -> str:
    """Milliseconds per call; with a "dynamo floor" column where the rows measured it (models)."""
    floor = any("dynamo floor" in r for r in rows)
    head = ("| workload | eager ms | inductor ms | mlir ms | " + ("dynamo floor ms | " if floor else "")
            + "eager/mlir | inductor/mlir | eager/inductor | "
            "compile s (inductor / mlir) | mlir eager ops / run-time fallback calls / library calls | matches |")
    lines = [head, "|" + "---|" * (10 + floor)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | | | | " + ("| " if floor else "") + f"| | | | | error: {r['error']} |")
            continue
        ratios = " | ".join(f"{r[a] / r[b]:.2f}" for a, b in RATIOS)
        floor_ms = f"{r['dynamo floor'] * 1e3:.3f} | " if floor else ""
        lines.append(
            f"| {r['name']} | {r['eager'] * 1e3:.3f} | {r['inductor'] * 1e3:.3f} | {r['mlir'] * 1e3:.3f} | {floor_ms}"
            f"{ratios} | {r['inductor_compile']:.1f} / {r['mlir_compile']:.1f} | {r['mlir_fallbacks']} | {r['mlir_ok']} |")
    done = [r for r in rows if "error" not in r]
    if geomean and done:
        ratios = " | ".join(f"**{_geomean(r[a] / r[b] for r in done):.2f}**" for a, b in RATIOS)
        lines.append(f"| **geomean ({len(done)} workloads)** | | | | " + ("| " if floor else "") + f"{ratios} | | | |")
    return "\n".join(lines)


def us_table(rows, backends) -> str:
    """Time per call of the one-op graphs, and what each compiled backend adds to eager's."""
    compiled = [b for b in backends if b != "eager"]
    head = ("| graph | " + " | ".join(f"{b} us" for b in backends) + " | "
            + " | ".join(f"{b} - eager us" for b in compiled) + " | compile s (mlir) | matches |")
    lines = [head, "|" + "---|" * (len(backends) + len(compiled) + 3)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} |" + " |" * (len(backends) + len(compiled) + 1) + f" error: {r['error']} |")
            continue
        times = " | ".join(f"{r[b] * 1e6:.1f}" for b in backends)
        extra = " | ".join(f"{(r[b] - r['eager']) * 1e6:+.1f}" for b in compiled)
        lines.append(f"| {r['name']} | {times} | {extra} | {r['mlir_compile']:.1f} | {r['mlir_ok']} |")
    return "\n".join(lines)


def tflops_table(rows) -> str:
    """The GEMM rows as throughput: mlir's compiled matmul against torch.mm (eager)."""
    lines = ["| GEMM | eager (torch.mm) TFLOP/s | inductor TFLOP/s | mlir TFLOP/s | mlir / torch.mm |", "|---|---|---|---|---|"]
    for r in rows:
        tf = {b: r["flops"] / r[b] / 1e12 for b in ("eager", "inductor", "mlir")}
        lines.append(f"| {r['name']} | {tf['eager']:.0f} | {tf['inductor']:.0f} | {tf['mlir']:.0f} | "
                     f"{tf['mlir'] / tf['eager']:.3f} |")
    return "\n".join(lines)


def replay_table(rows) -> str:
    """The models in both modes: what replaying CUDA graphs buys each backend."""
    lines = ["| workload | inductor ms | inductor reduce-overhead ms | mlir ms | mlir reduce-overhead ms | "
             "inductor reduce-overhead / mlir reduce-overhead |", "|" + "---|" * 6]
    for r in rows:
        ir, mr = r["inductor reduce-overhead"], r["mlir reduce-overhead"]
        lines.append(f"| {r['name']} | {r['inductor'] * 1e3:.3f} | {ir * 1e3:.3f} | {r['mlir'] * 1e3:.3f} | "
                     f"{mr * 1e3:.3f} | {ir / mr:.2f} |")
    return "\n".join(lines)


def report(rows, args, threads: str) -> str:
    where = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    what = "training steps" if args.train else "calls"
    parts = [f"## {where}, {threads}", "",
             f"Median of {args.repeats} {what} per backend (taken round-robin over the backends, each round "
             f"starting one backend later) after {WARMUP_CALLS} warm-up calls; a ratio a/b > 1 "
             "means b is faster. Compile s: first call minus a steady call."]
    batched = [f"{r['name']} ({r['calls']})" for r in rows if r.get("calls", 1) > 1]
    if batched:
        parts += ["", "Timed in samples of back-to-back calls (the median sample divided by its calls): "
                  + ", ".join(batched) + "."]
    for group, title in (("models", "Training steps" if args.train else "Models"), ("kernels", "Kernels"),
                         ("scale", "Models at real sizes"), ("gemm", "GEMM")):
        chosen = [r for r in rows if r["group"] == group]
        if chosen:
            parts += ["", f"### {title}", "", ms_table(chosen, geomean=group in ("models", "scale"))]
    gemms = [r for r in rows if r["group"] == "gemm" and "error" not in r]
    if gemms:
        parts += ["", "### GEMM throughput (TFLOP/s)", "", tflops_table(gemms)]
    replayed = [r for r in rows if r["group"] in ("models", "scale") and "mlir reduce-overhead" in r]
    if replayed:
        parts += ["", '### Models, mode="reduce-overhead" (milliseconds per call)', "", replay_table(replayed)]
    overhead = [r for r in rows if r["group"] == "overhead"]
    if overhead:
        backends = list(BACKENDS) + list(FLOOR) + (list(REDUCE_OVERHEAD) if args.device == "cuda" else [])
        parts += ["", f"### Per-call overhead (one-op graphs; microseconds per call, samples of {OVERHEAD_CALLS} "
                      "calls)", "", us_table(overhead, backends)]
    return "\n".join(parts) + "\n"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return f"{names[0] if names else platform.processor() or 'unknown CPU'} ({os.cpu_count()} logical CPUs)"


def _commit() -> str:
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=os.path.dirname(os.path.abspath(__file__)),
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def header(args) -> str:
    machine = _cpu_model() + (f"; GPU {torch.cuda.get_device_name()}" if args.device == "cuda" else "")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    lines = ["# bench_models: eager vs inductor vs mlir", "",
             f"- date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
             f"- torch {torch.__version__}, dynamo-mlir {_commit()}, Python {platform.python_version()}",
             f"- machine: {machine}; load average at start: {load}",
             f"- command: `{shlex.join(sys.orig_argv)}` (in {os.getcwd()})",
             "- both compile cold: fresh cache folders for inductor (its FX graph and AOTAutograd caches off) and mlir"]
    if not HAVE_TRANSFORMERS:
        lines.append("- transformers is not installed: GPT-2, BERT, LLaMA and the GPT-2 training step are left out")
    if args.scale:
        tf32 = (f"torch's TF32 settings as they are: matmul {torch.backends.cuda.matmul.allow_tf32}, cuDNN "
                f"{torch.backends.cudnn.allow_tf32}; " if args.device == "cuda" else "")
        lines.append(f"- {tf32}accuracy: torch._dynamo.utils.same against a float64 copy of the model at tolerance "
                     f"{scale.TOLERANCE:g} (RMSE ratios printed: scale_workloads.py)")
    if args.device == "cpu" and args.scale:
        lines.append("- a sweep row's time is one pass over its sequence lengths (graphs: mlir's), a loop row's "
                     "100 calls of the compiled training step (its accuracy: the first step's)")
    elif args.device == "cuda":
        lines.append("- TF32 off (matmul and cuDNN): float32 compared with float32")
    return "\n".join(lines) + "\n"


def thread_counts(text: str) -> dict[int, str]:
    """'default,1' -> {torch's default: its label, 1: '1 thread'}, each count once."""
    default = torch.get_num_threads()
    counts = [default if t.strip() == "default" else int(t) for t in text.split(",") if t.strip()]
    return {n: f"{n} thread(s)" + (" (torch's default)" if n == default else "") for n in counts}


def cold_caches() -> list[str]:
    """Fresh cache folders for this run, inductor's (its FX graph and AOTAutograd caches off) and
    mlir's on-disk compile cache: both compile times are cold, whatever earlier runs left on disk."""
    import torch._functorch.config
    import torch._inductor.config

    folders = [tempfile.mkdtemp(prefix="bench_models_inductor_"), tempfile.mkdtemp(prefix="bench_models_mlir_")]
    os.environ["TORCHINDUCTOR_CACHE_DIR"], os.environ["DYNAMO_MLIR_CACHE_DIR"] = folders
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    return folders


def warm_up(device: str):
    """Pay each backend's one-time start-up (imports, inductor's headers) outside the tables."""
    x = torch.ones(4, device=device)
    for how in BACKENDS.values():
        _fresh()
        _compiled(lambda t: t + 1, how)(x)


def choose(args) -> dict:
    if args.scale:
        chosen = scale.scale_workloads(args.device)
    elif args.train:
        chosen = train_workloads(args.device)
    else:
        chosen = inference_workloads(args.device) | train_workloads(args.device, everything=False)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(chosen))
        if unknown:
            raise SystemExit(f"bench_models: unknown workload(s) {unknown}; known: {sorted(chosen)}")
        chosen = {k: v for k, v in chosen.items() if k in wanted}
    return chosen


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where to run (default cpu)")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per backend, median reported "
                                                                 "(default 20; 5 with --quick)")
    parser.add_argument("--threads", default=None,
                        help="comma-separated torch intra-op thread counts, each its own table; 'default' is "
                             "torch's (default: 'default,1' on cpu, 'default' on cuda and with --quick)")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--train", action="store_true", help="all training steps instead (train_workloads.py)")
    parser.add_argument("--scale", action="store_true",
                        help="the workloads at real sizes instead (scale_workloads.py), judged against a float64 "
                             "copy: on cuda GPT-2, BERT, LLaMA 1B, ViT, ResNet-50, AMP training steps, GEMMs; on cpu "
                             "issue 27's table (4-layer GPT-2 small, BERT-base, ViT-B/16; GPT-2 and ResNet-50 steps; "
                             "a GPT-2 sweep over 4 lengths, dynamic shapes; the MLP; a 100-step MLP Adam loop; LLaMA)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 repeats, one thread count")
    parser.add_argument("--reduce-overhead", action="store_true",
                        help="on cuda, also time the models with mode=\"reduce-overhead\" (the one-op graphs always are)")
    parser.add_argument("--out", default="", help="also write the tables (markdown) to this file")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (5 if args.quick else 20)
    args.threads = args.threads or ("default" if args.quick or args.device == "cuda" else "default,1")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_models: --device cuda needs a CUDA GPU, and torch sees none here "
              f"(torch {torch.__version__}); use --device cpu", file=sys.stderr)
        return 2
    if args.device == "cuda" and not args.scale:  # --scale keeps torch's defaults, as a user has them
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    counts = thread_counts(args.threads)
    chosen = choose(args)
    folders = cold_caches()
    text = header(args)
    print(text, flush=True)
    try:
        warm_up(args.device)
        for n, label in counts.items():  # on a shared machine, an oversubscribed OpenMP pool makes times noise
            torch.set_num_threads(n)
            section = report(measure_all(chosen, args, BACKENDS), args, label)
            print(section, flush=True)
            text += "\n" + section
            if args.out:  # after each table, so that an interrupted run keeps what it measured
                with open(args.out, "w") as f:
                    f.write(text)
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
