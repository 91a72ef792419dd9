"""as_strided reads storage, not values: an FX pass pointing it at the tensor owning the storage.

`as_strided(v, size, stride, offset)` picks elements of v's *storage*, and for a view v
(diagonal, narrow, select, a stepped slice, expand, a split's piece, ...) that is its base's
storage, laid out as the base is. A compiled region sees values only: it makes v a new
contiguous tensor, so an as_strided reading it (compiled, or eager after the region) indexed
the wrong storage: wrong values, or a storage size error. Before partitioning, each as_strided
is rewritten to read the storage's owner instead, with the view's storage offset made explicit
(as_strided takes the view's own by default):
- a graph input: read directly. Its import rule maps storage positions to the input's elements
  through the input's real strides and offset; positions outside them (the input is a view of a
  larger tensor) stay eager, where the real input tensor is read.
- a tensor the graph computes, laid out plainly (contiguous, offset 0): read directly.
- another computed tensor (channels-last, say): read through its storage as a contiguous 1-d
  tensor (as_strided_scatter of it into zeros). A region's outputs are contiguous, so an eager
  as_strided after a region then reads what eager's layout would have put there too.
"""

import operator

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef

from .importer import is_tensor_node

aten = torch.ops.aten

AS_STRIDED = (aten.as_strided.default, aten.as_strided_copy.default)


def rebase_as_strided(gm: fx.GraphModule) -> fx.GraphModule:
    nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in AS_STRIDED]
    for node in nodes:
        _rebase(gm.graph, node)
    if nodes:
        gm.recompile()
    return gm


def _rebase(graph: fx.Graph, node: fx.Node) -> None:
    view, size, stride = node.args[:3]
    offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset")
    if offset is None:
        offset = view.meta["val"].storage_offset()
    root = storage_root(view)
    if root.op != "placeholder" and not _plain(root.meta["val"]):
        root = _storage_tensor(graph, node, root)
    node.args, node.kwargs = (root, size, stride, offset), {}
    _drop_unused_views(graph, view)


def _drop_unused_views(graph: fx.Graph, node: fx.Node) -> None:
    """Erase the views leading to `node` that nothing reads any more (views are pure)."""
    while isinstance(node, fx.Node) and node.op == "call_function" and not node.users:
        parent = node.args[0] if node.args else None  # getitem: the split, then what it split
        graph.erase_node(node)
        node = parent


def storage_root(node: fx.Node) -> fx.Node:
    """The earliest node sharing `node`'s storage along the chain of views (self is args[0];
    a split's pieces are getitems of an op whose args[0] is the tensor split)."""
    while True:
        parent = _viewed(node)
        if parent is None or not _same_storage(parent, node):
            return node
        node = parent


def _viewed(node: fx.Node) -> fx.Node | None:
    if node.op != "call_function" or not node.args:
        return None
    source = node.args[0]
    if node.target is operator.getitem and isinstance(source, fx.Node) and source.args:
        source = source.args[0]
    return source if is_tensor_node(source) else None


def _same_storage(a: fx.Node, b: fx.Node) -> bool:
    sa, sb = a.meta["val"].untyped_storage(), b.meta["val"].untyped_storage()
    return StorageWeakRef(sa) == StorageWeakRef(sb)


def _plain(val: torch.Tensor) -> bool:
    return val.is_contiguous() and val.storage_offset() == 0


def _storage_tensor(graph: fx.Graph, before: fx.Node, root: fx.Node) -> fx.Node:
    """root's storage as a contiguous 1-d tensor: root's elements at their storage positions."""
    val = root.meta["val"]
    length = val.untyped_storage().nbytes() // val.element_size()
    with graph.inserting_before(before):
        zeros = graph.call_function(aten.zeros.default, ([length],), {"dtype": val.dtype, "device": val.device})
        layout = (list(val.shape), list(val.stride()), val.storage_offset())
        storage = graph.call_function(aten.as_strided_scatter.default, (zeros, root, *layout))
    with val.fake_mode:
        zeros.meta["val"] = torch.zeros(length, dtype=val.dtype, device=val.device)
        storage.meta["val"] = torch.as_strided_scatter(zeros.meta["val"], val, *layout)
    return storage
