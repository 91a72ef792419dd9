"""What the cuda target makes of the AMP GPT-2 training step, counted without a GPU.

The step of `bench_models.py --scale`'s train_gpt2_amp (GPT-2 small under bf16 autocast, 8 x 512
tokens; the loss and its backward, and with --optimizer the AdamW step after them as the benchmark
runs it: foreach, as torch picks on CUDA tensors) is compiled for the cuda target on CPU tensors:
every stage is generated (PTX included) and nothing runs (the loader's regions return zeros, so
the backward graph is compiled too). Autocast on CPU tensors is CPU's, which differs from CUDA's
where GPT-2 meets it: CUDA's runs `pow` in float32, so `torch.pow` is replaced by one that does
that for the compile (_cuda_autocast_pow). Per graph it prints the kernel launches and library calls of
the host schedule, and the bytes of the buffers each launch takes as arguments, summed over
launches: an upper bound on what the kernels move (a launch that fills 7 columns of a buffer
counts the whole buffer). Launches and bytes are what a change to the code generator moves
before any GPU has timed it.

    python benchmarks/cuda_schedule_counts.py [--layers 12] [--optimizer] [--dump DIR]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import re
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import dynamo_mlir  # noqa: E402
from dynamo_mlir.codegen.target import get_target, register_target  # noqa: E402
from dynamo_mlir.frontend import backend  # noqa: E402
from scale_workloads import Autocast, _token_loss, gpt2  # noqa: E402
from workloads import Logits  # noqa: E402

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4, "bool": 1, "int8": 1, "uint8": 1,
         "float64": 8}


_POW = torch.pow


def _cuda_autocast_pow(x, exponent, *args, **kwargs):
    """torch.pow as CUDA's autocast runs it, in float32 (its float32 list has pow; the CPU's
    leaves it in the half type): GPT-2's gelu_new, `torch.pow(x, 3.0)`, is a float32 chain on a
    GPU, and this script's CPU tensors would otherwise compile a bf16 one."""
    if torch.is_autocast_enabled("cpu") and isinstance(x, torch.Tensor) and x.dtype in (torch.bfloat16,
                                                                                       torch.float16):
        x = x.float()
    return _POW(x, exponent, *args, **kwargs)


def compile_step(layers: int, dump: str, optimizer: bool) -> None:
    torch.manual_seed(0)
    model = Autocast(Logits(gpt2(layers=layers), "input_ids"), torch.bfloat16)
    ids = torch.randint(0, 50257, (8, 512))
    # CPU tensors would get the per-tensor loop; the benchmark's CUDA parameters get foreach.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True) if optimizer else None

    def step(ids, labels):
        loss = _token_loss(model(ids), labels)
        if opt is not None:
            loss.backward()
            opt.step()
        return loss

    cuda = get_target("cuda")
    zeros = lambda artifact, sig, options: lambda *inputs: [torch.zeros(o.shape, dtype=o.dtype)  # noqa: E731
                                                             for o in sig.outputs]
    keeps = backend.keeps_fused_attention
    register_target(dataclasses.replace(cuda, load=zeros), override=True)
    # On a GPU the backend keeps SDPA fused for the library call; on CPU tensors it would not.
    backend.keeps_fused_attention = lambda *args, **kwargs: True
    torch.pow = _cuda_autocast_pow
    try:
        options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": dump}
        loss = torch.compile(step, backend="mlir", options=options)(ids, ids.roll(-1, dims=1))
        if opt is None:
            loss.backward()
    finally:
        register_target(cuda, override=True)
        backend.keeps_fused_attention, torch.pow = keeps, _POW


def _buffer_bytes(schedule: str) -> dict[str, int]:
    """%n -> bytes, for the host function's arguments and its `empty` buffers."""
    sizes = {}
    for name, dims, dtype in re.findall(r"%(\d+): ([0-9x]*?)x?([a-z]+[0-9]*)\b", schedule.splitlines()[0]):
        count = 1
        for d in filter(None, dims.split("x")):
            count *= int(d)
        sizes[name] = count * BYTES.get(dtype, 4)
    for name, count, dtype in re.findall(r"%(\d+) = empty\((\d+), (\w+)\)", schedule):
        sizes[name] = int(count) * BYTES.get(dtype, 4)
    return sizes


def counts(schedule: str) -> tuple[int, int, int]:
    """(launches, library calls, bytes of the launches' buffers)."""
    sizes = _buffer_bytes(schedule)
    launches = [line for line in schedule.splitlines() if line.lstrip().startswith("launch ")]
    library = sum(1 for line in schedule.splitlines() if line.lstrip().startswith("torch "))
    moved = sum(sum(sizes.get(a, 0) for a in set(re.findall(r"%(\d+)(?![:\d])", line.rsplit(") (", 1)[-1])))
                for line in launches)
    return len(launches), library, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--optimizer", action="store_true", help="the AdamW step too, as bench_models times it")
    parser.add_argument("--dump", help="keep the stage dumps here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = args.dump or tmp
        compile_step(args.layers, dump, args.optimizer)
        stats = dynamo_mlir.stats()
        print(f"AMP GPT-2 step{' and AdamW' if args.optimizer else ''}, {args.layers} layers, 8 x 512, cuda target (sm_90) compiled on CPU; "
              f"{stats['ops_fallback']} ops eager")
        print("| graph | launches | library calls | launch buffers GB |\n|---|---|---|---|")
        totals = collections.Counter()
        for path in sorted(Path(dump).glob("*.host.txt")):
            launches, library, moved = counts(path.read_text())
            totals.update(launches=launches, library=library, moved=moved)
            print(f"| {path.name.removesuffix('.host.txt')} | {launches} | {library} | {moved / 1e9:.2f} |")
        print(f"| total | {totals['launches']} | {totals['library']} | {totals['moved'] / 1e9:.2f} |")


if __name__ == "__main__":
    main()
