"""Which graph nodes an op of a target's IR came from.

The importer gives every op the location `"<fx node> = <aten op>"` (node_location); passes keep
it (or fuse several). A target that hands some ops to a library reads their locations back to
say which graph nodes ran as library calls (Target.library_nodes), so stats() does not count
them as generated code.
"""

from __future__ import annotations

import re

# An FX node name is a Python identifier; the importer writes it first, then " = ".
_NODE_NAME = re.compile(r'"([A-Za-z_]\w*) = ')


def location_name(node_name: str, target) -> str:
    return f"{node_name} = {target}"


def nodes_of(location) -> frozenset[str]:
    """FX node names in an MLIR location (a name location, or a fused one of several)."""
    return frozenset(_NODE_NAME.findall(str(location)))
