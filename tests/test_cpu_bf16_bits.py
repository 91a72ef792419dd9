"""bf16 on every x86-64 CPU (issue 22): no compiler-rt half-conversion call in the machine code,
whatever the host has, and a symbol the machine code needs but nobody provides is a compile
error that runs the region eagerly, never a call through a null pointer.

The machine code is checked for an AVX2-only CPU (znver3, no AVX-512-BF16) with llvmlite, on
any host: LLVM's optimizer folded the bf16 bits back into bfloat selects, which such a CPU
could only legalize with `__truncsfbf2` (a SIGSEGV there, after `JIT session error`)."""

import contextlib
import dataclasses
import re

import pytest
import torch
from torch_mlir import ir

import dynamo_mlir
from dynamo_mlir.codegen.cpu import linking
from dynamo_mlir.codegen.cpu.object_code import LinkedObject, compile_object
from dynamo_mlir.codegen.half_bits import bf16_as_bits
from dynamo_mlir.codegen.llvm_text import to_llvmlite_text
from dynamo_mlir.codegen.passes import CompileError
from dynamo_mlir.codegen.target import Stage, get_target, register_target
from dynamo_mlir.dialects import new_context
from helpers import assert_all_compiled, assert_close_to_float32, read_stage

bf = torch.bfloat16
# compiler-rt's conversions of the half types: none is in a JIT process.
HALF_RUNTIME_CALLS = re.compile(r"__(?:trunc[sdtx]f|extend)(?:bf|hf)\w*")


