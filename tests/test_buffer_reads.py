"""Each library call reads its operands through a to_buffer of its own (codegen/buffer_reads.py).

CSE merged identical `to_buffer`s, so one memref taken before a first library call was read
again by a second one, after bufferization had reused the tensor's buffer in place for another
value: ResNet-50's projection shortcut on cpu (tests/test_cpu_channels_last.py,
test_two_resnet_bottlenecks), the bilinear-interpolate backward's index_puts on cuda."""

import re

import torch
import torch.nn.functional as F

import dynamo_mlir
from torch_mlir import ir

from dynamo_mlir.codegen import resolve, stages
from dynamo_mlir.codegen.passes import run_pipeline
from dynamo_mlir.dialects import new_context
from helpers import read_stage, zeros_runtime

NEG = """linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%IN : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>"""

# x is read by two calls, each through a to_buffer (ATTR0 / ATTR1 on them); y, made between the
# calls into the same tensor.empty, may take x's buffer once x's last tensor use is behind it.
TWO_READS = f"""
#map = affine_map<(d0) -> (d0)>
func.func private @use(memref<4xf32>)
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {{
  %e = tensor.empty() : tensor<4xf32>
  %x = {NEG.replace("%IN", "%a")}
  %m = bufferization.to_buffer %x read_only ATTR0 : tensor<4xf32> to memref<4xf32>
  func.call @use(%m) : (memref<4xf32>) -> ()
  %y = {NEG.replace("%IN", "%b")}
  %m2 = bufferization.to_buffer %x read_only ATTR1 : tensor<4xf32> to memref<4xf32>
  func.call @use(%m2) : (memref<4xf32>) -> ()
  %z = {NEG.replace("%IN", "%y")}
  return %z : tensor<4xf32>
}}
"""


def _cse_then_bufferize(tags: tuple[str, str]) -> str:
    text = TWO_READS.replace("ATTR0", tags[0]).replace("ATTR1", tags[1])
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        options = resolve({"target": "cpu"})
        run_pipeline(module, "cse", "linalg", options)  # as the linalg stage ends
        stages.bufferize(module, options, deallocate=False)
        return str(module)


def _second_read_overwritten(text: str) -> bool:
    first, second = [m.start() for m in re.finditer(r"call @use\(", text)]
    read = re.findall(r"call @use\((%\w+)\)", text)[1]
    return f"outs({read} " in text[first:second]


def test_tagged_reads_stay_apart_through_cse():
    text = _cse_then_bufferize(("{dynamo_mlir.read = 0 : i64}", "{dynamo_mlir.read = 1 : i64}"))
    assert not _second_read_overwritten(text), text


def test_untagged_reads_are_merged_and_the_buffer_is_overwritten():
    """Why the tags: without them CSE makes the two reads one, and y lands on x's buffer."""
    text = _cse_then_bufferize(("", ""))
    assert _second_read_overwritten(text), text


def test_bilinear_backward_for_cuda_reads_each_index_once(tmp_path):
    """The resampling backward's four index_puts share index tensors (CSE); each call still has
    reads of its own at the linalg stage, no memref passed to two calls."""
    x = torch.randn(1, 2, 4, 5, requires_grad=True)
    fn = lambda x: F.interpolate(x, size=(7, 3), mode="bilinear")
    options = {"target": "cuda", "cuda_arch": "sm_90", "strict": True, "dump_dir": str(tmp_path)}
    with zeros_runtime("cuda"):
        torch.compile(fn, backend="mlir", options=options)(x).sum().backward()
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["ops_compiled"] >= 1, dynamo_mlir.explain()
    assert s["library_ops"].get("aten.index_put.default") == 4, dynamo_mlir.explain()
    linalg = read_stage(str(tmp_path), "linalg")
    calls = re.findall(r"call @dynamo_cuda_index_put_\d+\(([^)]*)\)", linalg)
    assert len(calls) == 4, linalg
    operands = [v.strip() for call in calls for v in call.split(",")]
    assert len(operands) == len(set(operands)), calls
    reads = re.findall(r"bufferization.to_buffer .*\{dynamo_mlir.read = (\d+) : i64\}", linalg)
    assert len(reads) == len(set(reads)) >= 4 * 3  # values and two indices per call, each read numbered apart
