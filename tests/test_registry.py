"""The import-rule registry refuses a second rule for an overload unless it says override=True,
and `bind` reads a node's arguments by schema name whatever the call passed positionally."""

from types import SimpleNamespace

import pytest
import torch

import dynamo_mlir.frontend.backend  # noqa: F401  (registers the core rules)
from dynamo_mlir.frontend import registry
from dynamo_mlir.frontend.aten.args import bind

aten = torch.ops.aten


def _rule(ctx, node):
    return None


def test_second_rule_for_an_overload_raises():
    before = registry.lookup(aten.relu.default)
    with pytest.raises(registry.DuplicateRule, match="aten.relu.default"):
        registry.import_rule(aten.relu)(_rule)
    assert registry.lookup(aten.relu.default) is before


def test_override_replaces_a_rule():
    before = registry.lookup(aten.relu.default)
    try:
        registry.import_rule(aten.relu.default, override=True)(_rule)
        assert registry.lookup(aten.relu.default) is _rule
    finally:
        registry.import_rule(aten.relu.default, override=True)(before)
    assert registry.lookup(aten.relu.default) is before


def _node(target, *args, **kwargs):
    return SimpleNamespace(target=target, args=args, kwargs=kwargs)


def test_bind_names_positional_keyword_and_default_arguments():
    a = bind(_node(aten.sum.dim_IntList, "x", [1], keepdim=True))
    assert (a.self, a.dim, a.keepdim, a.dtype) == ("x", [1], True, None)
    a = bind(_node(aten.slice.Tensor, "x", 1, None, None, 2))
    assert (a.dim, a.start, a.step) == (1, None, 2)
    assert bind(_node(aten.avg_pool2d.default, "x", [2, 2])).count_include_pad is True


def test_bind_reads_any_argument_name():
    a = bind(_node(aten.index_put.default, "x", ["i"], "v"))
    assert (a.values, a.indices, a.accumulate) == ("v", ["i"], False)  # not dict.values
    a = bind(_node(aten.uniform.default, "x", 0.5))
    assert (a["from"], a.to) == (0.5, 1.0)
    assert "dim0" in bind(_node(aten.transpose.int, "x", 0, 1))
    assert bind(_node(aten.arange.default, 5)).get("step", 1) == 1
    assert bind(_node(aten.add.Tensor, "x", "y")).leading(2) == ["x", "y"]
    assert bind(_node(aten.special_airy_ai.default, "x")).first == "x"
    with pytest.raises(AttributeError, match="no argument 'nope'"):
        bind(_node(aten.relu.default, "x")).nope


def test_const_keeps_a_0d_array_0d():
    """np.ascontiguousarray makes a 0-d array 1-d: a 0-d index (repeat or unbind of a 0-d result)
    must stay 0-d."""
    import numpy as np
    from torch_mlir import ir

    from dynamo_mlir.dialects import new_context
    from dynamo_mlir.frontend.aten.builders import const
    from dynamo_mlir.frontend.importer import ImportContext

    with new_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            value = const(ImportContext(), np.array(3))
        assert str(value.type) == "tensor<i64>"