def runtime_calls(ll: str, cpu: str = "znver3") -> set[str]:
    """The half-conversion calls in `ll`'s machine code for `cpu`, optimized as the JIT does (O3)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    text = "\n".join(line for line in ll.splitlines() if not line.startswith("// dynamo-mlir"))
    module = llvm.parse_assembly(to_llvmlite_text(text))
    machine = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, opt=3)
    passes = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(3))
    passes.getModulePassManager().run(module, passes)
    return set(HALF_RUNTIME_CALLS.findall(machine.emit_assembly(module)))


def _index_reduce(reduce):
    return lambda x, i, s: x.index_reduce(0, i, s, reduce, include_self=True)


def _scalar_index_reduce():  # OpInfo's first sample: a 0-d self, the case that crashed
    return torch.randn((), dtype=bf), torch.tensor([0]), torch.randn((), dtype=bf)


def _matrix_index_reduce():
    return torch.randn(5, 5, dtype=bf), torch.tensor([4, 0, 4, 2]), torch.randn(4, 5, dtype=bf)


# id, function, inputs: bf16 ops whose machine code had __truncsfbf2 for znver3 (index_reduce,
# cummax), and the reductions issue 22 names (std/var: unbiased, in f32 and rounded once).
SELECTIONS = [
    ("index_reduce_amax_0d", _index_reduce("amax"), _scalar_index_reduce),
    ("index_reduce_amin_0d", _index_reduce("amin"), _scalar_index_reduce),
    ("index_reduce_amax", _index_reduce("amax"), _matrix_index_reduce),
    ("index_reduce_amin", _index_reduce("amin"), _matrix_index_reduce),
    ("cummax", lambda x: torch.cummax(x, 1).values, lambda: (torch.randn(4, 40, dtype=bf),)),
]
REDUCTIONS = [
    ("std", lambda x: torch.std(x, dim=1)),
    ("var", lambda x: torch.var(x, dim=1, unbiased=True, keepdim=True)),
    ("std_mean", lambda x: torch.std_mean(x, dim=(1,))),
    ("var_mean", lambda x: torch.var_mean(x)),
]


def _compile_with_dump(fn, inputs, tmp_path):
    out = torch.compile(fn, backend="mlir", dynamic=False, options={"dump_dir": str(tmp_path)})(*inputs)
    return out, read_stage(str(tmp_path), "ll")


@pytest.mark.parametrize("name,fn,make", SELECTIONS, ids=[c[0] for c in SELECTIONS])
def test_bf16_selections_have_no_runtime_call_on_an_avx2_cpu(name, fn, make, tmp_path):
    inputs = make()
    got, ll = _compile_with_dump(fn, inputs, tmp_path)
    assert_all_compiled()
    torch.testing.assert_close(got, fn(*inputs))  # a selection: no rounding of its own
    assert runtime_calls(ll) == set()
    assert "bfloat" not in ll  # bf16 reaches LLVM as i16 bits only


@pytest.mark.parametrize("name,fn", REDUCTIONS, ids=[c[0] for c in REDUCTIONS])
def test_bf16_std_var_have_no_runtime_call_on_an_avx2_cpu(name, fn, tmp_path):
    x = torch.randn(5, 6, 7, dtype=bf)
    got, ll = _compile_with_dump(fn, (x,), tmp_path)
    assert_all_compiled()
    want = fn(x.float())
    for g, w in zip(*[t if isinstance(t, tuple) else (t,) for t in (got, want)]):
        assert g.dtype == bf
        assert_close_to_float32(g, w)
    assert runtime_calls(ll) == set()


def test_bf16_widened_to_float64_is_exact(tmp_path):
    """fpext bf16 -> f64, which arith-expand leaves: the bits shifted, then widened."""
    x = torch.tensor([1.5, -0.0, 1e-39, float("inf"), float("nan"), -3.0e38]).to(bf)
    got, ll = _compile_with_dump(lambda x: x.to(torch.float64) * 2, (x,), tmp_path)
    assert_all_compiled()
    torch.testing.assert_close(got, x.to(torch.float64) * 2, rtol=0, atol=0, equal_nan=True)
    assert "bfloat" not in ll


# ----------------------------------------------------------------------------- the LLVM-dialect pass

BITS_MODULE = """
llvm.func @f(%p: !llvm.ptr, %c: i1) -> f64 {
  %a = llvm.load %p : !llvm.ptr -> bf16
  %k = llvm.mlir.constant(1.5 : bf16) : bf16
  %s = llvm.select %c, %a, %k : i1, bf16
  %v = llvm.mlir.constant(dense<[1.5, -2.0, 0x7FC0]> : vector<3xbf16>) : vector<3xbf16>
  %g = llvm.getelementptr %p[1] : (!llvm.ptr) -> !llvm.ptr, bf16
  llvm.br ^next(%s : bf16)
^next(%b: bf16):
  llvm.store %b, %g : bf16, !llvm.ptr
  llvm.store %v, %p : vector<3xbf16>, !llvm.ptr
  %w = llvm.fpext %b : bf16 to f64
  llvm.return %w : f64
}"""


def test_bf16_as_bits_leaves_no_bf16():
    with new_context():
        module = bf16_as_bits(ir.Module.parse(BITS_MODULE))
        text = str(module)
    assert "bf16" not in text
    assert "llvm.mlir.constant(16320 : i16) : i16" in text  # 1.5 = 0x3FC0
    assert "dense<[16320, -16384, 32704]> : vector<3xi16>" in text  # -2.0 = 0xC000, NaN 0x7FC0
    assert "^bb1(%" in text and ": i16)" in text  # the loop-carried value is i16 too
    assert re.search(r"llvm.zext .* : i16 to i32", text) and "llvm.shl" in text
    assert re.search(r"llvm.fpext .* : f32 to f64", text)


def test_bf16_arithmetic_left_for_llvm_is_refused():
    with new_context():
        module = ir.Module.parse("""
          llvm.func @f(%a: bf16) -> bf16 {
            %s = llvm.fadd %a, %a : bf16
            llvm.return %s : bf16
          }""")
        with pytest.raises(CompileError, match="stage 'llvm' failed on op 'llvm.fadd'"):
            bf16_as_bits(module)


# ----------------------------------------------------------------------------- symbols only machine code needs

# i128 division is a libgcc/compiler-rt call (__divti3) on every x86-64 CPU, and no IR declares it.
NEEDS_DIVTI3 = """
  llvm.func @needs_divti3(%a: i128, %b: i128) -> i128 {
    %q = llvm.sdiv %a, %b : i128
    llvm.return %q : i128
  }"""


def _divti3_missing():
    import ctypes

    if hasattr(ctypes.CDLL(None), "__divti3"):
        pytest.skip("this process provides __divti3")


def test_symbol_only_the_machine_code_needs_is_a_compile_error():
    _divti3_missing()
    with new_context():
        module = ir.Module.parse(NEEDS_DIVTI3 + "llvm.func @main() { llvm.return }")
        assert linking.external_symbols(module) == []  # the IR declares nothing: only the object calls it
        obj = compile_object(module, 2, frozenset())
    assert "__divti3" in obj.calls
    with pytest.raises(CompileError, match=r"calls \['__divti3'\]"):
        LinkedObject(obj)


@contextlib.contextmanager
def _cpu_llvm_stage_adding(function_text):
    """The cpu target with `function_text` appended to every module after its `llvm` stage."""
    target = get_target("cpu")
    names = target.stage_names()

    def append(module, options):
        with module.context:
            extra = ir.Module.parse(function_text)
            for op in list(extra.body.operations):
                module.body.append(op.detach_from_parent())
        return module

    at = names.index("llvm") + 1
    stages = (*target.stages[:at], Stage("llvm-extra", "mlir", append), *target.stages[at:])
    register_target(dataclasses.replace(target, stages=stages), override=True)
    try:
        yield
    finally:
        register_target(target, override=True)


def test_unlinkable_region_runs_eagerly():
    _divti3_missing()
    x = torch.randn(8)
    with _cpu_llvm_stage_adding(NEEDS_DIVTI3):
        got = torch.compile(lambda x: x * 2 + 1, backend="mlir")(x)
    torch.testing.assert_close(got, x * 2 + 1)
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 1 and s["ops_compiled"] == 0
    assert "__divti3" in dynamo_mlir.explain()
