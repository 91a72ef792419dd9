// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// sort along dim 1 (8 elements): a stable bottom-up merge sort. Values and indices (0..7 from
// linalg.index) live in buffers twice as wide, read from one half and merged into the other;
// log2(8) = 3 passes, each doubling the run width; a right element is taken only if strictly
// less (stability), and NaN sorts last (uno/ord); after 3 passes the result is the upper half.
// CHECK: %[[PASSES:c3]] = arith.constant 3 : index
// CHECK: %[[VALS:[0-9]+]] = tensor.empty() : tensor<4x16xf32>
// CHECK-NEXT: %[[V0:inserted_slice]] = tensor.insert_slice %arg0 into %[[VALS]][0, 0] [4, 8] [1, 1]
// CHECK: %[[IDX0:[0-9]+]] = linalg.generic
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<4x16xi64>)
// CHECK-NEXT: ^bb0(%out: i64):
// CHECK-NEXT: linalg.index 1 : index
// CHECK: scf.for %{{arg[0-9]+}} = %c0 to %c4 step %c1 iter_args(%{{arg[0-9]+}} = %[[V0]], %{{arg[0-9]+}} = %[[IDX0]])
// CHECK: scf.for %[[PASS:arg[0-9]+]] = %c0 to %[[PASSES]] step %c1
// CHECK-NEXT: %[[WIDTH:[0-9]+]] = arith.shli %c1, %[[PASS]] : index
// CHECK: %[[LEFT:extracted[_0-9]*]] = tensor.extract
// CHECK-NEXT: %[[RIGHT:extracted[_0-9]*]] = tensor.extract
// CHECK: arith.cmpf olt, %[[RIGHT]], %[[LEFT]] : f32
// CHECK-NEXT: arith.cmpf uno, %[[LEFT]], %[[LEFT]] : f32
// CHECK-NEXT: arith.cmpf ord, %[[RIGHT]], %[[RIGHT]] : f32
// CHECK: tensor.extract_slice %[[SORTED:[0-9]+]]#0[0, 8] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
// CHECK-NEXT: tensor.extract_slice %[[SORTED]]#1[0, 8] [4, 8] [1, 1] : tensor<4x16xi64> to tensor<4x8xi64>
func.func @main(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>) {
  %0:2 = "dynamo.sort"(%arg0) {descending = 0 : i64, dim = 1 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi64>)
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xi64>
}
