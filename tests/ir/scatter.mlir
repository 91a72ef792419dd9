// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg | check --prefix CUDA
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST

// scatter_add: a copy of self updated in place by a loop nest over the index tensor; a negative
// index counts from the end (remsi, then + size where negative); the old value plus the source.
// CHECK: %[[SIZE:c8_i64]] = arith.constant 8 : i64
// CHECK: %[[COPY:[0-9]+]] = bufferization.alloc_tensor() copy(%arg0) : tensor<4x8xf32>
// CHECK: scf.for %[[I:arg[0-9]+]] = %c0 to %c4 step %c1 iter_args(%{{arg[0-9]+}} = %[[COPY]])
// CHECK-NEXT: scf.for %[[J:arg[0-9]+]] = %c0 to %c3 step %c1 iter_args(%[[DEST:arg[0-9]+]] =
// CHECK-NEXT: %[[IDX:extracted[_0-9]*]] = tensor.extract %arg1[%[[I]], %[[J]]] : tensor<4x3xi64>
// CHECK-NEXT: %[[REM:[0-9]+]] = arith.remsi %[[IDX]], %[[SIZE]] : i64
// CHECK: %[[POS:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i64 to index
// CHECK-NEXT: %[[OLD:extracted[_0-9]*]] = tensor.extract %[[DEST]][%[[I]], %[[POS]]]
// CHECK-NEXT: %[[NEW:extracted[_0-9]*]] = tensor.extract %arg2[%[[I]], %[[J]]]
// CHECK-NEXT: %[[SUM:[0-9]+]] = arith.addf %[[OLD]], %[[NEW]] : f32
// CHECK-NEXT: tensor.insert %[[SUM]] into %[[DEST]][%[[I]], %[[POS]]] : tensor<4x8xf32>
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x3xi64>, %arg2: tensor<4x3xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.scatter"(%arg0, %arg1, %arg2) {dim = 1 : i64, include_self = 1 : i64, reduce = "sum"} : (tensor<4x8xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----
// index_put without accumulate assigns: the source row goes to the (wrapped) indexed row.
// CHECK: scf.for %[[I:arg[0-9]+]] = %c0 to %c2
// CHECK-NEXT: scf.for %[[J:arg[0-9]+]] = %c0 to %c8 step %c1 iter_args(%[[DEST:arg[0-9]+]] =
// CHECK: %[[ROW:[0-9]+]] = arith.index_cast %{{[0-9]+}} : i64 to index
// CHECK-NEXT: %[[V:extracted[_0-9]*]] = tensor.extract %arg2[%[[I]], %[[J]]] : tensor<2x8xf32>
// CHECK-NEXT: tensor.insert %[[V]] into %[[DEST]][%[[ROW]], %[[J]]]
// CHECK-NOT: arith.addf
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<2xi64>, %arg2: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.index_put"(%arg0, %arg2, %arg1) {accumulate = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----
// masked_scatter: a running count of true positions picks the source element (clamped to the
// source's last index), carried through the loops as an index.
// CHECK: %[[LAST:c31]] = arith.constant 31 : index
// CHECK: scf.for %{{arg[0-9]+}} = %c0 to %c4 step %c1 iter_args(%{{arg[0-9]+}} = %{{[0-9]+}}, %{{arg[0-9]+}} = %c0) -> (tensor<4x8xf32>, index)
// CHECK-NEXT: scf.for {{.*}} iter_args(%[[DEST:arg[0-9]+]] = %{{arg[0-9]+}}, %[[COUNT:arg[0-9]+]] = %{{arg[0-9]+}})
// CHECK-NEXT: %[[M:extracted[_0-9]*]] = tensor.extract %arg1
// CHECK-NEXT: %[[K:[0-9]+]] = arith.minui %[[COUNT]], %[[LAST]] : index
// CHECK-NEXT: %[[S:extracted[_0-9]*]] = tensor.extract %arg2[%[[K]]] : tensor<32xf32>
// CHECK: arith.select %[[M]], %[[S]], %{{extracted[_0-9]*}} : f32
// CHECK: %[[STEP:[0-9]+]] = arith.select %[[M]], %c1, %c0 : index
// CHECK-NEXT: arith.addi %[[COUNT]], %[[STEP]] : index
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xi1>, %arg2: tensor<32xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.masked_scatter"(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<4x8xi1>, tensor<32xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----
// cuda: scatter and index_put are torch calls in the host schedule (codegen/cuda/library_calls.py).
// At the linalg stage each is a copy of dest into a fresh buffer, then a call to a private
// declaration (one per operand types) on the operands' buffers, the attribute naming the op;
// the buffer is handed back as the result's tensor. Every read is numbered apart (buffer_reads.py).
// CUDA: func.func private @dynamo_cuda_index_put_0(memref<4x3xf32>, memref<4x3xi64>, memref<4x3xi64>, memref<4x8xf32>)
// CUDA: func.func private @dynamo_cuda_scatter_0(memref<4x3xi64>, memref<4x3xf32>, memref<4x8xf32>)
// CUDA: %[[OUT:alloc[_0-9]*]] = memref.alloc() : memref<4x8xf32>
// CUDA-NEXT: %[[DEST:[0-9]+]] = bufferization.to_buffer %arg0 read_only {dynamo_mlir.read = 0 : i64} : tensor<4x8xf32> to memref<4x8xf32>
// CUDA-NEXT: memref.copy %[[DEST]], %[[OUT]]
// CUDA: call @dynamo_cuda_scatter_0(%{{[0-9]+}}, %{{[0-9]+}}, %[[OUT]]) {dim = 1 : i64, dynamo_mlir.library_call = "torch.scatter", include_self = 1 : i64, reduce = "sum"}
// CUDA: call @dynamo_cuda_index_put_0({{.*}}) {accumulate = 1 : i64, dynamo_mlir.library_call = "torch.index_put"}
// CUDA: bufferization.to_tensor %{{alloc[_0-9]*}} restrict writable
// CUDA-NOT: scf.for
// host: a copy kernel before each call (the same kernel: cuda-merge-identical-kernels); the second
// call writes the region's output (%3) itself.
// HOST: host main(%0: 4x8xfloat32, %1: 4x3xint64, %2: 4x3xfloat32, %3: 4x8xfloat32)
// HOST-NEXT: %4 = empty(32, float32)
// HOST-NEXT: launch elementwise {{.*}} (%0, %4)
// HOST-NEXT: torch torch.scatter(%1[4x3|3,1+0], %2[4x3|3,1+0], %4[4x8|8,1+0]) overwrite=False {'dim': 1, 'reduce': 'sum', 'include_self': 1}
// HOST-NEXT: launch elementwise {{.*}} (%4, %3)
// HOST-NEXT: torch torch.index_put(%2[4x3|3,1+0], %1[4x3|3,1+0], %1[4x3|3,1+0], %3[4x8|8,1+0]) overwrite=False {'accumulate': 1}
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x3xi64>, %arg2: tensor<4x3xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.scatter"(%arg0, %arg1, %arg2) {dim = 1 : i64, include_self = 1 : i64, reduce = "sum"} : (tensor<4x8xf32>, tensor<4x3xi64>, tensor<4x3xf32>) -> tensor<4x8xf32>
  %1 = "dynamo.index_put"(%0, %arg2, %arg1, %arg1) {accumulate = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 2>} : (tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
