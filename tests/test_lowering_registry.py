"""The lowering-rule registry: a rule never replaces another silently; rules state the
capabilities they require and targets the capabilities they have; names are checked."""

import dataclasses

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.codegen import get_target, register_target
from dynamo_mlir.codegen import target as target_module
from dynamo_mlir.lowering import registry
from helpers import assert_fallbacks

OP = "dynamo.test_registry_op"


def _rule(ctx, op):
    raise AssertionError("never called")


@pytest.fixture
def scratch_op():
    """OP's rules are removed afterwards, whatever the test registered."""
    get_target("cpu"), get_target("cuda")  # the targets are built: their names are declared
    yield OP
    for target, requires in list(registry._RULES.get(OP, {})):
        registry.remove_lowering(OP, requires=requires, target=target)


def test_a_second_rule_for_one_key_raises_unless_it_overrides(scratch_op):
    registry.register_lowering(OP, _rule)
    with pytest.raises(registry.DuplicateLoweringRule, match=OP):
        registry.register_lowering(OP, lambda ctx, op: None)
    assert registry.lookup(OP, None) is _rule
    replacement = lambda ctx, op: None
    registry.register_lowering(OP, replacement, override=True)
    assert registry.lookup(OP, None) is replacement
    assert registry.remove_lowering(OP) is replacement
    with pytest.raises(registry.NoLoweringRule):
        registry.lookup(OP, None)


def test_lookup_takes_the_most_specific_rule_the_target_can_run(scratch_op):
    generic, looping, for_cuda = (lambda ctx, op: None), (lambda ctx, op: None), (lambda ctx, op: None)
    registry.register_lowering(OP, generic)
    registry.register_lowering(OP, looping, requires={"serial_loops"})
    registry.register_lowering(OP, for_cuda, target="cuda")
    assert registry.lookup(OP, "cpu") is looping      # cpu has serial_loops: the more specific rule
    assert registry.lookup(OP, "cuda") is for_cuda    # a target's own rule beats generic ones
    assert registry.lookup(OP, None) is generic
    registry.remove_lowering(OP, target="cuda")
    assert registry.lookup(OP, "cuda") is generic     # cuda lacks serial_loops


def test_a_rule_needing_what_the_target_lacks_names_the_capability(scratch_op):
    registry.register_lowering(OP, _rule, requires={"serial_loops"})
    assert OP in registry.lowered_ops("cpu") and OP not in registry.lowered_ops("cuda")
    with pytest.raises(registry.NoLoweringRule, match="serial_loops"):
        registry.lookup(OP, "cuda")


def test_typos_in_target_and_capability_names_raise(scratch_op):
    with pytest.raises(ValueError, match="unknown target 'cdua'"):
        registry.register_lowering(OP, _rule, target="cdua")
    with pytest.raises(ValueError, match="unknown capabilities"):
        registry.register_lowering(OP, _rule, requires={"serial_loop"})
    with pytest.raises(ValueError, match="unknown capabilities"):
        dataclasses.replace(get_target("cpu"), name="typo", capabilities=frozenset({"serial_loop"}))
    assert OP not in registry.lowered_ops("cpu")


def test_capability_names_are_documented_and_declared_by_the_targets():
    assert all(doc for doc in registry.CAPABILITIES.values())
    assert get_target("cpu").capabilities == {"serial_loops", "scalar_math", "dynamic_shapes", "written_inputs",
                                              "channels_last_results"}
    assert get_target("cuda").capabilities == {"written_inputs", "dynamic_shapes"}


def test_an_op_the_target_lists_as_unsupported_runs_eagerly_and_says_why():
    name = "cpu_without_exp"
    register_target(dataclasses.replace(get_target("cpu"), name=name, unsupported_ops=frozenset({"dynamo.exp"})))
    try:
        f = lambda x: torch.exp(x) * 3
        x = torch.randn(8)
        torch.testing.assert_close(torch.compile(f, backend="mlir", options={"target": name})(x), f(x))
        s = assert_fallbacks({"aten.exp.default": 1})
        assert ("aten.exp.default", f"dynamo.exp is not supported by target {name}") in s["fallback_reasons"]
        assert s["compiled_ops"] == {"aten.mul.Tensor": 1}, s["compiled_ops"]  # the rest compiled
    finally:
        del target_module._TARGETS[name], registry._TARGETS[name]
        registry._FOUND.clear()
        dynamo_mlir.reset()


def test_a_rule_gets_the_target_its_capabilities_and_the_compiles_options():
    """rule(ctx, op): where it lowers and with which options (JAX's LoweringRuleContext)."""
    import torch

    import dynamo_mlir  # noqa: F401  (registers the targets)
    from dynamo_mlir.lowering import registry as reg

    import dynamo_mlir as dm

    seen, compiled = [], []
    generic = reg.lookup("dynamo.exp", None)

    def spy(ctx, op):
        seen.append(ctx)
        return generic(ctx, op)

    reg.register_lowering("dynamo.exp", spy, target="cpu")
    try:
        for library in (True, False):
            torch._dynamo.reset()
            dm.reset()
            x = torch.randn(4)
            torch.testing.assert_close(torch.compile(torch.exp, backend="mlir", options={"library_matmul": library})(x),
                                       torch.exp(x))
            compiled.append(dm.stats()["compiled_ops"].get("aten.exp.default", 0))
    finally:
        reg.remove_lowering("dynamo.exp", target="cpu")
    assert compiled == [1, 1]  # ran in our generated code, through the spy's rule
    assert [c.target for c in seen] == ["cpu", "cpu"]
    assert {"serial_loops", "dynamic_shapes"} <= seen[0].capabilities
    assert [c.target_option("library_matmul") for c in seen] == [True, False]
    assert reg.LoweringContext().target_option("library_matmul", "unset") == "unset"
