"""Inference freezing (options={"freeze": True}) measured: each model in one process under eager,
inductor, inductor with its freezing, mlir and mlir with freeze, timed round-robin
(bench_models.time_backends), medians; the frozen graphs judged against a float64 copy of the
model (scale_workloads.accuracy, PyTorch's benchmark-suite rule).

The batch norms get random statistics and affine parameters first, so that folding them into
the convolutions changes numbers (a freshly built model's are 0, 1, 1 and 0).

Inductor freezes only while `torch._inductor.config.freezing` is set when Dynamo traces (it then
makes the parameters graph attributes), so its frozen variant's calls run under that setting.

Usage:  python benchmarks/freezing.py [--device cpu|cuda] [--models resnet50,bert,gpt2] [--repeats 9]
        [--batch N] [--out FILE]
"""

import argparse
import copy
import datetime
import os
import sys

import torch

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_models  # noqa: E402
import scale_workloads as scale  # noqa: E402


def _randomize_batch_norms(model: torch.nn.Module, g: torch.Generator) -> None:
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def workloads(device: str, batch: int, g: torch.Generator) -> dict:
    """name -> (model, inputs)"""
    image = torch.randn(batch, 3, 224, 224, generator=g)
    resnet = scale._resnet50()
    _randomize_batch_norms(resnet, g)
    ids = torch.randint(0, 30522, (batch, 128), generator=g)
    return {
        "resnet50": (scale.Logits(resnet, "pixel_values"), (image,)),
        "bert": (scale.Logits(scale.bert(layers=4 if device == "cpu" else 12), "input_ids"), (ids,)),
        "gpt2": (scale.Logits(scale.gpt2(layers=4 if device == "cpu" else 12), "input_ids"), (ids % 50257,)),
    }


class _InductorFrozen:
    """inductor with its freezing on while Dynamo traces and the graph runs."""

    def __init__(self, model):
        self.fn = torch.compile(model)

    def __call__(self, *inputs):
        with torch._inductor.config.patch(freezing=True):
            return self.fn(*inputs)


def measure(name, model, inputs, device: str, repeats: int) -> dict:
    bench_models._fresh()
    model = model.to(device).eval()
    inputs = tuple(x.to(device) for x in inputs)
    with torch.no_grad():
        fns = {
            "eager": model,
            "inductor": torch.compile(copy.deepcopy(model)),
            "inductor freezing": _InductorFrozen(copy.deepcopy(model)),
            "mlir": torch.compile(copy.deepcopy(model), backend="mlir"),
            "mlir freeze": torch.compile(copy.deepcopy(model), backend="mlir", options={"freeze": True}),
        }
        timings = bench_models.time_backends(fns, inputs, repeats, device)
        stats = dynamo_mlir.stats()
        eager_out, frozen_out, plain_out = model(*inputs), fns["mlir freeze"](*inputs), fns["mlir"](*inputs)
    w = scale.ScaleInference(model, inputs, group="freezing")
    return {"name": name, "ms": {k: t[1] * 1e3 for k, t in timings.items()},
            "frozen": stats["inputs_frozen"], "folds": stats["frozen_folds"], "eager_ops": stats["ops_fallback"],
            "ok": scale.accuracy(scale.inference_errors(w, eager_out, frozen_out)),
            "ok_plain": scale.accuracy(scale.inference_errors(w, eager_out, plain_out))}


def table(rows) -> str:
    names = list(rows[0]["ms"])
    lines = ["| model | " + " | ".join(f"{n} ms" for n in names)
             + " | mlir freeze vs mlir | vs inductor freezing | vs eager | frozen, folded | eager ops | accuracy (freeze) |",
             "|---" * (len(names) + 7) + "|"]
    for r in rows:
        ms = r["ms"]
        folds = ", ".join(f"{n} {k}" for k, n in r["folds"].items())
        lines.append(f"| {r['name']} | " + " | ".join(f"{ms[n]:.2f}" for n in names)
                     + f" | {ms['mlir'] / ms['mlir freeze']:.2f}x | {ms['inductor freezing'] / ms['mlir freeze']:.2f}x"
                     + f" | {ms['eager'] / ms['mlir freeze']:.2f}x | {r['frozen']}; {folds} | {r['eager_ops']} | {r['ok']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--batch", type=int, default=None, help="default: 2 on cpu, 32 on cuda")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    batch = args.batch or (2 if args.device == "cpu" else 32)
    g = torch.Generator().manual_seed(0)
    chosen = {k: v for k, v in workloads(args.device, batch, g).items() if k in args.models.split(",")}
    rows = [measure(name, model, inputs, args.device, args.repeats) for name, (model, inputs) in chosen.items()]
    device = torch.cuda.get_device_name() if args.device == "cuda" else f"{torch.get_num_threads()} CPU threads"
    text = (f"# Inference freezing, {datetime.date.today()}, {device}, batch {batch}, torch {torch.__version__}\n\n"
            f"`python benchmarks/freezing.py --device {args.device} --models {args.models} --repeats {args.repeats}`"
            f" (tree {bench_models._commit()}); median ms a call, {args.repeats} round-robin samples.\n\n"
            + table(rows) + "\n\nAccuracy of plain mlir: " + "; ".join(f"{r['name']} {r['ok_plain']}" for r in rows) + "\n")
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
