"""One backend's compiled workload called in a loop for a while, for a sampling profiler (perf)
to attribute its time: the library calls, our generated code (perf's `[JIT]`), the thread pool's
waits (libgomp), Python.

    perf record -D 30000 -F 2000 -o mlir.data python benchmarks/loop_workload.py llama_2l_128 mlir 45
    perf report -i mlir.data --no-children --sort dso -g none

WORKLOAD: a workload of bench_models.py --scale on cpu (scale_workloads.py): an inference one
called under no_grad, or a training step (train_workloads.make_step: forward, backward, the
optimizer's step, all compiled), e.g. train_resnet50_b2_sgd. Building
them all and compiling take tens of seconds before the loop: perf's -D (a delay, in ms) keeps
them out of the samples (without it, a 15 s loop's profile was several percent random-number
generation of the models' weights).
"""

import argparse
import os
import sys
import time

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("backend", choices=("eager", "inductor", "mlir"))
    parser.add_argument("seconds", type=float)
    args = parser.parse_args(argv)
    fn, inputs, grad = scale.called(scale.scale_workloads("cpu")[args.workload], args.backend)
    with torch.set_grad_enabled(grad):
        for _ in range(20):  # compile, warm up
            fn(*inputs)
        t0, calls = time.perf_counter(), 0
        while time.perf_counter() - t0 < args.seconds:
            fn(*inputs)
            calls += 1
    print(f"{args.workload} {args.backend}: {(time.perf_counter() - t0) / calls * 1e3:.3f} ms a call over {calls} calls")


if __name__ == "__main__":
    main()
