// RUN: dynamo-mlir pass cpu-lower-dynamo-ops %s | check --prefix LOWER
// RUN: dynamo-mlir pass cuda-lower-dynamo-ops %s --target cuda | check --prefix LOWER
// RUN: dynamo-mlir pass cpu-linalg-cleanup %s | check --prefix CLEAN
// RUN: dynamo-mlir pass cuda-linalg-cleanup %s --target cuda | check --prefix CLEAN
// RUN: dynamo-mlir pass cpu-fuse-elementwise %s | check --prefix FUSE
// RUN: dynamo-mlir pass cuda-fuse-elementwise %s --target cuda | check --prefix FUSE

// The passes both targets have, run alone (`dynamo-mlir passes`). cpu-/cuda-lower-dynamo-ops:
// each dynamo op by its rule (here the generic exp: one linalg.generic with math.exp);
// *-linalg-cleanup: canonicalize and CSE (the two equal exps become one, returned twice: what
// cpu-distinct-results and bufferize's copy then undo).
// LOWER: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
// LOWER: math.exp
// LOWER-NOT: dynamo.
// CLEAN: %[[E:[0-9]+]] = "dynamo.exp"(%arg0)
// CLEAN-NEXT: return %[[E]], %[[E]]
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "dynamo.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "dynamo.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// *-fuse-elementwise: a producer and its elementwise consumer, one generic (exp then add).
// FUSE: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
// FUSE: math.exp
// FUSE-NEXT: arith.addf
// FUSE-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
