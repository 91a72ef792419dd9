"""A transformers model called at several sequence lengths with PyTorch's automatic dynamic
shapes (the second length recompiles with symbolic sizes): what ran eagerly and why, how many
graphs were compiled, each length's error against eager, and the median time per call of
eager and mlir over the sweep (after one warm-up sweep). The model and the sweep are
scale_workloads.length_sweep / sweep, also the row gpt2_small_4l_sweep of
`bench_models.py --device cpu --scale` (there against inductor too).

    python benchmarks/dynamic_sweep.py [--model gpt2] [--layers 4] [--width 768] [--lengths 32,48,64,80]
        [--device cpu] [--repeats 5]
"""

import argparse
import statistics
import time

import torch

import dynamo_mlir
from scale_workloads import length_sweep, sweep


def _time(fn, inputs, device) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2", choices=["gpt2", "bert", "llama"])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--lengths", default="32,48,64,80")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5, help="timed sweeps (median reported)")
    args = parser.parse_args(argv)
    w = length_sweep(args.model, args.layers, args.width, [int(n) for n in args.lengths.split(",")], args.batch,
                     args.device)
    eager, compiled = sweep(w.fn), sweep(torch.compile(w.fn, backend="mlir"))
    with torch.no_grad():
        for x, got, want in zip(w.inputs, compiled(*w.inputs), eager(*w.inputs)):
            print(f"length {x.shape[1]}: max abs error against eager {(got - want).abs().max().item():.2e}")
        s = dynamo_mlir.stats()
        print(f"graphs {s['graphs']}, partitions {s['partitions']}, ops compiled {s['ops_compiled']}, "
              f"library {s['ops_library']}, eager {s['ops_fallback']}: {s['fallback_ops']}")
        for op, why in s["fallback_reasons"]:
            print(f"  eager: {op}: {why}")
        times = {"eager": [], "mlir": []}
        for _ in range(args.repeats):
            times["eager"].append(_time(eager, w.inputs, args.device))
            times["mlir"].append(_time(compiled, w.inputs, args.device))
    med = {k: statistics.median(v) / len(w.inputs) * 1e3 for k, v in times.items()}
    print(f"median per call over the sweep: eager {med['eager']:.1f} ms, mlir {med['mlir']:.1f} ms "
          f"(eager/mlir {med['eager'] / med['mlir']:.2f}); {torch.get_num_threads()} threads, {args.device}")


if __name__ == "__main__":
    main()
