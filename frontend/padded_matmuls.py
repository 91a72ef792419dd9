"""Half-precision matmuls with an unaligned dim computed on zero-padded operands: an FX pass.

Why. cuBLAS runs a bf16/fp16 matmul whose M, K or N is not a multiple of 8 (GPT-2's 50257-token
vocabulary: its logits and both their gradients) with its align-1 kernels, 3-5x slower than the
aligned ones (benchmarks/gemm_alignment.py). The cuda target's library call pads such a matmul's
operands at run time (codegen/cuda/library.py), which copies them: in AMP GPT-2's training step
the [4096, 50257] bf16 logits were copied out of the padded product, and their gradient copied
into a padded matrix twice (once per gradient matmul), about 1.2 GB of copies a step.

How. Before AOTAutograd splits a training graph (backend._partition), and on an inference graph
before it is compiled, each such `mm(a, b)` becomes `mm(pad(a), pad(b))` sliced back to its
shape, as inductor's pad_mm does. In the graph the pads and slices are ops the compiler sees:
- a pad of a computed value is written by its producer's kernel into the padded buffer
  (codegen/padded_producers.py), with zeros written around it; the gradient matmuls share the
  one padded gradient (a pad of a transpose is the transpose of the pad: `_Pads`);
- the slice of the padded product is a strided view its readers take: the product is never
  copied. A training forward's product that the backward reads is saved whole, and the backward
  takes its own slice of it (recomputed_views.py, run after this pass: a saved slice would be
  copied out as the forward's result).
A graph's result that is such a slice is still returned contiguous (one copy, as before).

Which matmuls: the target's `TargetOptions.matmul_padding(dtype)` (the cuda target: half
types, every dim at least 128, with library_matmul); static sizes only.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.fx

from .joint_graph import call_with_val

aten = torch.ops.aten

Padding = Callable[[torch.dtype], "tuple[int, int] | None"]
_TRANSPOSES = (aten.t.default, aten.permute.default)


def pad_matmuls(graph: torch.fx.Graph, padding: Padding) -> int:
    """Rewrite the matmuls of `graph` that `padding` asks to pad; returns how many."""
    pads = _Pads(graph)
    rewritten = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is aten.mm.default and _rewrite(graph, node, padding, pads):
            rewritten += 1
    if rewritten:
        graph.lint()
    return rewritten


def _padded_sizes(node: torch.fx.Node, padding: Padding) -> tuple[int, int, int, int, int, int] | None:
    """(m, k, n, M, K, N): the matmul's sizes and the padded ones, or None to leave it."""
    a, b = (x.meta.get("val") for x in node.args)
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype:
        return None
    rule = padding(a.dtype)
    sizes = (*a.shape, b.shape[1])
    if rule is None or not all(type(s) is int for s in sizes):  # a SymInt: sizes known per call only
        return None
    multiple, least = rule
    if min(sizes) < least or not any(s % multiple for s in sizes):
        return None
    return (*sizes, *(-(-s // multiple) * multiple for s in sizes))


def _rewrite(graph, node, padding: Padding, pads: "_Pads") -> bool:
    sizes = _padded_sizes(node, padding)
    if sizes is None:
        return False
    m, k, n, M, K, N = sizes
    a, b = node.args
    a_padded, b_padded = pads.padded(a, (M, K), node), pads.padded(b, (K, N), node)
    with graph.inserting_before(node):
        product = call_with_val(graph, aten.mm.default, a_padded, b_padded)
        result = _sliced(graph, product, (m, n))
    for new in _chain(result, product):
        _take_meta(new, node)
    node.replace_all_uses_with(result)
    graph.erase_node(node)
    return True


def _sliced(graph, product: torch.fx.Node, shape: tuple[int, int]) -> torch.fx.Node:
    """product[:m, :n], a view (slices of the dims that were padded only)."""
    result = product
    for dim, size in enumerate(shape):
        if product.meta["val"].shape[dim] != size:
            result = call_with_val(graph, aten.slice.Tensor, result, dim, 0, size)
    return result


def _chain(result: torch.fx.Node, product: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes from `product` to `result` (the product and its slices)."""
    chain = [result]
    while chain[-1] is not product:
        chain.append(chain[-1].args[0])
    return chain


class _Pads:
    """Zero-padded copies of values, made once per (value, shape) before the first matmul that
    reads one: the two gradient matmuls of a product both pad its gradient, one of them
    through a transpose."""

    def __init__(self, graph: torch.fx.Graph):
        self.graph = graph
        self.made: dict[tuple[torch.fx.Node, tuple[int, int]], torch.fx.Node] = {}

    def padded(self, x: torch.fx.Node, shape: tuple[int, int], reader: torch.fx.Node) -> torch.fx.Node:
        while _is_transpose(x) and _is_transpose(x.args[0]):  # x.T.T is x (a weight the backward reads)
            x = x.args[0].args[0]
        if tuple(x.meta["val"].shape) == shape:
            return x
        key = (x, shape)
        if key not in self.made:
            self.made[key] = self._make(x, shape, reader)
        return self.made[key]

    def _make(self, x: torch.fx.Node, shape: tuple[int, int], reader: torch.fx.Node) -> torch.fx.Node:
        if _is_transpose(x):  # pad(x.T) = pad(x).T: a transposed operand pads what it transposes
            inner = self.padded(x.args[0], shape[::-1], reader)
            with self.graph.inserting_before(reader):
                node = call_with_val(self.graph, x.target, inner, *x.args[1:])
        else:
            rows, cols = x.meta["val"].shape
            with self.graph.inserting_before(reader):
                node = call_with_val(self.graph, aten.constant_pad_nd.default, x,
                                     [0, shape[1] - cols, 0, shape[0] - rows], 0.0)
        _take_meta(node, reader)
        return node


def _take_meta(node: torch.fx.Node, source: torch.fx.Node) -> None:
    """`source`'s provenance and partitioner tag (a node the forward's matmul needs is the forward's)."""
    node.meta.update({k: v for k, v in source.meta.items() if k not in ("val", "tensor_meta")})


def _is_transpose(x: torch.fx.Node) -> bool:
    if x.op != "call_function" or x.target not in _TRANSPOSES:
        return False
    return x.target is aten.t.default or list(x.args[1]) == [1, 0]
