// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O parallel=false --stage loops | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O parallel=false -O plan_memory=false --stage loops | check --prefix MALLOC
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O parallel=false --stage llvm | check --prefix LLVM

// Static memory planning (codegen/cpu/memory_plan.py). Three intermediates between two MKL
// matmuls: e1 = exp(x) (4x8 f32, 128 bytes) lives from its loop to the first sgemm_; m1 (4x4,
// 64 bytes) from that sgemm_ to the second exp's loop; e2 = exp(m1) (64 bytes) from that loop to the
// second sgemm_. e1 and e2 are never used by one op, so e2 takes e1's bytes: a 192-byte workspace,
// the function's new last argument, instead of three mallocs.
// CHECK: module attributes {dynamo_mlir.workspace_bytes = 192 : i64}
// CHECK: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<4x4xf32>, %arg3: memref<4x4xf32>, %[[WS:arg4]]: memref<192xi8>)
// CHECK-NOT: memref.alloc(
// CHECK: %[[E1:view]] = memref.view %[[WS]][%c0][] {dynamo_mlir.planned} : memref<192xi8> to memref<4x8xf32>
// CHECK: memref.store %{{[0-9]+}}, %[[E1]]
// CHECK: %[[E2:view_[0-9]+]] = memref.view %[[WS]][%c0][] {dynamo_mlir.planned} : memref<192xi8> to memref<4x4xf32>
// CHECK: %[[M1:view_[0-9]+]] = memref.view %[[WS]][%c128][] {dynamo_mlir.planned} : memref<192xi8> to memref<4x4xf32>
// CHECK: memref.extract_strided_metadata %[[E1]]
// CHECK: memref.extract_strided_metadata %[[M1]]
// CHECK: call @sgemm_
// CHECK: memref.load %[[M1]]
// CHECK: memref.store %{{[0-9]+}}, %[[E2]]
// CHECK: memref.extract_strided_metadata %[[E2]]
// CHECK: call @sgemm_
// CHECK-NOT: memref.dealloc
// With the option off: one malloc and one free per intermediate.
// MALLOC: module {
// MALLOC: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<8x4xf32>, %arg2: memref<4x4xf32>, %arg3: memref<4x4xf32>)
// MALLOC: memref.alloc() {{.*}}: memref<4x8xf32>
// MALLOC: memref.alloc() {{.*}}: memref<4x4xf32>
// MALLOC: memref.alloc() {{.*}}: memref<4x4xf32>
// MALLOC: memref.dealloc
// MALLOC: memref.dealloc
// MALLOC: memref.dealloc
// The workspace is one more bare pointer.
// LLVM: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr)
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: llvm.call @free
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x4xf32>, %w2: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e1 = "dynamo.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = "dynamo.matmul"(%e1, %w1) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %e2 = "dynamo.exp"(%m1) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = "dynamo.matmul"(%e2, %w2) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m2 : tensor<4x4xf32>
}
