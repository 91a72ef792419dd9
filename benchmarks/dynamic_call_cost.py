"""Where one call of a graph compiled with symbolic sizes spends its time on the host: host
microseconds per call (a small layer norm, so the GPU is never the bound) for eager, inductor and
mlir with dynamic=True and dynamic=False, and the functions of our call path by own time (cProfile).

    python benchmarks/dynamic_call_cost.py [--calls 500] [--top 25]
"""

import argparse
import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import dynamo_mlir


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def host_us(fn, inputs, calls: int) -> float:
    for _ in range(5):
        fn(*inputs)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*inputs)
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    return host / calls * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    inputs = [torch.randn(64, 256, device="cuda"), torch.randn(256, device="cuda"), torch.randn(256, device="cuda")]
    print(f"# host us per call, layer norm 64x256 on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"eager: {host_us(layer_norm, inputs, args.calls):.1f}")
    compiled = {}
    for dynamic in (False, True):
        for backend in ("inductor", "mlir"):
            torch._dynamo.reset()
            dynamo_mlir.reset()
            fn = torch.compile(layer_norm, backend=backend, dynamic=dynamic)
            print(f"{backend} dynamic={dynamic}: {host_us(fn, inputs, args.calls):.1f}")
            compiled[backend, dynamic] = fn
    fn = compiled["mlir", True]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.calls):
        fn(*inputs)
    profiler.disable()
    torch.cuda.synchronize()
    print(f"\n# mlir dynamic=True, {args.calls} calls, by own time")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
