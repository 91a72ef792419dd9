"""Whole models, inference: compiled by us with no fallback and matching eager (rtol 1e-4);
graph breaks, fallbacks for ops the dialect lacks, and compile failures with a repro."""

import glob
import os

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.codegen import CompileError
from dynamo_mlir.codegen import resolve as config_resolve
from dynamo_mlir.lowering import registry as lowering_registry
from helpers import assert_all_compiled, assert_fallbacks
from dynamo_mlir.tools.models import cnn, mlp, randomize_batchnorm, transformer_block

MODELS = {
    "mlp": (mlp, lambda: torch.randn(8, 10)),
    "cnn": (lambda: randomize_batchnorm(cnn()), lambda: torch.randn(8, 3, 32, 32)),
    "transformer_block": (transformer_block, lambda: torch.randn(2, 16, 64)),
}
# The float32 matmuls the cpu target runs as MKL calls (library_matmul): one mm per linear layer,
# and attention's two bmm (q k^T, then the weights times v); its convolutions as torch's kernel.
LIBRARY = {
    "mlp": {"aten.mm.default": 3},
    "cnn": {"aten.mm.default": 1, "aten.convolution.default": 2},
    # inference keeps SDPA whole: torch's fused CPU attention (codegen/cpu/library_attention.py)
    "transformer_block": {"aten.mm.default": 4, "aten._scaled_dot_product_flash_attention_for_cpu.default": 1},
}


