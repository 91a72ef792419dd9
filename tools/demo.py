"""The demo: compile real models with backend="mlir", check them against eager, show what happened.

    python -m dynamo_mlir.tools.demo
"""

import argparse
import statistics
import sys
import time

import torch

import dynamo_mlir
from dynamo_mlir.tools.models import cnn, mlp, randomize_batchnorm, transformer_block

MODELS = {
    "mlp": (mlp, lambda: torch.randn(256, 10)),
    "cnn": (lambda: randomize_batchnorm(cnn()), lambda: torch.randn(8, 3, 32, 32)),
    "transformer_block": (transformer_block, lambda: torch.randn(8, 16, 64)),
}


def median_ms(fn, x, repeats: int = 30) -> float:
    for _ in range(3):
        fn(x)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def run(name: str) -> bool:
    torch.manual_seed(0)
    make_model, make_input = MODELS[name]
    model, x = make_model().eval(), make_input()
    dynamo_mlir.reset()
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(model, backend="mlir")
        t0 = time.perf_counter()
        got = compiled(x)
        compile_s = time.perf_counter() - t0
        expected = model(x)
        ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-5)
        eager_ms, mlir_ms = median_ms(model, x), median_ms(compiled, x)
    s = dynamo_mlir.stats()
    print(f"\n=== {name}: input {tuple(x.shape)} ===")
    print(dynamo_mlir.explain())
    print(f"matches eager (rtol 1e-4): {ok}   max abs diff {float((got - expected).abs().max()):.2e}")
    print(f"ops compiled {s['ops_compiled']}, library calls {s['ops_library']}, eager fallbacks {s['ops_fallback']}, "
          f"calls run eagerly at run time {s['runtime_fallback_calls']}, first call (compile) {compile_s:.2f} s")
    print(f"median time per call ({torch.get_num_threads()} thread): eager {eager_ms:.3f} ms, "
          f"mlir {mlir_ms:.3f} ms (eager/mlir = {eager_ms / mlir_ms:.2f}x)")
    return ok and s["ops_fallback"] == 0 and s["runtime_fallback_calls"] == 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"models to run: {', '.join(MODELS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    args.models = args.models or list(MODELS)
    # Our generated CPU code is single-threaded: time eager on one thread too, like for like
    # (and immune to an oversubscribed OpenMP pool on a shared machine).
    torch.set_num_threads(1)
    results = {name: run(name) for name in args.models}
    print("\nsummary: " + ", ".join(f"{n} {'OK' if ok else 'FAILED'}" for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
