"""What a torch.compile call costs before any backend's work, on this host (CPU).

The per-call lines of issues 13 and 14 ask a one-op graph to cost at most eager + 10 us. This
script splits such a call into its parts, each timed the same way (median of 25 samples of 200
calls, every variant in each round):

  eager                      the op called directly
  dynamo alone               torch.compile with a backend returning precomputed outputs: Dynamo's
                             guards, its frame and the call into the backend, and no work at all
  dynamo floor               a backend returning Dynamo's graph as is (the op run eagerly inside)
  mlir                       backend="mlir"
  mlir's callable alone      the callable our backend returned, called directly (no Dynamo)
  torch.empty / the op, inside Dynamo   a backend whose callable does only that: what one torch
                             call costs when made from inside a compiled frame, against the same
                             call made directly (torch.empty / the op, plain)

On CUDA (--device cuda) each sample ends with a synchronize, so a time is the host's cost per
call plus what the launches left to wait for (a one-op graph: one kernel, a few microseconds).

    python benchmarks/dynamo_floor.py [--threads 1] [--graph add|mlp] [--device cpu|cuda]
"""

import argparse
import statistics
import time

import torch

from dynamo_mlir.frontend.backend import mlir_backend
from dynamo_mlir.tools.models import mlp

ROUNDS, CALLS = 25, 200


def _median_us(fns: dict, sync) -> dict:
    samples = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            for _ in range(CALLS):
                fn()
            sync()
            samples[name].append((time.perf_counter() - t0) / CALLS * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def _graph(name: str, device: str):
    torch.manual_seed(0)
    if name == "mlp":
        model = mlp().eval().to(device)
        return model, (torch.randn(64, 10, device=device),), lambda: mlp().eval().to(device)
    add = lambda a, b: a + b  # noqa: E731
    return add, (torch.randn(64, 256, device=device), torch.randn(64, 256, device=device)), lambda: (lambda a, b: a + b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--graph", choices=("add", "mlp"), default="add")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    fn, inputs, fresh = _graph(args.graph, args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    held = {}

    def ours(gm, example):
        compiled = mlir_backend(gm, example)
        held["fn"], held["inputs"] = compiled, example
        return compiled

    def fixed_outputs(gm, example):
        outputs = gm.forward(*example)
        return lambda *_: outputs

    out_shape = fn(*inputs).shape
    variants = {
        "dynamo alone": fixed_outputs,
        "dynamo floor": lambda gm, example: gm.forward,
        "mlir": ours,
        "torch.empty, inside Dynamo": lambda gm, example: (lambda *_: [torch.empty(out_shape, device=args.device)]),
    }
    if args.graph == "add":
        variants["the op, inside Dynamo"] = lambda gm, example: (lambda a, b: [a + b])
    compiled = {name: torch.compile(fresh(), backend=backend) for name, backend in variants.items()}
    with torch.no_grad():
        for c in compiled.values():
            c(*inputs)
        fns = {"eager": lambda: fn(*inputs), **{k: (lambda c=c: c(*inputs)) for k, c in compiled.items()},
               "mlir's callable alone": lambda: held["fn"](*held["inputs"]),
               "torch.empty, plain": lambda: torch.empty(out_shape, device=args.device)}
        if args.graph == "add":
            fns["the op, plain"] = lambda: inputs[0] + inputs[1]
        times = _median_us(fns, sync)
    print(f"{args.graph} on {args.device}, {args.threads} thread(s), torch {torch.__version__}; "
          f"us per call, median of {ROUNDS} x {CALLS}")
    print("| variant | us | minus eager |")
    print("|---|---|---|")
    for name, us in times.items():
        print(f"| {name} | {us:.1f} | {us - times['eager']:+.1f} |")


if __name__ == "__main__":
    main()
