"""Host time a replayed call (mode="reduce-overhead", or cuda graphs in default mode) spends on
its key before the replay: which replay serves these inputs (codegen/cuda/runtime.py,
GraphedFunction: `_key` and `_replays_for`), for a GPT-2 small-like graph of 150 parameters and
one input of symbolic length. The GPU waits for it at the start of every call. Runs on CPU (the
bookkeeping reads only tensors' metadata): the key as the compiled signature shapes it
(runtime.InputLayouts) against every input keyed by shape, stride and address (as if no input's
layout were known), medians of 7 runs of 2000 calls.

Usage:  python benchmarks/replay_key_cost.py
"""

import statistics
import timeit
from types import SimpleNamespace

import torch

from dynamo_mlir.codegen.cuda import runtime
from dynamo_mlir.codegen.signature import TensorSpec

PARAMS = 150


def graphed(specs) -> runtime.GraphedFunction:
    return runtime.GraphedFunction(SimpleNamespace(signature=SimpleNamespace(name="gpt2_like", inputs=specs)))


def per_call_us(f: runtime.GraphedFunction, inputs) -> float:
    def call():
        f._replays_for(inputs, runtime._key(inputs, f.layouts.varying))

    call()
    return statistics.median(timeit.repeat(call, number=2000, repeat=7)) / 2000 * 1e6


def main() -> None:
    params = [torch.nn.Parameter(torch.randn(64, 64)) for _ in range(PARAMS)]
    inputs = [torch.randint(0, 100, (8, 128))] + params
    specs = (TensorSpec((8, -1), torch.int64),) + tuple(TensorSpec((64, 64), torch.float32) for _ in params)
    shaped = per_call_us(graphed(specs), inputs)
    unknown = per_call_us(graphed(tuple(TensorSpec((-1, -1), s.dtype) for s in specs)), inputs)
    print(f"{PARAMS} parameters + 1 input of symbolic length, host us a call to find the replay:")
    print(f"  keyed by the signature's layouts: {shaped:.1f}")
    print(f"  every input keyed by shape (no layout known): {unknown:.1f}")


if __name__ == "__main__":
    main()
