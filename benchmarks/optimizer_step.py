"""An optimizer's step alone, compiled: eager vs inductor vs mlir over one model's parameters, in
one process, round-robin.

The update of a training step is an elementwise graph over every parameter, its gradient and its
state (SGD's momentum, Adam's moments): what decides its speed is how those loops run over tensors
of every shape a model has (a 3x3 convolution's weight: an innermost dim of 3). Gradients are
random and fixed; each backend steps its own copy of the parameters.

    python benchmarks/optimizer_step.py [--model resnet50|gpt2] [--optimizer sgd|adamw]
        [--threads 2] [--rounds 25]
"""

import argparse
import copy
import statistics
import time

import torch

OPTIMIZERS = {"sgd": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9),
              "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3)}


def _model(name: str) -> torch.nn.Module:
    import transformers as t

    if name == "resnet50":
        return t.ResNetForImageClassification(t.ResNetConfig(num_labels=1000))
    return t.GPT2LMHeadModel(t.GPT2Config(n_layer=4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50", choices=("resnet50", "gpt2"))
    parser.add_argument("--optimizer", default="sgd", choices=sorted(OPTIMIZERS))
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = _model(args.model)
    steps = {}
    for backend in ("eager", "inductor", "mlir"):
        params = [p.detach().clone().requires_grad_() for p in copy.deepcopy(model).parameters()]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = OPTIMIZERS[args.optimizer](params)
        opt.step()  # the state (momentum, moments) exists before the timed steps
        steps[backend] = opt.step if backend == "eager" else torch.compile(opt.step, backend=backend)
        for _ in range(3):
            steps[backend]()
    times = {b: [] for b in steps}
    for _ in range(args.rounds):
        for backend, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[backend].append(time.perf_counter() - t0)
    median = {b: statistics.median(v) * 1e3 for b, v in times.items()}
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.optimizer} step over {args.model}'s {n / 1e6:.1f}M parameters, {args.threads} thread(s), "
          f"median of {args.rounds} round-robin steps")
    print("| eager ms | inductor ms | mlir ms | eager/mlir | inductor/mlir |")
    print("|---|---|---|---|---|")
    print(f"| {median['eager']:.2f} | {median['inductor']:.2f} | {median['mlir']:.2f} | "
          f"{median['eager'] / median['mlir']:.2f} | {median['inductor'] / median['mlir']:.2f} |")


if __name__ == "__main__":
    main()
