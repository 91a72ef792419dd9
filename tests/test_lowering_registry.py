"""The lowering-rule registry: a rule never replaces another silently."""

import pytest

from dynamo_mlir.lowering import registry


def _rule(op):
    raise AssertionError("never called")


def test_a_second_rule_for_one_key_raises_unless_it_overrides():
    name = "dynamo.test_registry_op"
    registry.register_lowering(name, _rule)
    try:
        with pytest.raises(registry.DuplicateLoweringRule, match=name):
            registry.register_lowering(name, lambda op: None)
        assert registry.lookup(name, None) is _rule
        replacement = lambda op: None
        registry.register_lowering(name, replacement, override=True)
        assert registry.lookup(name, None) is replacement
    finally:
        del registry._RULES[(name, None)]
