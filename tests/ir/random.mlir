// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// random_bits: a counter-based generator (no state): the seed (a 0-d operand broadcast into
// every element) offset by (stream + 1) * GAMMA for stream 3, mixed by SplitMix64's finalizer
// (shift 30/27/31, two multipliers); each element adds (its row-major index + 1) * GAMMA, is
// mixed again, and keeps 63 bits (>> 1) so that it is non-negative.
// CHECK-DAG: %[[GAMMA:c-7046029254386353131_i64]] = arith.constant -7046029254386353131 : i64
// CHECK-DAG: %[[STREAM:c8709371129873690708_i64]] = arith.constant 8709371129873690708 : i64
// CHECK: #{{map[0-9]*}}, #{{map[0-9]*}}], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<i64>)
// CHECK-NEXT: ^bb0(%[[SEED:in]]: i64, %out: i64):
// CHECK-NEXT: %[[S:[0-9]+]] = arith.addi %[[SEED]], %[[STREAM]] : i64
// CHECK-NEXT: arith.shrui %[[S]], %c30_i64 : i64
// CHECK: arith.shrui %{{[0-9]+}}, %c27_i64 : i64
// CHECK: arith.shrui %{{[0-9]+}}, %c31_i64 : i64
// CHECK-NEXT: %[[KEY:[0-9]+]] = arith.xori
// CHECK-NEXT: %[[I:[0-9]+]] = linalg.index 0 : index
// CHECK: arith.muli %{{[0-9]+}}, %c8_i64 : i64
// CHECK-NEXT: arith.addi %{{[0-9]+}}, %c1_i64 : i64
// CHECK-NEXT: %[[J:[0-9]+]] = linalg.index 1 : index
// CHECK: %[[CTR:[0-9]+]] = arith.muli %{{[0-9]+}}, %[[GAMMA]] : i64
// CHECK-NEXT: arith.addi %[[KEY]], %[[CTR]] : i64
// CHECK: %[[OUT:[0-9]+]] = arith.shrui %{{[0-9]+}}, %c1_i64 : i64
// CHECK-NEXT: linalg.yield %[[OUT]] : i64
func.func @main(%arg0: tensor<i64>) -> tensor<4x8xi64> {
  %0 = "dynamo.random_bits"(%arg0) {stream = 3 : i64} : (tensor<i64>) -> tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}
