"""Where a workload of bench_models.py --scale spends its GPU time: torch.profiler over a few
calls of each backend asked for, the kernels (and library calls) by total CUDA time.

    python benchmarks/profile_scale.py WORKLOAD [--backends eager,mlir] [--calls 3] [--top 15] [--trace DIR] [--gaps] [--shapes] [--lead]

--trace writes each backend's Chrome trace (DIR/WORKLOAD_BACKEND.json): every kernel in launch
order with its grid and block, and the host's torch ops with their shapes (which op issued a copy), to be matched with the host schedules of a DYNAMO_MLIR_DUMP_DIR
dump (which kernel of which region took the time).
--shapes adds each listed kernel's launch shapes (grid x block, the distinct ones).
--gaps prints where the GPU sat idle between the profiled calls' first and last kernel: the
idle total per call and the largest gaps, each with the kernel before and after it (the host
not keeping up: a launch-bound stretch, a sync, a slow host step).
--lead times each profiled call on its own, started on an idle GPU and synchronized at its end, as
bench_models.py times a call: the host's lead (the call's start to the GPU's first kernel, copy
or fill: Dynamo's guards and the backend's set-up, which nothing hides), the GPU's span, and the
tail (its last kernel's end to the call's return), medians over the calls. The CPU side is
profiled too, which adds the profiler's cost per torch call to the lead.
"""

import argparse
import json
import os
import sys
import tempfile

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402


def _callable(w, backend: str):
    if isinstance(w, scale.ScaleSweep):  # one call is the sweep over its lengths
        return scale.sweep(w.fn if backend == "eager" else torch.compile(w.fn, backend=backend)), w.inputs
    fn, args, _ = scale.called(w, backend)
    return fn, args


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--backends", default="eager,mlir")
    parser.add_argument("--calls", type=int, default=3, help="profiled calls (after 3 warm-up calls)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--trace", help="a folder for each backend's Chrome trace")
    parser.add_argument("--gaps", action="store_true", help="the GPU's idle time between kernels")
    parser.add_argument("--shapes", action="store_true", help="each kernel's grid x block")
    parser.add_argument("--lead", action="store_true", help="host time before each call's first GPU work")
    args = parser.parse_args(argv)
    w = scale.scale_workloads("cuda")[args.workload]
    for backend in args.backends.split(","):
        torch._dynamo.reset()
        dynamo_mlir.reset()
        fn, inputs = _callable(w, backend)
        with torch.set_grad_enabled(isinstance(w, scale.ScaleTraining)):
            for _ in range(3):
                fn(*inputs)
            torch.cuda.synchronize()
            if args.lead:
                print_lead(fn, inputs, backend, args.calls)
            # A trace also holds the host's torch ops (with shapes), which name what issued each copy.
            host = [ProfilerActivity.CPU] if args.trace else []
            with profile(activities=[*host, ProfilerActivity.CUDA], record_shapes=bool(args.trace)) as prof:
                for _ in range(args.calls):
                    fn(*inputs)
                torch.cuda.synchronize()
        if args.trace:
            os.makedirs(args.trace, exist_ok=True)
            prof.export_chrome_trace(os.path.join(args.trace, f"{args.workload}_{backend}.json"))
        if args.gaps:
            print_gaps(prof, backend, args.calls, args.top)
        events = [e for e in prof.key_averages() if e.device_time_total > 0 and e.device_type == DeviceType.CUDA]
        total = sum(e.device_time_total for e in events) / args.calls / 1e3
        print(f"## {args.workload}, {backend}: {total:.2f} ms of kernels per call")
        shapes = launch_shapes(trace_events(prof)) if args.shapes else {}
        for e in sorted(events, key=lambda e: -e.device_time_total)[:args.top]:
            shown = "  " + " ".join(sorted(shapes.get(e.key, ()))[:3]) if shapes else ""
            print(f"{e.device_time_total / args.calls / 1e3:8.3f} ms  {e.count // args.calls:4d}x  {e.key[:110]}{shown}")
        if backend == "mlir":
            s = dynamo_mlir.stats()
            print("mlir:", {k: s[k] for k in ("ops_compiled", "ops_library", "ops_fallback", "fallback_ops",
                                           "inputs_written_in_place", "inputs_written_back")})


def trace_events(prof) -> list[dict]:
    """The profile's Chrome trace events (kernels with their grid and block)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]


def launch_shapes(events: list[dict]) -> dict[str, set[str]]:
    """kernel name -> its launches' shapes, `grid=AxBxC/block=D`."""
    shapes: dict[str, set[str]] = {}
    for e in events:
        args = e.get("args", {})
        if e.get("cat") == "kernel" and "grid" in args:
            grid = "x".join(str(g) for g in args["grid"])
            shapes.setdefault(e["name"], set()).add(f"grid={grid}/block={args['block'][0]}")
    return shapes


def print_gaps(prof, backend: str, calls: int, top: int) -> None:
    """Idle stretches of the GPU timeline (kernels, copies and fills of the profiled calls)."""
    events = trace_events(prof)
    work = sorted((e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in events
                  if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "ts" in e)
    if not work:
        return
    gaps, end, before = [], work[0][1], work[0][2]
    for start, stop, name in work[1:]:
        if start > end:
            gaps.append((start - end, before, name))
        if stop > end:
            end, before = stop, name
    span = (work[-1][1] - work[0][0]) / calls / 1e3
    idle = sum(g for g, _, _ in gaps) / calls / 1e3
    print(f"## {backend}: GPU span {span:.2f} ms per call, idle {idle:.2f} ms in {len(gaps) // calls} gaps per call")
    for gap, after, then in sorted(gaps, reverse=True)[:top]:
        print(f"{gap:9.1f} us  after {after[:60]}  before {then[:60]}")


def print_lead(fn, inputs, backend: str, calls: int) -> None:
    """Each call alone on an idle GPU (--lead): the host's lead, the GPU's span and the tail."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for k in range(calls):
            with torch.profiler.record_function(f"profiled call {k}"):
                fn(*inputs)
                torch.cuda.synchronize()
    events = trace_events(prof)
    work = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "ts" in e]
    rows = []
    for e in events:
        if e.get("cat") == "user_annotation" and e.get("name", "").startswith("profiled call"):
            start, stop = e["ts"], e["ts"] + e["dur"]
            inside = [w for w in work if start <= w[0] < stop]
            if inside:
                first, last = min(w[0] for w in inside), max(w[1] for w in inside)
                rows.append((first - start, last - first, stop - last, stop - start))
    if not rows:
        return
    med = lambda i: sorted(r[i] for r in rows)[len(rows) // 2] / 1e3  # noqa: E731
    print(f"## {backend}: call {med(3):.3f} ms = host lead {med(0):.3f} + GPU span {med(1):.3f} + tail {med(2):.3f} "
          f"(medians of {len(rows)} calls, each alone on an idle GPU)")


if __name__ == "__main__":
    main()
