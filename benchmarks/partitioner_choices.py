"""A training step of scale_workloads.py under each `partitioner` option, round-robin in one run.

What the joint-graph rewrites (partitioner="default": saved_log_softmax.py, recomputed_pointwise.py)
buy against AOTAutograd's split as traced (save_all) and its min-cut (min_cut), on the same
machine in the same process: median time per step (CUDA: device events), and on CUDA the memory
each choice adds at its peak, from before it is built through its compile, warm-up and a steady
step (torch.cuda.max_memory_allocated above what the choices before it hold: its model copy,
the values its forward saves, its CUDA-graph pools).

    python benchmarks/partitioner_choices.py train_gpt2_small_4l [--device cpu] [--repeats 15]
    python benchmarks/partitioner_choices.py train_gpt2_amp --device cuda
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import scale_workloads as scale

CHOICES = ("save_all", "default", "min_cut")


def _timed(fn, args, cuda: bool) -> float:
    if not cuda:
        start = time.perf_counter()
        fn(*args)
        return (time.perf_counter() - start) * 1e3
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    fn(*args)
    end.record()
    end.synchronize()
    return begin.elapsed_time(end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--choices", default=",".join(CHOICES))
    args = parser.parse_args()
    cuda = args.device == "cuda"
    w = scale.scale_workloads(args.device)[args.workload]
    steps, peaks = {}, {}
    for choice in args.choices.split(","):
        if cuda:  # what this choice adds (its model copy, saved values, CUDA-graph pools), at its peak
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        fn, inputs, _ = scale.called(w, "mlir", {"partitioner": choice})
        for _ in range(4):  # compile, warm, a steady step
            fn(*inputs)
        if cuda:
            torch.cuda.synchronize()
            peaks[choice] = (torch.cuda.max_memory_allocated() - base) / 2**20
        steps[choice] = (fn, inputs)
    times: dict[str, list[float]] = {c: [] for c in steps}
    order = list(steps)
    for i in range(args.repeats):  # each round starts one choice later
        for choice in order[i % len(order):] + order[:i % len(order)]:
            times[choice].append(_timed(*steps[choice], cuda))
    device = torch.cuda.get_device_name() if cuda else f"cpu, {torch.get_num_threads()} threads"
    print(f"{args.workload} on {device}, median of {args.repeats} steps per choice (round-robin)")
    print("| partitioner | ms per step | min ms |" + (" peak MiB added |" if cuda else ""))
    print("|---|---|---|" + ("---|" if cuda else ""))
    for choice, ts in times.items():
        peak = f" {peaks[choice]:.0f} |" if cuda else ""
        print(f"| {choice} | {statistics.median(ts):.2f} | {min(ts):.2f} |{peak}")


if __name__ == "__main__":
    main()
