// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// gather (embedding): a generic over the indices; each element reads the table row its index
// names (tensor.extract at index_cast(index), linalg.index 1).
// CHECK: ins(%arg1 : tensor<3xi64>) outs(%{{[0-9]+}} : tensor<3x4xf32>)
// CHECK-NEXT: ^bb0(%[[I:in]]: i64, %out: f32):
// CHECK-NEXT: %[[ROW:[0-9]+]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT: %[[COL:[0-9]+]] = linalg.index 1 : index
// CHECK-NEXT: %[[V:extracted[_0-9]*]] = tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<10x4xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @main(%arg0: tensor<10x4xf32>, %arg1: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = "dynamo.gather"(%arg0, %arg1) : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----
// gather along dim 1 (torch.gather): the index replaces the coordinate of that dim only.
// CHECK: ^bb0(%[[I:in]]: i64, %out: f32):
// CHECK-NEXT: %[[ROW:[0-9]+]] = linalg.index 0 : index
// CHECK-NEXT: %[[COL:[0-9]+]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT: tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<4x8xf32>
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %0 = "dynamo.gather_along"(%arg0, %arg1) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
