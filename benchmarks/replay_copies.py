"""Which inputs each CUDA-graph replay of a bench_models.py --scale workload copies into buffers of
its own instead of reading them in place (codegen/cuda/runtime.py's _Replay: static inputs and
other replays' outputs are read in place, the rest copied before every replay): per captured
replay, its region, how many inputs it copies and their bytes, grouped by shape and dtype, and
what those tensors are (a parameter, a tensor requiring grad, a view).

Usage (GPU machine):  python benchmarks/replay_copies.py [WORKLOAD] [--steps 4] [--top 12]
"""

import argparse
import collections
import os
import sys

import torch

import dynamo_mlir  # noqa: F401  (registers backend="mlir")
from dynamo_mlir.codegen.cuda import runtime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_workloads as scale  # noqa: E402


def _kind(t: torch.Tensor) -> str:
    if isinstance(t, torch.nn.Parameter):
        return "parameter"
    return "view" if t._base is not None else ("requires grad" if t.requires_grad else "plain")


def _recording(captures: list):
    """_Replay.__init__ wrapped to note the inputs each capture will copy at every replay."""
    capture = runtime._Replay.__init__

    def init(self, fn, inputs, in_place):
        capture(self, fn, inputs, in_place)
        copied = [(tuple(t.shape), str(t.dtype).removeprefix("torch."), t.numel() * t.element_size(), _kind(t))
                  for t, p in zip(inputs, in_place) if not p and isinstance(t, torch.Tensor)]
        captures.append((fn.signature.name, len(inputs), copied))
    return init


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", default="train_gpt2_amp")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    captures: list = []
    runtime._Replay.__init__ = _recording(captures)
    fn, inputs, grad = scale.called(scale.scale_workloads("cuda")[args.workload], "mlir")
    with torch.set_grad_enabled(grad):
        for _ in range(args.steps):
            fn(*inputs)
    torch.cuda.synchronize()
    for name, n, copied in captures:
        total = sum(b for *_, b, _ in copied)
        print(f"{name}: copies {len(copied)} of {n} inputs, {total / 2**20:.1f} MiB a replay")
        groups = collections.Counter((shape, dtype, kind) for shape, dtype, _, kind in copied)
        for (shape, dtype, kind), count in groups.most_common(args.top):
            print(f"  {count:4d} x {dtype} {list(shape)} ({kind})")


if __name__ == "__main__":
    main()
