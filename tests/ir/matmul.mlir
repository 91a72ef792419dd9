// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg | check --prefix CUDA
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage gpu | check --prefix LIBRARY
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O library_matmul=false --stage gpu | check --prefix OWN

// cpu: the matmul as a generic (i, k, j): multiply, accumulate into a zero fill (the matmul
// accumulator, common.py's), with the reduction dim k in the middle.
// CHECK: #[[A:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK: #[[B:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK: #[[C:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: %[[ACC:[0-9]+]] = linalg.fill ins(%{{cst[_0-9]*}} : f32) outs(%{{[0-9]+}} : tensor<4x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME: outs(%[[ACC]] : tensor<4x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:in]]: f32, %[[Y:in_0]]: f32, %out: f32):
// CHECK-NEXT: %[[P:[0-9]+]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT: arith.addf %out, %[[P]] : f32
// cuda: the named linalg.matmul, which the host schedule can hand to cuBLAS.
// CUDA: linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%{{[0-9]+}} : tensor<4x4xf32>)
// With library_matmul (the default) it stays in the host function, its zero fill folded into
// it (overwrite, not accumulate), and no kernel is launched for it.
// LIBRARY: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<4x4xf32>)
// LIBRARY-NEXT: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg1 : memref<4x8xf32>, memref<8x4xf32>) outs(%arg2 : memref<4x4xf32>)
// LIBRARY-NEXT: return
// LIBRARY-NOT: gpu.launch_func
// LIBRARY-NOT: linalg.fill
// Without it: our own kernel, one block per output element (16) reducing over k with
// gpu.all_reduce.
// OWN: gpu.launch_func @main_kernel::@main_kernel blocks in (%c16, %c1, %c1) threads in (%c32, %c1, %c1)
// OWN-NOT: linalg.matmul
// OWN: gpu.module @main_kernel
// OWN: arith.mulf
// OWN: gpu.all_reduce add
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %0 = "dynamo.matmul"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----
// A batched matmul on cpu: the batch dim leads, parallel, in all three maps.
// CHECK: #[[A:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK: #[[B:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK: #[[C:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CUDA: linalg.batch_matmul ins(%arg0, %arg1 : tensor<2x4x8xf32>, tensor<2x8x4xf32>)
func.func @main(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  %0 = "dynamo.matmul"(%arg0, %arg1) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}
