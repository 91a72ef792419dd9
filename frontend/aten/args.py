"""Small helpers the import rules share for reading a node's arguments and making attributes."""

from torch_mlir import ir


def node_arg(node, position: int, name: str, default):
    """The argument at `position`, else the keyword `name`, else `default` (ATen schemas allow both)."""
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def i64_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
