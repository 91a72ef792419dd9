// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix LINALG
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix LOOPS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O library_matmul=false --stage linalg | check --prefix OWN

// A linear layer (addmm's decomposition: matmul, then + broadcast bias), codegen/cpu/library_epilogue.py:
// the broadcast bias becomes the matmul's accumulator (moved before it, with its tensor.empty),
// so the add and the zero fill are gone ...
// LINALG: func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<4xf32>)
// LINALG: %[[BIAS:[0-9]+]] = linalg.generic
// LINALG-SAME: ins(%arg2 : tensor<4xf32>)
// LINALG: %[[MM:[0-9]+]] = linalg.matmul
// LINALG-SAME: ins(%arg1, %arg0 : tensor<2x8xf32>, tensor<4x8xf32>) outs(%[[BIAS]] : tensor<2x4xf32>)
// LINALG-NEXT: return %[[MM]]
// LINALG-NOT: linalg.fill
// ... and after bufferization the bias is written once into the result, which sgemm_ reads and
// overwrites with beta = 1 (alpha and beta are the same constant 1.0; no 0.0 anywhere, no add).
// LOOPS: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<2x8xf32>, %arg2: memref<4xf32>, %arg3: memref<2x4xf32>)
// LOOPS-NOT: arith.constant 0.000000e+00
// LOOPS: memref.load %arg2
// LOOPS-NEXT: memref.store %{{[0-9]+}}, %arg3
// LOOPS-NOT: arith.addf
// LOOPS: extract_strided_metadata %arg3
// LOOPS: call @sgemm_(
// LOOPS-NEXT: return
// Without the library, our own matmul loops accumulate into the zero fill as before.
// OWN: linalg.fill
// OWN: arith.mulf
// OWN: arith.addf
// OWN: arith.addf
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = "dynamo.permute"(%arg0) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "dynamo.matmul"(%arg1, %0) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %2 = "dynamo.broadcast"(%arg2) {dims = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<2x4xf32>
  %3 = "dynamo.add"(%1, %2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}

// -----
// Two matmuls of one shape: CSE gives them one zero fill, which bufferization would fill once and
// copy before each gemm. Each gets its own fill right before it instead, which call_blas drops
// (beta = 0): no loop and no copy before the calls.
// LOOPS: func.func @main(%arg0: memref<2x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<8x4xf32>, %arg3: memref<2x4xf32>, %arg4: memref<128xi8>)
// LOOPS-DAG: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// LOOPS-NOT: scf.for
// LOOPS-NOT: memref.copy
// LOOPS: memref.store %[[ZERO]]
// LOOPS: call @sgemm_(
// LOOPS-NOT: scf.for
// LOOPS: memref.store %[[ZERO]]
// LOOPS: call @sgemm_(
// LOOPS-NEXT: scf.for
// LOOPS: arith.mulf
func.func @main(%arg0: tensor<2x8xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %0 = "dynamo.matmul"(%arg0, %arg1) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %1 = "dynamo.matmul"(%arg0, %arg2) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %2 = "dynamo.mul"(%0, %1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----
// A residual added to a matmul is its accumulator too, even when the residual is used again
// afterwards: bufferization then copies it into C first (C is written in place by the gemm).
// LINALG: %[[R:[0-9]+]] = linalg.generic
// LINALG: math.exp
// LINALG: %[[MM:[0-9]+]] = linalg.matmul ins(%arg0, %arg1 : tensor<2x8xf32>, tensor<8x4xf32>) outs(%[[R]] : tensor<2x4xf32>)
// LINALG-NOT: arith.addf
// LINALG: ins(%[[MM]], %[[R]] : tensor<2x4xf32>, tensor<2x4xf32>)
// LINALG: arith.mulf
// LOOPS: memref.load %arg3
// LOOPS-NEXT: memref.store %{{[0-9]+}}, %[[C:view[_0-9]*]]
// LOOPS: extract_strided_metadata %[[C]]
// LOOPS: call @sgemm_(
func.func @main(%arg0: tensor<2x8xf32>, %arg1: tensor<8x4xf32>, %arg2: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "dynamo.exp"(%arg2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = "dynamo.matmul"(%arg0, %arg1) : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %2 = "dynamo.add"(%0, %1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = "dynamo.mul"(%2, %0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %3 : tensor<2x4xf32>
}
