"""Which torch copies a compiled call launches, and from where: torch.profiler over a few calls of
a CLI factory's model (benchmarks/scale_cli_models.py), listing aten::copy_ calls by input shapes
with the op that called them. Only calls the host makes show: on cuda, a copy inside a replayed
CUDA graph (a library call's own copy, recorded once) has no aten::copy_ event; read the host
schedule (`dynamo-mlir dump ... --target cuda`, *.host.txt) for those.

    python benchmarks/copy_probe.py [--model llama_1b_bf16] [--calls 3] [--backend mlir]
"""

import argparse
import collections
import os
import sys

import torch
from torch.profiler import profile

import dynamo_mlir  # noqa: F401  (registers the backend)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_cli_models  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama_1b_bf16")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--backend", default="mlir")
    args = parser.parse_args(argv)
    model, inputs = getattr(scale_cli_models, args.model)()
    compiled = torch.compile(model, backend=args.backend)
    with torch.no_grad():
        for _ in range(3):
            compiled(*inputs)
        torch.cuda.synchronize() if torch.cuda.is_available() else None
        with profile(record_shapes=True, with_stack=True) as p:
            for _ in range(args.calls):
                compiled(*inputs)
    copies = collections.Counter()
    for e in p.events():
        if e.name == "aten::copy_":
            parent = e.cpu_parent.name if e.cpu_parent else None
            grand = e.cpu_parent.cpu_parent.name if e.cpu_parent and e.cpu_parent.cpu_parent else None
            stack = " < ".join(s for s in (e.stack or [])[:4])
            copies[(str(e.input_shapes)[:100], parent, grand, stack[:300])] += 1
    for (shapes, parent, grand, stack), n in copies.most_common(12):
        print(f"{n // args.calls:4d} a call  {shapes}  from {parent} < {grand}\n      {stack}")


if __name__ == "__main__":
    main()
