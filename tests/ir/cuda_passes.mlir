// RUN: dynamo-mlir pass cuda-erase-empty-loop-nests %s --target cuda | check --prefix EMPTY

// Named passes of the cuda target run alone (`dynamo-mlir passes --target cuda`).
// cuda-erase-empty-loop-nests: loop nests with a zero-size operand have no trips and are erased
// (a zero-size view may have no static strides to build a kernel from, fuzzer program 47); the
// fill of the reduction's non-empty output stays: the sum over an empty dim is that fill.
// EMPTY: func.func @main
// EMPTY-NEXT: arith.constant
// EMPTY-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg1 : memref<7xf32>)
// EMPTY-NEXT: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%a: memref<7x0xf32>, %out: memref<7xf32>, %b: memref<7x0xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<7xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%a : memref<7x0xf32>) outs(%out : memref<7xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : memref<7x0xf32>) outs(%b : memref<7x0xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
