"""GPU kernels named for what they compute: `<strategy>_<ops>`, `row_fused_native_layer_norm`.

Outlining names each kernel after its host function (`main_kernel_17`), so a profile of a model
lists dozens of `main_kernel_N`, the same names in every compiled graph, and nothing says which
kernel is the layer norm's backward or which strategy built it. Each builder marks its launch
with a name (mark_kernel): the strategy, then the graph ops whose code the launch holds (the
importer's locations on it and on the ops inside it). name_kernels, before outlining, makes the
names unique in the module and gives them to outlining as the launches' gpu.module names. The
function inside is always `kernel`, so that two launches of the same code still print the same
module body (merge_identical_kernels keeps one); the device module renames each kernel function
to its module's name (ptx.device_module).
Target-independent: any target that outlines gpu.launch ops can run it.
"""

from __future__ import annotations

import itertools
import re

from torch_mlir import ir

from .attributes import KERNEL_NAME
from .provenance import ops_of
from .walk import ops_where

KERNEL_FUNCTION = "kernel"
# The strategies launches are built by, the first word of every kernel name.
STRATEGIES = ("elementwise", "row_reduce", "serial", "split", "row_fused", "row_group", "chunks", "tiled")
# Ops named in a kernel's name; more would make names no profiler column shows whole.
MAX_OPS = 3
MAX_CHARS = 80
# Ops nearly every kernel holds: named only in a kernel of nothing else.
# (Names as provenance.ops_of gives them: `aten._to_copy` is `to_copy`.)
PLAIN_OPS = frozenset({"add", "sub", "mul", "div", "neg", "rsub", "to_copy", "convert_element_type", "clone",
                       "copy", "view", "expand", "permute", "squeeze", "unsqueeze", "where", "full"})


def mark_kernel(launch, strategy: str) -> None:
    """Record on a built gpu.launch what its kernel is named for: `strategy`, then the graph ops
    of the locations on it and inside it, plain arithmetic left out unless it is all there is,
    at most MAX_OPS. Kept as an attribute (printed IR has no locations, and name-kernels must
    name the same from a dump)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown kernel strategy {strategy!r}; known: {STRATEGIES}")
    ops: list[str] = []

    def visit(op):
        ops.extend(o for o in ops_of(op.location) if o not in ops)
        return ir.WalkResult.ADVANCE

    launch.operation.walk(visit)
    telling = [o for o in ops if o not in PLAIN_OPS] or ops
    launch.attributes[KERNEL_NAME] = ir.StringAttr.get("_".join([strategy] + telling[:MAX_OPS])[:MAX_CHARS])


def mark_unmarked(module: ir.Module, strategy: str) -> None:
    """Every gpu.launch with no name yet named for `strategy` (launches made by upstream passes)."""
    with module.context:
        for launch in _launches(module):
            if KERNEL_NAME not in launch.attributes:
                mark_kernel(launch, strategy)


def _launches(module: ir.Module) -> list:
    return ops_where(module, lambda op: op.name == "gpu.launch")


def _symbols(module: ir.Module) -> set[str]:
    return {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
            if "sym_name" in op.attributes}


def name_kernels(module: ir.Module) -> int:
    """Give every gpu.launch of the module the gpu.module name its kernel is outlined into;
    returns how many were named."""
    taken = _symbols(module)
    launches = _launches(module)
    with module.context:
        for launch in launches:
            base = ir.StringAttr(launch.attributes[KERNEL_NAME]).value if KERNEL_NAME in launch.attributes else "kernel"
            name = next(n for n in itertools.chain([base], (f"{base}_{i}" for i in itertools.count(1)))
                        if n not in taken)
            taken.add(name)
            launch.attributes["module"] = ir.FlatSymbolRefAttr.get(name)
            launch.attributes["function"] = ir.FlatSymbolRefAttr.get(KERNEL_FUNCTION)
    return len(launches)


def without_ops(ir_text: str) -> str:
    """IR text with the graph ops left out of its kernels' names (`row_fused_softmax_2` ->
    `row_fused`): what IR parsed back from a dump names them (dumps print no locations)."""
    return re.sub(r"\b(" + "|".join(STRATEGIES) + r")\w*", r"\1", ir_text)
