"""A region never writes its caller's tensors: function arguments are read-only to bufferization
(codegen/stages.py, read_only_arguments), on every target.

The bug this guards: addmm/baddbmm with a full-shaped `self` ran as a gemm accumulating into
`self` (library_epilogue.fold_bias), and bufferization, taking arguments as writable, let the gemm
write C in place: the result was right and the caller's tensor was garbage."""

import pytest
import torch
from torch_mlir import ir

import dynamo_mlir
from dynamo_mlir.codegen import resolve, stages
from dynamo_mlir.dialects import new_context

from helpers import assert_fallbacks

# (name, function, input shapes, the library calls it makes with library_matmul on)
CASES = [
    ("addmm", lambda m, a, b: torch.addmm(m, a, b), [(5, 7), (5, 3), (3, 7)], {"aten.mm.default": 1}),
    ("addmm_scaled", lambda m, a, b: torch.addmm(m, a, b, beta=0.5, alpha=2.0), [(5, 7), (5, 3), (3, 7)],
     {"aten.mm.default": 1}),
    ("baddbmm", lambda m, a, b: torch.baddbmm(m, a, b), [(2, 4, 6), (2, 4, 3), (2, 3, 6)], {"aten.bmm.default": 1}),
    ("linear_full_bias", lambda x, w, m: torch.nn.functional.linear(x, w) + m, [(4, 3), (6, 3), (4, 6)],
     {"aten.mm.default": 1}),
    ("index_put", lambda x, i, v: torch.index_put(x, (i,), v), [(6, 3), None, (2, 3)], {}),
    ("scatter_add", lambda x, i, v: x.scatter_add(0, i, v), [(6, 3), None, (2, 3)], {}),
]


def _inputs(name, shapes):
    torch.manual_seed(0)
    index = {"index_put": torch.tensor([1, 4]), "scatter_add": torch.tensor([[1, 4, 0], [5, 2, 2]])}
    return [torch.randn(s) if s is not None else index[name] for s in shapes]


@pytest.mark.parametrize("library_matmul", [True, False])
@pytest.mark.parametrize("name,fn,shapes,library", CASES, ids=[c[0] for c in CASES])
def test_inputs_unchanged_after_the_call(name, fn, shapes, library, library_matmul):
    inputs = _inputs(name, shapes)
    before = [t.clone() for t in inputs]
    torch._dynamo.reset()
    dynamo_mlir.reset()
    compiled = torch.compile(fn, backend="mlir", options={"library_matmul": library_matmul})
    got = compiled(*inputs)
    for i, (t, b) in enumerate(zip(inputs, before)):
        assert torch.equal(t, b), f"{name}: input {i} written by the compiled call"
    torch.testing.assert_close(got, fn(*before), rtol=1e-5, atol=1e-5)
    assert_fallbacks({}, min_ops=0, library=library if library_matmul else {})
    assert dynamo_mlir.stats()["ops_compiled"] + dynamo_mlir.stats()["ops_library"] >= 1


# linalg writing into its argument's tensor: bufferized in place unless the argument is read-only.
IN_PLACE = """
#map = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%b : tensor<8xf32>) outs(%a : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""


def _cuda_buffers(module, options):
    from dynamo_mlir.codegen.cuda import pipeline
    from dynamo_mlir.codegen.passes import run_passes

    return run_passes(module, list(pipeline.BUFFERS), options, "buffers")[0]


# What bufferizes on each target: the cpu loops stage (and plugins) call stages.bufferize; the
# cuda target its buffers stage.
BUFFERIZERS = {"cpu": lambda m, o: stages.bufferize(m, o, deallocate=False), "cuda": _cuda_buffers}


@pytest.mark.parametrize("target_name", sorted(BUFFERIZERS))
def test_bufferize_copies_instead_of_writing_an_argument(target_name):
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(IN_PLACE)
        text = str(BUFFERIZERS[target_name](module, resolve({"target": target_name})))
    assert "outs(%arg0 " not in text, text  # writable, the generic would accumulate into %arg0 itself
    assert text.index("memref.copy %arg0, %arg2") < text.index("outs(%arg2 "), text  # a copy, then the loop
    assert "bufferization.writable" not in text  # one-shot bufferize consumes the attribute


def test_read_only_arguments_keeps_the_listed_writable_ones():
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(IN_PLACE)
        stages.read_only_arguments(module, writable={("main", 0)})
        attrs = [ir.DictAttr(d) for d in ir.ArrayAttr(module.body.operations[0].attributes["arg_attrs"])]
    assert stages.WRITABLE not in attrs[0] and stages.WRITABLE in attrs[1]
