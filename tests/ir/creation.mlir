// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// iota with constant start and step folds them into start + step * linalg.index.
// CHECK: func.func @main() -> tensor<8xi64>
// CHECK: outs(%{{[0-9]+}} : tensor<8xi64>)
// CHECK-NEXT: ^bb0(%out: i64):
// CHECK-NEXT: %[[I:[0-9]+]] = linalg.index 0 : index
// CHECK-NEXT: %[[I64:[0-9]+]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT: %[[M:[0-9]+]] = arith.muli %[[I64]], %c3_i64 : i64
// CHECK-NEXT: %[[V:[0-9]+]] = arith.addi %[[M]], %c2_i64 : i64
// CHECK-NEXT: linalg.yield %[[V]] : i64
func.func @main() -> tensor<8xi64> {
  %0 = "dynamo.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %1 = "dynamo.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
  %2 = "dynamo.iota"(%0, %1) {dim = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<i64>, tensor<i64>) -> tensor<8xi64>
  return %2 : tensor<8xi64>
}

// -----
// A tensor constant becomes an arith.constant of the same dense value, read by its consumer.
// CHECK: %[[C:cst[_0-9]*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: ins(%arg0, %[[C]] : tensor<4xf32>, tensor<4xf32>)
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dynamo.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %1 = "dynamo.add"(%arg0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
