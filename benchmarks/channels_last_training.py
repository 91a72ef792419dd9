"""A training step's convolutions channels-last against NCHW, by batch size: the evidence for the
cpu option channels_last_training (codegen/channels_last.training_pays).

ResNet-50 SGD steps (train_workloads.py's train_resnet50_b2_sgd, at other batch sizes), in one
process, round robin: mlir with channels_last_training=0 (always channels-last), mlir with inf
(never), and inductor. Prints median ms per step, the ratio of each mlir variant to inductor,
and the graphs' activation/weight element ratio that the option compares.

    python benchmarks/channels_last_training.py [--batches 2 8] [--repeats 6]
"""

import argparse
import os
import statistics
import sys
import time

import torch

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_workloads import make_step, training  # noqa: E402


def activation_weight_ratio(model: torch.nn.Module, x: torch.Tensor) -> float:
    """Sum of the convolutions' output elements over sum of their weights' elements."""
    sizes = [0, 0]

    def hook(module, _inputs, out):
        sizes[0] += out.numel()
        sizes[1] += module.weight.numel()

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return sizes[0] / sizes[1]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args(argv)
    w = training("train_resnet50_b2_sgd", "cpu")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for batch in args.batches:
        g = torch.Generator().manual_seed(batch)
        x = torch.randn(batch, *w.inputs.shape[1:], generator=g)
        y = torch.randint(0, 1000, (batch,), generator=g)
        steps = {
            "mlir channels-last": torch.compile(make_step(w), backend="mlir",
                                                options={"channels_last_training": 0.0}),
            "mlir NCHW": torch.compile(make_step(w), backend="mlir",
                                       options={"channels_last_training": float("inf")}),
            "inductor": torch.compile(make_step(w)),
        }
        for step in steps.values():
            for _ in range(2):
                step(x, y)
        times = {name: [] for name in steps}
        for _ in range(args.repeats):
            for name, step in steps.items():
                t0 = time.perf_counter()
                step(x, y)
                times[name].append(time.perf_counter() - t0)
        ratio = activation_weight_ratio(w.model, x)
        medians = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        print(f"batch {batch}: activations / weights {ratio:.2f}")
        for name, ms in medians.items():
            print(f"  {name:20s} {ms:8.1f} ms  vs inductor {medians['inductor'] / ms:.2f}x")
        torch._dynamo.reset()
    print(dynamo_mlir.stats()["saved_channels_last"], "saved tensors returned channels-last")


if __name__ == "__main__":
    main()
