"""Which graph nodes an op of a target's IR came from.

The importer gives every op the location `"<fx node> = <aten op>"` (node_location); passes keep
it (or fuse several). A target that hands some ops to a library reads their locations back to
say which graph nodes ran as library calls (Target.library_nodes), so stats() does not count
them as generated code.
"""

from __future__ import annotations

import re

from torch_mlir import ir

# An FX node name is a Python identifier; the importer writes it first, then " = ".
_NODE_NAME = re.compile(r'"([A-Za-z_]\w*) = ')
# ... then the node's target: `aten.add.Tensor`, `dynamo_mlir.attention.default`.
_TARGET = re.compile(r'"[A-Za-z_]\w* = ([^"]+)"')


def location_name(node_name: str, target) -> str:
    return f"{node_name} = {target}"


def nodes_of(location) -> frozenset[str]:
    """FX node names in an MLIR location (a name location, or a fused one of several)."""
    return frozenset(_NODE_NAME.findall(str(location)))


def ops_of(location) -> list[str]:
    """The ops (`add`, `native_layer_norm`: the target's name without namespace and overload)
    of the graph nodes in an MLIR location, in the order they appear, each once."""
    found: list[str] = []
    for target in _TARGET.findall(str(location)):
        parts = target.split(".")
        name = re.sub(r"\W+", "_", parts[1] if len(parts) > 1 else target).strip("_")
        if name and name not in found:
            found.append(name)
    return found


def location_with_body(ops) -> ir.Location:
    """One location for the code of `ops` (linalg ops), their bodies' ops included: elementwise
    fusion keeps only the consumer's location on a fused op, while the body ops it took from its
    producers keep theirs."""
    seen: dict[str, ir.Location] = {}

    def visit(op):
        seen.setdefault(str(op.location), op.location)
        return ir.WalkResult.ADVANCE

    for op in ops:
        op.operation.walk(visit)
    return ir.Location.fused(list(seen.values()))
