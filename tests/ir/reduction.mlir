// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// A sum is a [parallel, reduction] generic accumulating into a fill of its identity, 0.
// CHECK: #[[IN:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[OUT:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:[0-9]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{[0-9]+}} : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%arg0 : tensor<4x8xf32>) outs(%[[ACC]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: arith.addf %in, %out : f32
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// max over dim 0: the kept dim loops first (the input map transposes), the identity is -inf.
// CHECK: #[[IN:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK: %[[NEGINF:cst[_0-9]*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32) outs(%{{[0-9]+}} : tensor<8xf32>)
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf %in, %out : f32
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 0>, kind = "max"} : (tensor<4x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----
// An integer product starts from 1 and multiplies with muli.
// CHECK: %[[ONE:c1_i32]] = arith.constant 1 : i32
// CHECK: linalg.fill ins(%[[ONE]] : i32)
// CHECK: arith.muli %in, %out : i32
func.func @main(%arg0: tensor<4x8xi32>) -> tensor<4xi32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "prod"} : (tensor<4x8xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----
// A long f32 sum is cascaded (accuracy): blocks of 64 summed into a 16x2 partial, then the
// partials summed; no running sum adds more than 64 terms. (A sum over the innermost dim takes
// the cpu's own rule instead: cpu_row_reduction.mlir.)
// CHECK: #[[BLOCKED:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1 * 64 + d2, d0)>
// CHECK: %[[P0:[0-9]+]] = linalg.fill ins(%{{cst[_0-9]*}} : f32) outs(%{{[0-9]+}} : tensor<16x2xf32>)
// CHECK: %[[PARTIAL:[0-9]+]] = linalg.generic {indexing_maps = [#[[BLOCKED]],
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[P0]] : tensor<16x2xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<16x2xf32>)
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<2xf32>)
func.func @main(%arg0: tensor<1024x2xf32>) -> tensor<2xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 0>, kind = "sum"} : (tensor<1024x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----
// argmax carries (value, index) in one generic; a NaN wins (torch's order), the first index of
// a tie is kept (strict ogt), the index comes from linalg.index of the reduced dim.
// CHECK: %{{[0-9]+}}:2 = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: outs(%{{[0-9]+}}, %{{[0-9]+}} : tensor<4xf32>, tensor<4xi64>)
// CHECK-NEXT: ^bb0(%in: f32, %out: f32, %out_0: i64):
// CHECK-NEXT: %[[IDX:[0-9]+]] = linalg.index 1 : index
// CHECK: %[[GT:[0-9]+]] = arith.cmpf ogt, %in, %out : f32
// CHECK-NEXT: %[[NAN:[0-9]+]] = arith.cmpf uno, %in, %in : f32
// CHECK: %[[TAKE:[0-9]+]] = arith.andi
// CHECK-NEXT: arith.select %[[TAKE]], %in, %out : f32
// CHECK-NEXT: arith.select %[[TAKE]], %{{[0-9]+}}, %out_0 : i64
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4xi64> {
  %0 = "dynamo.arg_reduce"(%arg0) {dim = 1 : i64, kind = "max"} : (tensor<4x8xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
