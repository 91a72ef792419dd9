"""dynamo_mlir_edge: the `aarch64` target of dynamo-mlir, an out-of-tree plugin.

A compiled region becomes an AArch64 Linux shared library, ahead of time (the deploy artifact);
on this machine it runs under qemu-aarch64. Chosen only by name:

    torch.compile(model, backend="mlir", options={"target": "aarch64"})

It reads and writes host (cpu) tensors, but it is never picked for them automatically
(`serves=()`): the core's `cpu` target stays the default. Registered through the
`dynamo_mlir.targets` entry point in this package's pyproject.toml.
"""

from dynamo_mlir.plugin import Stage, Target

from . import pipeline, runtime, toolchain
from .options import EdgeOptions

TARGET = Target(
    name=pipeline.NAME,
    device_type="cpu",  # load's callable takes and returns host tensors
    serves=(),  # explicit only: options={"target": "aarch64"}
    stages=(
        Stage("linalg", "mlir", pipeline.make_linalg, "dynamo ops -> linalg/tensor/arith/math (static shapes)"),
        Stage("loops", "mlir", pipeline.make_loops, "bufferized, results as out-params, scf loops"),
        Stage("llvm", "mlir", pipeline.make_llvm, "LLVM dialect, one pointer per tensor"),
        Stage("ll", "ll", pipeline.make_ll, f"LLVM IR for {toolchain.TRIPLE}, with the packed entry"),
        Stage("obj", "o", pipeline.make_obj, "ELF object file from llvmlite's AArch64 backend (-O2)"),
        Stage("so", "so", pipeline.make_so, f"shared library linked by {toolchain.CC} (the deploy artifact)"),
    ),
    load=runtime.load,
    available=toolchain.available,
    options_class=EdgeOptions,
    capabilities=frozenset({"serial_loops", "scalar_math"}),  # plain sequential loops and scalar code
    doc="AArch64 Linux shared library, compiled ahead of time; run here under qemu-aarch64.",
)
