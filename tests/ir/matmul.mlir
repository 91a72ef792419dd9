// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O library_matmul=false --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix MKL-LINALG
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix MKL
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage llvm | check --prefix MKL-LLVM
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg | check --prefix CUDA
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage gpu | check --prefix LIBRARY
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O library_matmul=false --stage gpu | check --prefix OWN
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O library_matmul=false --stage linalg | check --prefix OWN-LINALG

// cpu, library_matmul off: the matmul as a generic (i, k, j): multiply, accumulate into a zero fill (the matmul
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
// OWN: gpu.launch_func @row_fused::@kernel blocks in (%c16, %c1, %c1) threads in (%c32, %c1, %c1)
// OWN-NOT: linalg.matmul
// OWN: gpu.module @row_fused
// OWN: arith.mulf
// OWN: gpu.all_reduce add
// cpu (library_matmul, the default): a float32 matmul stays the named op, and after
// bufferization becomes one call to MKL's sgemm_, column-major: C^T = B^T . A^T, so the call is
// (transb 'N' = 78, transa 'N', n = 4, m = 4, k = 8, alpha, B, ldb = 4, A, lda = 8, beta, C,
// ldc = 4), every argument by pointer; the zero fill is dropped (beta = 0): no loop is left.
// MKL-LINALG: linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x4xf32>)
// MKL-LINALG-NOT: linalg.generic
// MKL: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<4x4xf32>)
// MKL-DAG: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// MKL-DAG: arith.constant 78 : i8
// MKL-DAG: arith.constant 8 : i32
// MKL-NOT: scf.for
// MKL: extract_strided_metadata %arg1 : memref<8x4xf32>
// MKL: extract_strided_metadata %arg0 : memref<4x8xf32>
// MKL: memref.store %[[ZERO]]
// MKL: extract_strided_metadata %arg2 : memref<4x4xf32>
// MKL: call @sgemm_(
// MKL-SAME: (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// MKL-NEXT: return
// MKL: func.func private @sgemm_(
// MKL-LLVM: llvm.call @sgemm_(
// MKL-LLVM: llvm.func @sgemm_(
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

// -----
// A float64 batch matmul whose B is a transpose of the last two dims (attention's q @ k^T): the
// transpose becomes B's indexing map (no copy), and the loops stage calls dgemm_ once per batch,
// B read as 'T' (84) in place, each pointer advanced by its batch stride in bytes (4*8*8 = 256
// for A and B, 4*4*8 = 128 for C).
// MKL-LINALG: #[[A:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// MKL-LINALG: #[[B:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// MKL-LINALG: #[[C:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// MKL-LINALG-NOT: linalg.transpose
// MKL-LINALG: linalg.batch_matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%arg0, %arg1 : tensor<2x4x8xf64>, tensor<2x4x8xf64>)
// MKL-DAG: arith.constant 84 : i8
// MKL-DAG: arith.constant 256 : index
// MKL-DAG: arith.constant 128 : index
// MKL: scf.for %[[I:arg[0-9]+]] = %c0 to %c2 step %c1 {
// MKL: func.call @dgemm_(
// MKL-NEXT: }
// MKL: func.func private @dgemm_(
// CHECK: linalg.generic
func.func @main(%arg0: tensor<2x4x8xf64>, %arg1: tensor<2x4x8xf64>) -> tensor<2x4x4xf64> {
  %t = "dynamo.permute"(%arg1) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf64>) -> tensor<2x8x4xf64>
  %0 = "dynamo.matmul"(%arg0, %t) : (tensor<2x4x8xf64>, tensor<2x8x4xf64>) -> tensor<2x4x4xf64>
  return %0 : tensor<2x4x4xf64>
}

// -----
// An integer matmul stays in our loops (MKL has no integer GEMM here).
// MKL-LINALG: linalg.generic
// MKL-LINALG-NOT: linalg.matmul
// MKL-NOT: call
func.func @main(%arg0: tensor<4x8xi64>, %arg1: tensor<8x4xi64>) -> tensor<4x4xi64> {
  %0 = "dynamo.matmul"(%arg0, %arg1) : (tensor<4x8xi64>, tensor<8x4xi64>) -> tensor<4x4xi64>
  return %0 : tensor<4x4xi64>
}

