"""The public plugin API (dynamo_mlir.plugin): a dialect extension written against it alone,
target choice by device type (PrivateUse1 included) and by option, and what happens when no
target serves a device or a target lacks a rule."""

import dataclasses
import subprocess
import sys
import textwrap

import pytest
import torch
from torch_mlir import ir
from torch_mlir.dialects.ext import Dialect, Operand, Pure, Result

import dynamo_mlir
from dynamo_mlir import plugin

from helpers import assert_fallbacks


@torch.library.custom_op("plugintest::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.tanh(x) * scale


@scaled_tanh.register_fake
def _(x, scale):
    return torch.empty_like(x)


@plugin.register_dialect
class PluginTest(Dialect, name="plugintest"):
    """A dialect of the test's own, as a plugin package would define it."""


@plugin.verifier
def _same_type(op):
    if op.x.type != op.out.type:
        raise plugin.VerifyError("operand and result types differ")


class ScaledTanhOp(PluginTest.Operation, name="scaled_tanh", traits=[Pure]):
    """tanh(x) * scale."""

    x: Operand[ir.RankedTensorType]
    scale: ir.FloatAttr
    out: Result[ir.RankedTensorType]
    verify_invariants = _same_type


@plugin.import_rule(torch.ops.plugintest.scaled_tanh.default)
def _import_scaled_tanh(ctx, node):
    a = plugin.bind(node)
    if ctx.out_meta(node).dtype != torch.float32:
        raise plugin.Unsupported("scaled_tanh is imported for float32 only")
    scale = ir.FloatAttr.get(ir.F64Type.get(), a.scale)
    return ScaledTanhOp(ctx.tensor(a.x), scale, out=ctx.out_type(node)).out


@plugin.register_lowering(ScaledTanhOp)
def _expand_scaled_tanh(ctx, op):
    """Generic: expanded into core dynamo ops, which the lowering then lowers in its next round."""
    t = ir.RankedTensorType(op.x.type)
    scale = ir.DenseElementsAttr.get_splat(t, ir.FloatAttr.get(t.element_type, ir.FloatAttr(op.scale).value))
    th = plugin.core_ops.TanhOp(op.x, out=t).out
    return plugin.core_ops.MulOp(th, plugin.core_ops.ConstantOp(value=scale, out=t).out, out=t).out


def _model(x):
    return torch.ops.plugintest.scaled_tanh(x, 3.0) + 1


def test_an_extension_op_from_a_custom_op_compiles_and_matches_its_eager_implementation():
    dynamo_mlir.reset()
    x = torch.randn(4, 64)
    torch.testing.assert_close(torch.compile(_model, backend="mlir")(x), _model(x))
    s = assert_fallbacks({})
    assert s["compiled_ops"] == {"plugintest.scaled_tanh.default": 1, "aten.add.Tensor": 1}


def test_an_import_rule_that_refuses_leaves_the_node_eager_with_its_reason():
    dynamo_mlir.reset()
    x = torch.randn(64, dtype=torch.float64)
    torch.testing.assert_close(torch.compile(_model, backend="mlir")(x), _model(x))
    s = assert_fallbacks({"plugintest.scaled_tanh.default": 1})
    assert ("plugintest.scaled_tanh.default", "scaled_tanh is imported for float32 only") in s["fallback_reasons"]


def test_a_target_without_a_rule_for_the_op_leaves_it_eager_and_says_so():
    name = "cpu_without_plugin_ops"
    target = plugin.register_target(dataclasses.replace(
        plugin.get_target("cpu"), name=name, unsupported_ops=frozenset({"plugintest.scaled_tanh"})))
    try:
        dynamo_mlir.reset()
        x = torch.randn(64)
        torch.testing.assert_close(torch.compile(_model, backend="mlir", options={"target": target.name})(x), _model(x))
        s = assert_fallbacks({"plugintest.scaled_tanh.default": 1})
        assert s["compiled_ops"] == {"aten.add.Tensor": 1}
        reason = dict(s["fallback_reasons"])["plugintest.scaled_tanh.default"]
        assert f"not supported by target {name}" in reason
    finally:
        from dynamo_mlir.codegen import target as registry

        registry._TARGETS.pop(name)


def test_registries_refuse_silent_duplicates():
    class Again(Dialect, name="plugintest"):
        pass

    with pytest.raises(plugin.DuplicateDialect):
        plugin.register_dialect(Again)
    with pytest.raises(plugin.DuplicateTarget):
        plugin.register_target(dataclasses.replace(plugin.get_target("cpu"), doc="another cpu"))
    with pytest.raises(plugin.DuplicateRule):
        plugin.import_rule(torch.ops.plugintest.scaled_tanh.default)(lambda ctx, node: None)
    with pytest.raises(plugin.DuplicateLoweringRule):
        plugin.register_lowering(ScaledTanhOp, lambda ctx, op: None)
    with pytest.raises(ValueError, match="already declared"):
        plugin.declare_capability("serial_loops", "something else")


def test_a_target_registered_again_gives_the_rules_its_capabilities_back():
    """A trial target built from another (dataclasses.replace) declares its capabilities to the
    lowering registry when it is built; registering the original again must declare the
    original's. It did not: a test that swapped the cuda target for one without dynamic_shapes
    left every later cuda compile in the process refusing symbolic sizes."""
    from dynamo_mlir.lowering.registry import context_for

    cuda = plugin.get_target("cuda")
    trial = dataclasses.replace(cuda, capabilities=cuda.capabilities - {"dynamic_shapes"})
    plugin.register_target(trial, override=True)
    try:
        assert "dynamic_shapes" not in context_for("cuda").capabilities
    finally:
        plugin.register_target(cuda, override=True)
    assert context_for("cuda").capabilities == cuda.capabilities


def test_the_target_is_chosen_by_device_type():
    assert plugin.target_for_device("cpu").name == "cpu"
    assert plugin.target_for_device("cuda").name == "cuda"
    with pytest.raises(plugin.NoTargetForDevice, match="no dynamo-mlir target serves device type 'xla'"):
        plugin.target_for_device("xla")


def test_a_graph_on_a_device_no_target_serves_runs_eagerly_and_says_why():
    dynamo_mlir.reset()
    f = lambda x: torch.relu(x) * 2
    y = torch.compile(f, backend="mlir")(torch.randn(8, device="meta"))
    assert y.device.type == "meta" and y.shape == (8,)
    s = assert_fallbacks({"torch.relu": 1, "_operator.mul": 1}, min_ops=0)
    assert all("no dynamo-mlir target serves device type 'meta'" in why for _, why in s["fallback_reasons"])
    with pytest.raises(Exception, match="no dynamo-mlir target serves"):
        torch._dynamo.reset()
        torch.compile(f, backend="mlir", options={"strict": True})(torch.randn(8, device="meta"))


def test_a_renamed_privateuse1_device_finds_the_target_that_serves_it():
    """Renaming PrivateUse1 is once per process: in a subprocess, as a device plugin would."""
    script = textwrap.dedent("""
        import dataclasses, torch
        from dynamo_mlir import plugin
        chip = plugin.register_target(dataclasses.replace(
            plugin.get_target("cpu"), name="mychip", device_type="privateuseone", doc="a test chip"))
        torch.utils.rename_privateuse1_backend("mychip_dev")
        assert plugin.target_for_device("mychip_dev") is chip
        assert plugin.target_for_device("privateuseone") is chip
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.stdout.strip().endswith("ok"), run.stderr[-2000:]


def test_an_explicit_only_target_is_never_chosen_by_device():
    name = "cpu_explicit_only"
    plugin.register_target(dataclasses.replace(plugin.get_target("cpu"), name=name, serves=()))
    try:
        assert plugin.target_for_device("cpu").name == "cpu"
        dynamo_mlir.reset()
        f = lambda x: torch.sin(x) + 1
        x = torch.randn(16)
        torch.testing.assert_close(torch.compile(f, backend="mlir", options={"target": name})(x), f(x))
        s = assert_fallbacks({})
        assert s["targets"] == [name], s["targets"]
    finally:
        from dynamo_mlir.codegen import target as registry

        registry._TARGETS.pop(name)


def test_a_stage_whose_artifact_is_bytes_is_dumped_byte_for_byte(tmp_path):
    """An object file or a shared library is a stage's artifact like IR: its dump is the bytes."""
    blob = b"\x7fELF\xff\xfe" + bytes(range(256))  # not UTF-8: written as text, it would not round-trip

    def cannot_run(artifact, signature, options):
        assert artifact == blob  # the loader gets the bytes themselves
        raise plugin.CompileError("load", "this test target only makes files")

    cpu = plugin.get_target("cpu")
    name = "cpu_with_binary_stage"
    plugin.register_target(dataclasses.replace(
        cpu, name=name, serves=(), extra_dumps={}, find_library_nodes=None, load=cannot_run,
        stages=(*cpu.stages, plugin.Stage("blob", "bin", lambda module, options: blob, "a binary"))))
    try:
        dynamo_mlir.reset()
        f = lambda x: torch.cos(x) * 2
        x = torch.randn(8)
        torch.compile(f, backend="mlir", options={"target": name, "dump_dir": str(tmp_path)})(x)
        (path,) = tmp_path.glob("*.blob.bin")
        assert path.read_bytes() == blob
        (llvm,) = tmp_path.glob("*.llvm.mlir")
        assert "llvm.func" in llvm.read_text()
        assert dynamo_mlir.stats()["partitions_failed"] == 1
        assert "this test target only makes files" in dynamo_mlir.explain()
    finally:
        from dynamo_mlir.codegen import target as registry

        registry._TARGETS.pop(name)


def test_nodes_of_names_the_graph_nodes_an_op_came_from():
    """What a target reads from its ops' locations to report library calls (Target.library_nodes)."""
    with ir.Context():
        fused = ir.Location.fused([ir.Location.name("mm_1 = aten.mm.default"),
                                   ir.Location.name("add_2 = aten.add.Tensor")])
        assert plugin.nodes_of(fused) == {"mm_1", "add_2"}
        assert plugin.nodes_of(ir.Location.unknown()) == frozenset()
