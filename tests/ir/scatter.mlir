// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

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
