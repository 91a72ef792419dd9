"""One training step of a train_workloads.py workload from the same weights, judged against a
float64 copy of the model: the loss's error and the gradients' RMSE of eager (at 2 threads and
at 1) and of mlir. For steps whose loss trajectory is too sensitive for bench_models' rtol rule
(batch norm over a tiny batch): eager's own thread counts show how far two correct runs drift.

    python benchmarks/step_accuracy.py train_resnet50_b2_sgd
"""

import argparse
import copy
import os
import sys

import torch

import dynamo_mlir

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_workloads import train_workloads  # noqa: E402


def _step(w, threads: int, compiled: bool = False, dtype=None):
    """(loss, flattened gradients) of one step of a fresh copy of w's model."""
    torch.set_num_threads(threads)
    torch._dynamo.reset()
    model, x = copy.deepcopy(w.model).train(), w.inputs
    if dtype is not None:
        model, x = model.to(dtype), x.to(dtype)
    fn = lambda x, y: w.loss(model(x), y)  # noqa: E731
    if compiled:
        fn = torch.compile(fn, backend="mlir")
    loss = fn(x, w.target)
    loss.backward()
    return loss.item(), torch.cat([p.grad.double().flatten() for p in model.parameters()])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    args = parser.parse_args(argv)
    w = train_workloads("cpu")[args.workload]
    ref_loss, ref_grads = _step(w, 2, dtype=torch.float64)
    for name, kwargs in (("eager, 2 threads", {"threads": 2}), ("eager, 1 thread", {"threads": 1}),
                         ("mlir, 2 threads", {"threads": 2, "compiled": True})):
        loss, grads = _step(w, **kwargs)
        rmse = (grads - ref_grads).pow(2).mean().sqrt().item()
        print(f"{name}: loss error {abs(loss - ref_loss):.2e}, gradient RMSE {rmse:.2e}", flush=True)
    s = dynamo_mlir.stats()
    print(f"mlir: {s['ops_fallback']} ops eager, {sum(s['library_ops'].values())} library calls")


if __name__ == "__main__":
    main()
