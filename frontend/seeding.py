"""Seeds for compiled random ops, as an FX pass on each ATen graph before partitioning.

Compiled code has no generator state. A graph with random ops gets one eager node at its start,
`draw_seed()`, drawing a 0-d int64 from torch's default generator (so `torch.manual_seed`
governs it, and every call draws a new one), and each random node becomes
`seeded(op)(seed, stream, *args)` with its own stream number. The wrapper's eager body ignores
the seed and calls `op` (so a node left to eager behaves as before); its import rule
(frontend/aten/random.py) hashes (seed, stream, element index) into numbers of the distribution.
"""

import functools

import torch
import torch.fx as fx
from torch._subclasses.fake_tensor import FakeTensor

from .registry import import_rule

RANDOM_OPS: set = set()  # ATen overloads whose seeded form has an import rule


def draw_seed(device=None) -> torch.Tensor:
    """A fresh 0-d int64 seed from torch's default generator of `device`."""
    return torch.randint(0, 2**62, (), dtype=torch.int64, device=device)


class Seeded:
    """FX target `seeded(op)`: called as (seed, stream, *args, **kwargs); eagerly it is `op`."""

    def __init__(self, op):
        self.op = op
        self.__name__ = self.__qualname__ = "seeded_" + str(op).replace(".", "_")
        self.__module__ = __name__

    def __call__(self, seed, stream, *args, **kwargs):
        return self.op(*args, **kwargs)

    def __str__(self):
        return str(self.op)  # reports name the ATen op

    __repr__ = __str__


@functools.cache
def seeded(op) -> Seeded:
    """The one wrapper of `op` (cached: a stable, hashable FX target)."""
    return Seeded(op)


def random_rule(*ops):
    """Register the decorated import rule for the seeded form of each ATen overload in `ops`."""

    def add(fn):
        RANDOM_OPS.update(ops)
        return import_rule(*[seeded(op) for op in ops])(fn)

    return add


def _is_random(node: fx.Node) -> bool:
    # A node with its own generator keeps it: our seed comes from the default one.
    return node.op == "call_function" and node.target in RANDOM_OPS and node.kwargs.get("generator") is None


def _seed_meta(val):
    """meta["val"] of the seed: a 0-d int64 in the fake mode and on the device of `val`."""
    if isinstance(val, (tuple, list)):
        val = val[0]
    if isinstance(val, FakeTensor):
        with val.fake_mode:
            return torch.empty((), dtype=torch.int64, device=val.device)
    return torch.empty((), dtype=torch.int64, device="meta")


def seed_random_ops(gm: fx.GraphModule) -> fx.GraphModule:
    """Rewrite gm's random nodes to seeded calls (in place); a no-op without random nodes."""
    random_nodes = [n for n in gm.graph.nodes if _is_random(n)]
    if not random_nodes:
        return gm
    first = next(n for n in gm.graph.nodes if n.op != "placeholder")
    sample = random_nodes[0].meta.get("val")
    device = (sample[0] if isinstance(sample, (tuple, list)) else sample).device
    with gm.graph.inserting_before(first):
        seed = gm.graph.call_function(draw_seed, (), {"device": device})
    seed.meta["val"] = _seed_meta(sample)
    for stream, node in enumerate(random_nodes):
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(seeded(node.target), (seed, stream, *node.args), dict(node.kwargs))
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
    gm.recompile()
    return gm


def is_seed_node(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is draw_seed