// -----
// A linear's weight (permuted, then the matmul's right operand) and attention's K^T (a batch
// transpose): on cuda neither transpose is materialized. Each matmul reads its operand through
// transposed strides, which torch's matmul hands cuBLAS as a transposed operand: no copy kernel,
// no buffer.
// HOST: host main(%0: 128x64xfloat32, %1: 32x64xfloat32, %2: 4x16x8xfloat32, %3: 32x128xfloat32, %4: 4x16x16xfloat32)
// HOST-NEXT: torch linalg.matmul(%1[32x64|64,1+0], %0[64x128|1,64+0], %3[32x128|128,1+0]) overwrite=True
// HOST-NEXT: torch linalg.batch_matmul(%2[4x16x8|128,8,1+0], %2[4x8x16|128,1,8+0], %4[4x16x16|256,16,1+0]) overwrite=True
// HOST-NOT: launch
// HOST-NOT: empty
func.func @main(%w: tensor<128x64xf32>, %x: tensor<32x64xf32>, %k: tensor<4x16x8xf32>) -> (tensor<32x128xf32>, tensor<4x16x16xf32>) {
  %wt = "dynamo.permute"(%w) {perm = array<i64: 1, 0>} : (tensor<128x64xf32>) -> tensor<64x128xf32>
  %y = "dynamo.matmul"(%x, %wt) : (tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<32x128xf32>
  %kt = "dynamo.permute"(%k) {perm = array<i64: 0, 2, 1>} : (tensor<4x16x8xf32>) -> tensor<4x8x16xf32>
  %s = "dynamo.matmul"(%k, %kt) : (tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<4x16x16xf32>
  return %y, %s : tensor<32x128xf32>, tensor<4x16x16xf32>
}

// -----
// A bf16 matmul accumulates in float32 and rounds once (the dialect's semantics). On cuda the
// host schedule hands it to cuBLAS as it is: bf16 in, bf16 out (tensor cores, float32
// accumulation inside), no float32 buffer, no rounding kernel after it.
// HOST: host main(%0: 32x64xbfloat16, %1: 64x16xbfloat16, %2: 32x16xbfloat16)
// HOST-NEXT: torch linalg.matmul(%0[32x64|64,1+0], %1[64x16|16,1+0], %2[32x16|16,1+0]) overwrite=True
// HOST-NOT: launch
// Without the library: a float32 accumulator, rounded by an elementwise truncf after the sums.
// OWN-LINALG: %[[ACC:[0-9]+]] = linalg.fill ins(%{{cst[_0-9]*}} : f32) outs(%{{[0-9]+}} : tensor<32x16xf32>)
// OWN-LINALG: %[[SUM:[0-9]+]] = linalg.matmul ins(%arg0, %arg1 : tensor<32x64xbf16>, tensor<64x16xbf16>) outs(%[[ACC]] : tensor<32x16xf32>)
// OWN-LINALG: linalg.generic {{.*}} ins(%[[SUM]] : tensor<32x16xf32>) outs(%{{[0-9]+}} : tensor<32x16xbf16>)
// OWN-LINALG: arith.truncf %{{.*}} : f32 to bf16
// cpu: float32 copies of the operands into MKL's sgemm_ (codegen/contraction_precision.py).
// MKL-LINALG: linalg.matmul ins(%{{[0-9]+}}, %{{[0-9]+}} : tensor<32x64xf32>, tensor<64x16xf32>)
// MKL: call @sgemm_(
func.func @main(%arg0: tensor<32x64xbf16>, %arg1: tensor<64x16xbf16>) -> tensor<32x16xbf16> {
  %0 = "dynamo.matmul"(%arg0, %arg1) : (tensor<32x64xbf16>, tensor<64x16xbf16>) -> tensor<32x16xbf16>
  return %0 : tensor<32x16xbf16>
}
