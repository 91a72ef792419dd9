"""The `backend="mlir"` entry point for torch.compile.

Dynamo hands us an FX graph; AOTAutograd turns it into functional ATen forward/backward graphs
(decomposed to the small op set our dialect covers); `compile_graph` compiles each.
"""

import functools
import logging

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

from ..codegen import config, driver
from . import aten as _rules  # noqa: F401  (registers the import rules)
from .compile import compile_graph, new_graph_name

log = logging.getLogger("dynamo_mlir")

aten = torch.ops.aten

# On top of core ATen: ops whose decompositions land on ops we import.
_EXTRA_DECOMPOSITIONS = [
    aten.native_layer_norm, aten.addmm, aten._safe_softmax, aten.linear, aten.t,
    aten.transpose.int, aten.native_group_norm, aten.silu, aten.hardswish, aten.hardsigmoid,
    aten.mish, aten.softplus, aten.leaky_relu, aten.elu, aten.hardtanh, aten.logsumexp,
    aten.native_dropout, aten.std, aten.var, aten.lerp, aten.addcmul, aten.addcdiv,
]


@functools.cache
def decompositions() -> dict:
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(_EXTRA_DECOMPOSITIONS))
    return table


def _compiler(kind: str, options: config.Options):
    def compile_fn(gm: torch.fx.GraphModule, example_inputs):
        return make_boxed_func(compile_graph(gm, example_inputs, kind, options))

    return compile_fn


def mlir_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """torch.compile backend: `torch.compile(model, backend="mlir", mode=..., options={...})`."""
    options = config.resolve(kwargs.get("options"), kwargs.get("mode"))
    if options.dump_dir:
        driver.write_dump(options.dump_dir, new_graph_name("dynamo"), "fx", "txt", gm.print_readable(print_output=False))
    return aot_autograd(
        fw_compiler=_compiler("forward", options),
        bw_compiler=_compiler("backward", options),
        inference_compiler=_compiler("inference", options),
        decompositions=decompositions(),
    )(gm, example_inputs)