@pytest.mark.parametrize("name", MODELS)
def test_model_inference_matches_eager_with_no_fallback(name):
    torch.manual_seed(0)
    make_model, make_input = MODELS[name]
    model, x = make_model().eval(), make_input()
    with torch.no_grad():
        expected = model(x)
        got = torch.compile(model, backend="mlir")(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    s = assert_all_compiled(min_ops=5, library=LIBRARY[name])
    assert s["graphs"] == 1 and s["targets"] == ["cpu"]


def test_graph_break_both_sides_compiled():
    def f(x):
        x = torch.relu(x)
        return x * 2 if x.sum() > 0 else x

    compiled = torch.compile(f, backend="mlir")
    for sign in (1.0, -1.0):
        x = sign * torch.rand(16) + (0.1 if sign > 0 else -0.1)
        torch.testing.assert_close(compiled(x), f(x))
    s = assert_all_compiled()
    assert s["graphs"] >= 2  # the graph break splits f into separately compiled graphs


def test_relu_plus_sigmoid():
    x = torch.randn(128)
    got = torch.compile(lambda x: x.relu() + x.sigmoid(), backend="mlir")(x)
    torch.testing.assert_close(got, x.relu() + x.sigmoid())
    s = assert_all_compiled()
    assert set(s["compiled_ops"]) >= {"aten.relu.default", "aten.sigmoid.default", "aten.add.Tensor"}


@torch.library.custom_op("dynamo_mlir_test::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def test_op_the_dialect_lacks_falls_back_correctly():
    def f(x):
        return torch.exp(twice(torch.tanh(x))) + 1

    x = torch.randn(32)
    torch.testing.assert_close(torch.compile(f, backend="mlir")(x), f(x))
    s = assert_fallbacks({"dynamo_mlir_test.twice.default": 1}, min_ops=2)
    assert any("no import rule" in reason for _, reason in s["fallback_reasons"])
    assert {"aten.tanh.default", "aten.exp.default"} <= set(s["compiled_ops"])  # both sides compiled
    assert "dynamo_mlir_test.twice.default" in dynamo_mlir.explain()


@pytest.fixture
def broken_exp_lowering():
    """A cpu-specific rule for dynamo.exp that fails, as a buggy rule would."""
    def broken(ctx, op):
        raise ValueError("simulated lowering bug")

    lowering_registry.register_lowering("dynamo.exp", broken, target="cpu")
    yield
    lowering_registry.remove_lowering("dynamo.exp", target="cpu")


def test_compile_failure_names_stage_and_op_and_saves_repro(broken_exp_lowering, tmp_path):
    f = lambda x: torch.exp(x) * 3
    with pytest.raises(Exception) as info:
        torch.compile(f, backend="mlir", options={"strict": True, "repro_dir": str(tmp_path)})(torch.randn(8))
    err = info.value
    while not isinstance(err, CompileError) and err is not None:  # Dynamo wraps backend errors
        err = getattr(err, "inner_exception", None) or err.__cause__
    assert isinstance(err, CompileError), info.value
    assert err.stage == "linalg" and err.op == "dynamo.exp"
    assert "stage 'linalg'" in str(err) and "dynamo.exp" in str(err) and "simulated lowering bug" in str(err)
    repro = open(err.repro).read()
    assert '"dynamo.exp"' in repro and "// pipeline:" in repro  # the input IR and what ran on it
    assert glob.glob(os.path.join(tmp_path, "linalg-*.mlir")) == [err.repro]


def test_compile_failure_without_strict_runs_eagerly_and_reports(broken_exp_lowering, tmp_path):
    f = lambda x: torch.exp(x) * 3
    x = torch.randn(8)
    torch.testing.assert_close(torch.compile(f, backend="mlir", options={"repro_dir": str(tmp_path)})(x), f(x))
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 1 and s["ops_compiled"] == 0
    assert s["fallback_ops"] == {"aten.exp.default": 1, "aten.mul.Tensor": 1}
    assert "simulated lowering bug" in dynamo_mlir.explain()


def test_unknown_option_is_a_clear_error():
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(lambda x: x + 1, backend="mlir", options={"dump_dri": "/tmp/x"})(torch.randn(2))


@pytest.mark.parametrize("mode", ["max-autotune", "max-autotune-no-cudagraphs"])
def test_autotune_modes_are_refused_clearly(mode):
    # Nothing is autotuned: accepting the mode would silently run as mode="default".
    with pytest.raises(Exception, match=f"mode='{mode}' is not supported: dynamo-mlir does no autotuning") as info:
        torch.compile(lambda x: x + 1, backend="mlir", mode=mode)(torch.randn(2))
    assert "Supported modes: 'default' and 'reduce-overhead'" in str(info.value)
    with pytest.raises(ValueError, match="does no autotuning"):
        config_resolve({"mode": mode})  # the option and DYNAMO_MLIR_MODE go the same way
    with pytest.raises(ValueError, match="not a torch.compile mode"):
        config_resolve(mode="fastest")


def test_supported_modes_compile():
    x = torch.randn(16)
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(lambda x: x.exp() + 1, backend="mlir", mode=mode)(x), x.exp() + 1)
    assert_all_compiled(min_ops=2)


def test_backend_is_registered_without_importing_the_package():
    import subprocess
    import sys

    code = "import torch, sys; sys.exit(0 if 'mlir' in torch._dynamo.list_backends() else 1)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_unresolvable_symbol_is_refused_before_the_jit():
    """The linker aborts the process on a symbol it cannot resolve: such a region must be
    refused before its object is linked (the region then runs eagerly, as any failed region does)."""
    from torch_mlir import ir

    from dynamo_mlir.codegen.cpu.object_code import LinkedObject, compile_object
    from dynamo_mlir.codegen.cpu.linking import external_symbols
    from dynamo_mlir.dialects import new_context

    with new_context():
        module = ir.Module.parse("""
          llvm.func @erff(f32) -> f32
          llvm.func @__no_such_runtime_helper(f32) -> f32
          llvm.func @main(%x: f32) -> f32 {
            %a = llvm.call @erff(%x) : (f32) -> f32
            %b = llvm.call @__no_such_runtime_helper(%a) : (f32) -> f32
            llvm.return %b : f32
          }""")
        assert external_symbols(module) == ["erff", "__no_such_runtime_helper"]
        obj = compile_object(module, 2, frozenset())
    assert {"erff", "__no_such_runtime_helper"} <= set(obj.calls)
    with pytest.raises(CompileError, match="__no_such_runtime_helper") as info:
        LinkedObject(obj)
    assert "erff" not in str(info.value)  # libm's is found in the process


def test_perf_map_names_the_linked_functions(monkeypatch, caplog):
    """DYNAMO_MLIR_PERF_MAP=1: each linked object's functions get a line of /tmp/perf-<pid>.map
    ("start size name", hex), at the address the engine put them and with the ELF symbol's size;
    the variable is no option, so no warning calls it stray."""
    from torch_mlir import ir

    from dynamo_mlir.codegen.cpu.linking import functions_in_elf
    from dynamo_mlir.codegen.cpu.object_code import LinkedObject, compile_object
    from dynamo_mlir.dialects import new_context

    monkeypatch.setenv("DYNAMO_MLIR_PERF_MAP", "1")
    path = f"/tmp/perf-{os.getpid()}.map"
    before = open(path).read() if os.path.exists(path) else None
    with new_context():
        module = ir.Module.parse("""
          llvm.func @twice(%x: f32) -> f32 {
            %a = llvm.fadd %x, %x : f32
            llvm.return %a : f32
          }""")
        obj = compile_object(module, 2, frozenset())
    try:
        linked = LinkedObject(obj)
        sizes = dict(functions_in_elf(obj.code))
        assert sizes["twice"] > 0
        lines = open(path).read()[len(before or ""):].splitlines()
        named = {line.split()[2].rsplit(":", 1)[1]: line.split() for line in lines}
        start, size, _ = named["twice"]
        assert int(start, 16) == linked.function("twice") and int(size, 16) == sizes["twice"]
    finally:
        if before is None:
            os.remove(path)
    torch.compile(lambda x: x * 2, backend="mlir", options={"cache": False})(torch.ones(3))
    assert "PERF_MAP" not in caplog.text

    def unwritable(*args, **kwargs):
        raise PermissionError("read-only /tmp")

    from dynamo_mlir.codegen.cpu import object_code
    monkeypatch.setattr(object_code, "open", unwritable, raising=False)
    again = LinkedObject(obj)  # a map it cannot write: said, and the object still links
    assert again.function("twice") and "perf map could not be written: read-only /tmp" in caplog.text


def test_eager_op_with_wrong_metadata_cannot_feed_wrong_bytes_to_a_region():
    """torch's fake metadata says prims.signbit returns f32, eager returns bool: the compiled
    region after it must not read those bytes as floats (it runs eagerly for such a call)."""
    x = torch.randn(64)
    f = lambda x: torch.ops.prims.signbit.default(x).to(torch.bool)
    compiled = torch.compile(f, backend="mlir")
    torch.testing.assert_close(compiled(x), f(x))
    torch.testing.assert_close(compiled(-x), f(-x))
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {"prims.signbit.default": 1}
    (region,) = s["runtime_fallbacks"]  # every call of the region after it ran eagerly, counted
    assert s["runtime_fallbacks"][region] == {
        "calls": 2, "reasons": {"input 0 is torch.bool (64,) where the graph promised torch.float32 (64,)": 2}}
    assert s["runtime_fallback_calls"] == 2
    assert f"run-time fallback: {region} ran eagerly in 2 call(s)" in dynamo_mlir.explain()


def test_graph_whose_shapes_need_tensor_values_runs_eagerly_and_says_why():
    # narrow's start comes from a tensor: AOTAutograd cannot trace it ahead of time.
    fn = lambda x, start: torch.narrow(x, 1, start, 2).relu() * 2
    x, start = torch.randn(4, 6), torch.tensor(3)
    torch.testing.assert_close(torch.compile(fn, backend="mlir")(x, start), fn(x, start))
    s = dynamo_mlir.stats()
    # Every call of the graph ran eagerly, each counted; the reason names the op that needed values.
    assert s["fallback_ops"] == {"torch.narrow": 1, "Tensor.relu": 1, "_operator.mul": 1}, s["fallback_ops"]
    assert s["ops_fallback"] == 3 and s["ops_compiled"] == 0 and s["targets"] == ["eager"]
    (reason,) = {why for _, why in s["fallback_reasons"]}
    assert "depend on tensor values (aten._local_scalar_dense.default)" in reason


@torch.library.custom_op("dynamo_mlir_test::scaled", mutates_args=())
def _scaled(x: torch.Tensor) -> torch.Tensor:
    return x * 3


@torch.library.custom_op("dynamo_mlir_test::scaled_backward", mutates_args=())
def _scaled_backward(grad: torch.Tensor) -> torch.Tensor:
    return grad * 3


_scaled.register_fake(torch.empty_like)
_scaled.register_autograd(lambda ctx, grad: _scaled_backward(grad))


@_scaled_backward.register_fake
def _(grad):
    # as torch 2.11's meta function of _efficient_attention_backward does: the forward traces,
    # the backward's meta raises while AOTAutograd traces the joint graph
    raise TypeError("meta_scaled_backward() got multiple values for argument 'scale'")


def test_graph_aotautograd_cannot_trace_runs_eagerly_and_says_why():
    """A meta function that raises stops AOTAutograd's tracing: the graph runs eagerly (forward
    and backward), reported, instead of failing the user's call."""
    fn = lambda x: _scaled(x.sin()).sum()  # noqa: E731
    x = torch.randn(5, requires_grad=True)
    got = torch.compile(fn, backend="mlir")(x)
    got.backward()
    x2 = x.detach().clone().requires_grad_()
    want = fn(x2)
    want.backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x.grad, x2.grad)
    s = dynamo_mlir.stats()
    assert s["ops_compiled"] == 0 and s["targets"] == ["eager"], s
    assert s["fallback_ops"] == {"Tensor.sin": 1, "dynamo_mlir_test.scaled.default": 1, "Tensor.sum": 1}
    (reason,) = {why for _, why in s["fallback_reasons"]}
    assert "AOTAutograd could not trace the graph (TypeError: meta_scaled_backward()" in reason
    with pytest.raises(Exception, match="multiple values for argument"):
        torch._dynamo.reset()
        torch.compile(fn, backend="mlir", options={"strict": True})(x)


def test_graph_whose_shapes_need_tensor_values_keeps_fullgraph():
    # The backend hands the graph back to run eagerly: no graph break, so fullgraph holds.
    fn = lambda x, start: torch.narrow(x, 1, start, 2)
    x, start = torch.randn(4, 6), torch.tensor(3)
    torch.testing.assert_close(torch.compile(fn, backend="mlir", fullgraph=True)(x, start), fn(x, start))
    # With fullgraph, Dynamo keeps .item() in the graph: AOTAutograd traces it, nothing compiles.
    assert dynamo_mlir.stats()["fallback_ops"] == {
        "aten._local_scalar_dense.default": 1, "_operator.lt": 1, "_operator.eq": 1, "_operator.and_": 1,
        "torch.sym_ite": 1, "aten.slice.Tensor": 1}
