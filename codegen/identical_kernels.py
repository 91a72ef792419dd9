"""Outlined GPU kernels that are the same code, kept once.

A model's repeated layers (16 transformer blocks of one shape) make the same kernels again and
again: one gpu.module per launch. Each copy would be converted, translated and compiled to device
code on its own, and loaded as its own function. After outlining, a kernel is its gpu.module's
body alone (its operands come from the launch), so two modules whose bodies print the same are
the same kernel: every launch of the later one is pointed at the first, and the later one erased.
Target-independent: any target whose kernels are outlined gpu.modules can run it.
"""

from __future__ import annotations

from torch_mlir import ir

from .walk import ops_where


def _body_text(gpu_module) -> str:
    """The module's ops as printed (no locations): equal text is equal code."""
    return "\n".join(op.get_asm(use_local_scope=True) for op in gpu_module.regions[0].blocks[0].operations)


def _launches(module: ir.Module) -> list:
    return ops_where(module, lambda op: op.name == "gpu.launch_func")


def merge_identical_kernels(module: ir.Module) -> int:
    """Point every launch of a duplicate kernel at its first copy and erase the duplicates;
    returns how many gpu.modules were erased."""
    first: dict[str, str] = {}   # body text -> the gpu.module kept for it
    kept_for: dict[str, str] = {}  # erased gpu.module -> the one kept
    for op in list(module.body.operations):
        if op.operation.name != "gpu.module":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        keep = first.setdefault(_body_text(op), name)
        if keep != name:
            kept_for[name] = keep
            op.operation.erase()
    if not kept_for:
        return 0
    with module.context:
        for launch in _launches(module):
            ref = ir.SymbolRefAttr(launch.attributes["kernel"])
            root = ref.value[0]
            if root in kept_for:
                launch.attributes["kernel"] = ir.SymbolRefAttr.get([kept_for[root], *ref.value[1:]])
    return len(kept_for)
