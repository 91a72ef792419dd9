// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// gather (embedding): a generic over the indices; each element reads the table row its index
// names (tensor.extract at index_cast(index), linalg.index 1), the index first kept inside the
// table: a negative one counts from the end (+10), then clamped to [0, 9], so no read leaves it.
// CHECK-DAG: %[[LAST:c9_i64]] = arith.constant 9 : i64
// CHECK-DAG: %[[N:c10_i64]] = arith.constant 10 : i64
// CHECK-DAG: %[[ZERO:c0_i64]] = arith.constant 0 : i64
// CHECK: ins(%arg1 : tensor<3xi64>) outs(%{{[0-9]+}} : tensor<3x4xf32>)
// CHECK-NEXT: ^bb0(%[[I:in]]: i64, %out: f32):
// CHECK-NEXT: %[[NEG:[0-9]+]] = arith.cmpi slt, %[[I]], %[[ZERO]] : i64
// CHECK-NEXT: %[[UP:[0-9]+]] = arith.addi %[[I]], %[[N]] : i64
// CHECK-NEXT: %[[W:[0-9]+]] = arith.select %[[NEG]], %[[UP]], %[[I]] : i64
// CHECK-NEXT: %[[HI:[0-9]+]] = arith.minsi %[[W]], %[[LAST]] : i64
// CHECK-NEXT: %[[LO:[0-9]+]] = arith.maxsi %[[HI]], %[[ZERO]] : i64
// CHECK-NEXT: %[[ROW:[0-9]+]] = arith.index_cast %[[LO]] : i64 to index
// CHECK-NEXT: %[[COL:[0-9]+]] = linalg.index 1 : index
// CHECK-NEXT: %[[V:extracted[_0-9]*]] = tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<10x4xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @main(%arg0: tensor<10x4xf32>, %arg1: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = "dynamo.gather"(%arg0, %arg1) : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----
// gather along dim 1 (torch.gather): the index replaces the coordinate of that dim only, kept
// in [0, 8) first (see the gather above).
// CHECK: ^bb0(%[[I:in]]: i64, %out: f32):
// CHECK-NEXT: %[[ROW:[0-9]+]] = linalg.index 0 : index
// CHECK: arith.minsi %{{[0-9]+}}, %c7_i64 : i64
// CHECK-NEXT: %[[LO:[0-9]+]] = arith.maxsi
// CHECK-NEXT: %[[COL:[0-9]+]] = arith.index_cast %[[LO]] : i64 to index
// CHECK-NEXT: tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<4x8xf32>
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %0 = "dynamo.gather_along"(%arg0, %arg1) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
