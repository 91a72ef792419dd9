"""An inference graph handed to Dynamo without AOTAutograd's runtime wrapper around it.

AOTAutograd wraps every compiled graph in a runtime wrapper that replays input mutations,
regenerates outputs that alias inputs or intermediates, unwraps tensor subclasses, threads
effect tokens and functionalized RNG state, and turns autocast and grad mode off around the call.
For an inference graph with none of those, the wrapper only costs time: on a one-op graph it
was about a third of the per-call cost above eager's (benchmarks/bench_models.py, one-op rows).

So the inference compiler offers its callable here along with the metadata AOTAutograd
collected (TracingContext.fw_metadata), and the backend returns that callable itself when the
metadata says the wrapper has nothing to do. Dynamo guards the global grad mode and every input
tensor's requires_grad, so the graph is reused only where it is still an inference graph.
"""

from __future__ import annotations

import torch
from torch._functorch._aot_autograd.schemas import MutationType, OutputType
from torch.utils._python_dispatch import is_traceable_wrapper_subclass


class InferencePath:
    """Collects, while one Dynamo graph compiles, the inference callable that may go to Dynamo bare."""

    def __init__(self, example_inputs):
        self.n_inputs = len(example_inputs)
        self.plain_inputs = all(_plain_input(x) for x in example_inputs)
        self.callable, self.report, self.recipe = None, None, None

    def offer(self, fn, graph_inputs, report) -> None:
        """The inference compiler's unboxed callable for a graph taking `graph_inputs`, and the
        graph's report (which says so once the callable is handed out)."""
        context = torch._guards.TracingContext.try_get()
        meta = getattr(context, "fw_metadata", None)
        if self.plain_inputs and len(graph_inputs) == self.n_inputs and meta is not None \
                and _nothing_to_wrap(meta) and not torch._C._is_any_autocast_enabled():
            self.callable, self.report = without_wrapper(fn), report
            self.recipe = getattr(fn, "recipe", None)  # compile.DirectRecipe: graph_cache.py keeps it

    def result(self, wrapped):
        """What Dynamo calls: the bare callable if one was offered and qualifies, else AOTAutograd's."""
        if self.callable is None:
            return wrapped
        self.report.direct_call = True
        return self.callable


def _plain_input(x) -> bool:
    """A plain tensor or a scalar: AOTAutograd passes it to the graph unchanged (a list is
    flattened, a subclass unwrapped, so the graph's inputs would not be Dynamo's)."""
    if isinstance(x, torch.Tensor):
        return not is_traceable_wrapper_subclass(x)
    return isinstance(x, (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool))


# Inputs the wrapper does nothing for: untouched, or mutated by the graph itself (input_mutations.py).
_WRAPPER_LEAVES = (MutationType.NOT_MUTATED, MutationType.MUTATED_IN_GRAPH)


def _nothing_to_wrap(meta) -> bool:
    """Whether AOTAutograd's runtime wrapper would pass the inputs and outputs through unchanged."""
    inputs_untouched = all(i.mutation_type in _WRAPPER_LEAVES for i in meta.input_info)
    outputs_fresh = all(o.output_type == OutputType.non_alias for o in meta.output_info)
    no_state = (meta.num_intermediate_bases == 0 and not meta.tokens
                and getattr(meta, "num_graphsafe_rng_states", 0) == 0
                and not getattr(meta, "is_rng_op_functionalized", False)
                and meta.grad_enabled_mutation is None)
    return inputs_untouched and outputs_fresh and no_state


def without_wrapper(fn):
    """fn(*args) as Dynamo calls it, with grad mode off as AOTAutograd's inference wrapper has it:
    the eager ops of a mixed graph must not record autograd history. Dynamo wraps what a backend
    returns in its own `disable` (output_graph.py), so it never traces into this call."""

    def call(*args):
        if not torch.is_grad_enabled():
            return fn(*args)
        torch._C._set_grad_enabled(False)
        try:
            return fn(*args)
        finally:
            torch._C._set_grad_enabled(True)

    return call
