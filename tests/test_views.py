"""codegen/views.py: the one walk from a memref value to the buffer it views, shared by the
cpu passes (outline, lane vectors, parallel) and the cuda loop nests."""

from torch_mlir import ir

from dynamo_mlir.codegen import views
from dynamo_mlir.dialects import new_context

IR = """
func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<32xf32>) {
  %a = memref.alloc() : memref<2x16xf32>
  %s = memref.subview %arg0[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
  %c = memref.collapse_shape %a [[0, 1]] : memref<2x16xf32> into memref<32xf32>
  %e = memref.expand_shape %c [[0, 1]] output_shape [4, 8] : memref<32xf32> into memref<4x8xf32>
  %c0 = arith.constant 0 : index
  scf.for %i = %c0 to %c0 step %c0 iter_args(%m = %arg1) -> (memref<32xf32>) {
    %v = memref.expand_shape %m [[0, 1]] output_shape [4, 8] : memref<32xf32> into memref<4x8xf32>
    scf.yield %m : memref<32xf32>
  }
  return
}
"""


def _values():
    module = ir.Module.parse(IR)
    block = module.body.operations[0].regions[0].blocks[0]
    ops = list(block.operations)
    named = {"arg0": block.arguments[0], "alloc": ops[0].result, "subview": ops[1].result,
             "collapse": ops[2].result, "expand": ops[3].result}
    loop_view = list(ops[5].regions[0].blocks[0].operations)[0].result
    return module, named, loop_view


def test_view_root_and_buffer_of():
    with new_context():
        module, v, loop_view = _values()
        assert views.view_root(v["subview"]) == v["arg0"]
        assert views.view_root(v["expand"]) == v["alloc"] and views.buffer_of(v["expand"]) == v["alloc"]
        assert views.buffer_of(loop_view) is None  # a loop's block argument: unknown
        # `stop`: a view counted as a buffer of its own (memory planning's views)
        assert views.buffer_of(v["expand"], stop=lambda x: x == v["collapse"]) == v["collapse"]
        # `through` as a predicate: views followed only in some cases
        no_collapse = lambda op, result: op.name != "memref.collapse_shape"  # noqa: E731
        assert views.view_root(v["expand"], through=no_collapse) == v["collapse"]
        assert views.buffer_of(v["expand"], through=no_collapse) is None
