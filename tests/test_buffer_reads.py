"""A buffer taken with `bufferization.to_buffer` is read where it was taken (codegen/buffer_reads.py).

CSE merges identical `to_buffer`s, so one memref taken before a first library call was read again
by a second one, after bufferization had reused the tensor's buffer in place for another value:
on cuda the bilinear-interpolate backward's index_puts read another index's values (wrong
gradients, or a device assert when those were out of range)."""

import re

from torch_mlir import ir

from dynamo_mlir.codegen import resolve, stages
from dynamo_mlir.codegen.buffer_reads import take_buffers_at_use
from dynamo_mlir.dialects import new_context

NEG = """linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%IN : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>"""

# x's buffer is read by two calls through one to_buffer (as CSE leaves it); y, made between
# them into the same tensor.empty, may take x's buffer once x's last tensor use is behind it.
SHARED = f"""
#map = affine_map<(d0) -> (d0)>
func.func private @use(memref<4xf32>)
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{
  %e = tensor.empty() : tensor<4xf32>
  %x = {NEG.replace("%IN", "%a")}
  %m = bufferization.to_buffer %x read_only : tensor<4xf32> to memref<4xf32>
  func.call @use(%m) : (memref<4xf32>) -> ()
  %y = {NEG.replace("%IN", "%b")}
  func.call @use(%m) : (memref<4xf32>) -> ()
  %z = {NEG.replace("%IN", "%y")}
  return %z : tensor<4xf32>
}}
"""


def _bufferized(text: str) -> str:
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        stages.bufferize(module, resolve({"target": "cpu"}), deallocate=False)
        return str(module)


def test_a_buffer_read_twice_is_not_overwritten_in_between():
    text = _bufferized(SHARED)
    first, second = [m.start() for m in re.finditer(r"call @use\(", text)]
    (read,) = set(re.findall(r"call @use\((%\w+)\)", text))  # both calls read x's buffer
    assert f"outs({read} " not in text[first:second], text  # and nothing writes it between them


def test_every_use_gets_its_own_to_buffer_right_before_it():
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(SHARED)
        assert take_buffers_at_use(module) == 2
        main = module.body.operations[1]
        names = [op.operation.name for op in main.regions[0].blocks[0].operations]
    calls = [i for i, n in enumerate(names) if n == "func.call"]
    assert all(names[i - 1] == "bufferization.to_buffer" for i in calls), names
    assert names.count("bufferization.to_buffer") == 2, names
    with new_context(), ir.Location.unknown():
        again = ir.Module.parse(str(module))
        assert take_buffers_at_use(again) == 0  # already in place: left alone
