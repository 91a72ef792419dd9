// RUN: dynamo-mlir pass cpu-unshare-zero-fills %s | check --prefix UNSHARE
// RUN: dynamo-mlir pass cpu-call-blas %s | check --prefix BLAS

// Named passes of the cpu target run alone (`dynamo-mlir passes` lists them). Two gemms share
// one zero fill after CSE: cpu-unshare-zero-fills gives each its own fill right before it, what
// cpu-call-blas folds into beta = 0.
// UNSHARE: %[[F1:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{[0-9]+}} : tensor<4x3xf32>)
// UNSHARE-NEXT: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[F1]] : tensor<4x3xf32>)
// UNSHARE-NEXT: tensor.empty() : tensor<4x3xf32>
// UNSHARE-NEXT: %[[F2:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{[0-9]+}} : tensor<4x3xf32>)
// UNSHARE-NEXT: linalg.matmul ins(%arg2, %arg3 : {{.*}}) outs(%[[F2]] : tensor<4x3xf32>)
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x8xf32>, %d: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = linalg.matmul ins(%c, %d : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// cpu-call-blas on bufferized IR: a zero fill right before a matmul of buffers becomes one
// sgemm_ call with beta = 0 (the fill folded), the matmul gone.
// BLAS: func.func @main
// BLAS-NOT: linalg.fill
// BLAS-NOT: linalg.matmul
// BLAS: call @sgemm_
// BLAS-NOT: linalg.matmul
// BLAS: func.func private @sgemm_
func.func @main(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %out: memref<4x3xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<4x3xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%out : memref<4x3xf32>)
  return
}
