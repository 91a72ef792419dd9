"""Minor page faults per call of the benchmark CNN (bench_models.py's `cnn`), compiled with the cpu
option channels_last on and off, and off with plan_memory off too (and inductor and eager, for
reference).

Each configuration runs in its own process (glibc's malloc adapts its mmap threshold to what
was freed before, so one configuration's calls would change another's faults), calls the model
a few times to warm up, then reads getrusage's ru_minflt around CALLS calls.

    python benchmarks/cnn_page_faults.py [--threads 1] [--calls 50]
"""

import argparse
import resource
import subprocess
import sys
import time

# mlir configurations: cpu options set (the rest at their defaults)
MLIR_CONFIGS = {
    "mlir channels_last=1": {"channels_last": True},
    "mlir channels_last=0": {"channels_last": False},
    "mlir channels_last=0 plan_memory=0": {"channels_last": False, "plan_memory": False},
}
CONFIGS = (*MLIR_CONFIGS, "inductor", "eager")


def measure(config: str, threads: int, calls: int) -> tuple[float, float]:
    """(minor faults per call, ms per call) of `config`, in this process."""
    import torch

    from dynamo_mlir.tools.models import cnn, randomize_batchnorm

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model, x = randomize_batchnorm(cnn(stages=3, image=64)).eval(), torch.randn(8, 3, 64, 64)
    if config in MLIR_CONFIGS:
        fn = torch.compile(model, backend="mlir", options=MLIR_CONFIGS[config])
    else:
        fn = torch.compile(model) if config == "inductor" else model
    with torch.no_grad():
        for _ in range(5):
            fn(x)
        before, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
        for _ in range(calls):
            fn(x)
        elapsed = time.perf_counter() - t0
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls, elapsed / calls * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--config", help=argparse.SUPPRESS)  # one configuration, in a child process
    args = parser.parse_args()
    if args.config:
        print(*measure(args.config, args.threads, args.calls))
        return
    print(f"cnn (8x3x64x64), {args.threads} thread(s), {args.calls} calls\n")
    print("| backend | minor faults / call | ms / call |\n|---|---|---|")
    for config in CONFIGS:
        out = subprocess.run([sys.executable, __file__, "--config", config, "--threads", str(args.threads),
                              "--calls", str(args.calls)], capture_output=True, text=True, check=True).stdout
        faults, ms = map(float, out.split()[-2:])
        print(f"| {config} | {faults:.0f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
