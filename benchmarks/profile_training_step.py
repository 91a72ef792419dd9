"""Where a compiled training step's host time goes (GPT-2's by default): torch.profiler over a
few steps.

The counts this prints (aten::copy_ and aten::_foreach_copy_ calls per step, the regions, the
eager ops) are what docs/architecture.md's "The per-call path" and frontend/input_mutations.py
quote: AOTAutograd's per-tensor copies of an optimizer step, the CUDA replays' input copies.

    python benchmarks/profile_training_step.py [--device cuda] [--steps 3] [--backend mlir]
        [--workload train_gpt2_adamw]   (a name of train_workloads.py)
"""

import argparse
import collections
import os
import sys

import torch
from torch.profiler import profile

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_workloads import HAVE_TRANSFORMERS, make_step, training  # noqa: E402

COUNTED = ("aten::copy_", "aten::_foreach_copy_")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps (after 5 warm-up steps)")
    parser.add_argument("--backend", default="mlir", help="torch.compile backend (eager: none)")
    parser.add_argument("--workload", default="train_gpt2_adamw", help="a training workload of train_workloads.py")
    parser.add_argument("--copy-shapes", action="store_true",
                        help="also list aten::copy_ calls grouped by shape (destination <- source), by total time")
    args = parser.parse_args(argv)
    if not HAVE_TRANSFORMERS and args.workload == "train_gpt2_adamw":
        raise SystemExit("profile_training_step: transformers is not installed (the GPT-2 step needs it)")
    w = training(args.workload, args.device)
    step = make_step(w)
    if args.backend != "eager":
        step = torch.compile(step, backend=args.backend)
    for _ in range(5):
        step(w.inputs, w.target)
    if args.device == "cuda":
        torch.cuda.synchronize()
    with profile(record_shapes=args.copy_shapes) as prof:
        for _ in range(args.steps):
            step(w.inputs, w.target)
        if args.device == "cuda":
            torch.cuda.synchronize()
    events = {e.key: e for e in prof.key_averages()}
    for name in COUNTED:
        calls = events[name].count if name in events else 0
        print(f"{name}: {calls} calls in {args.steps} steps ({calls / args.steps:.0f} a step)")
    if args.backend == "mlir":
        s = dynamo_mlir.stats()
        print({k: s[k] for k in ("graphs", "partitions", "ops_compiled", "ops_library", "ops_fallback", "fallback_ops")})
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
    if args.copy_shapes:
        print_copy_shapes(prof, args.steps)


def print_copy_shapes(prof, steps: int) -> None:
    calls, micros = collections.Counter(), collections.Counter()
    for e in prof.events():
        if e.name == "aten::copy_":
            key = f"{e.input_shapes[0]} <- {e.input_shapes[1]}"
            calls[key] += 1
            micros[key] += e.cpu_time_total
    print(f"aten::copy_ by shape, a step: {sum(micros.values()) / steps / 1000:.1f} ms in {sum(calls.values()) // steps} calls")
    for key in sorted(calls, key=lambda k: -micros[k])[:15]:
        print(f"  {calls[key] // steps:4d} calls {micros[key] / steps / 1000:6.2f} ms  {key}")


if __name__ == "__main__":
    main()
