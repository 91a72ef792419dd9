"""Cold compile time of the demo's models on the cpu target: the first call of a fresh
torch.compile, and the time in each of our stages, medians over --repeat compiles.

    python benchmarks/compile_time.py [--repeat 5] [--passes 8]

(Dynamo and AOTAutograd's own time is the rest of the first call; `object` is LLVM's code
generation, `load` the link; before the object stage, `load` was the JIT. Compiles with the compile
cache off: every stage runs.) With
--passes N, the N named passes (codegen/passes.py) that took longest, per model.
"""

import argparse
import statistics
import time

import torch

import dynamo_mlir
from dynamo_mlir.tools.models import cnn, transformer_block

MODELS = {"transformer_block": (transformer_block, lambda: torch.randn(8, 16, 64)),
          "cnn": (cnn, lambda: torch.randn(2, 3, 32, 32))}


def measure(build, make_input, repeat: int) -> tuple[float, dict, dict]:
    model, x = build().eval(), make_input()
    firsts, stages, passes = [], {}, {}
    for _ in range(repeat):
        torch._dynamo.reset()
        dynamo_mlir.reset()
        t0 = time.perf_counter()
        with torch.no_grad():
            torch.compile(model, backend="mlir", options={"cache": False})(x)  # cold: every stage runs
        firsts.append(time.perf_counter() - t0)
        for stage, seconds in dynamo_mlir.stats()["stage_seconds"].items():
            stages.setdefault(stage, []).append(seconds)
        for name, seconds in dynamo_mlir.stats()["pass_seconds"].items():
            passes.setdefault(name, []).append(seconds)
    median = lambda d: {k: statistics.median(v) for k, v in d.items()}  # noqa: E731
    return statistics.median(firsts), median(stages), median(passes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--passes", type=int, default=0, help="also list the N slowest named passes")
    args = parser.parse_args()
    torch.set_num_threads(1)
    columns = ("dynamo", "linalg", "loops", "llvm", "object", "load")
    print("| model | first call s | " + " | ".join(f"{s} ms" for s in columns) + " | all stages ms |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    slowest = {}
    for name, (build, make_input) in MODELS.items():
        first, stages, passes = measure(build, make_input, args.repeat)
        cells = " | ".join(f"{stages.get(s, 0) * 1e3:.1f}" for s in columns)
        print(f"| {name} | {first:.3f} | {cells} | {sum(stages.values()) * 1e3:.1f} |")
        slowest[name] = sorted(passes.items(), key=lambda kv: -kv[1])[:args.passes]
    for name, rows in slowest.items():
        if rows:
            print(f"\n{name}, slowest passes: " + ", ".join(f"{p} {s * 1e3:.1f} ms" for p, s in rows))


if __name__ == "__main__":
    main()
