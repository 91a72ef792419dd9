// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// A `?` dim: the result's tensor.empty takes its size from the operand at run time
// (tensor.dim; common.py's dynamic empty), and the generic is otherwise the static one.
// CHECK: %[[D:dim[_0-9]*]] = tensor.dim %arg0, %c0 : tensor<?x8xf32>
// CHECK-NEXT: %[[INIT:[0-9]+]] = tensor.empty(%[[D]]) : tensor<?x8xf32>
// CHECK-NEXT: linalg.generic
// CHECK-SAME: outs(%[[INIT]] : tensor<?x8xf32>)
// CHECK: arith.addf
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----
// broadcast_like: the new `?` dim's size is read off `like`.
// CHECK: #[[SRC:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK: %[[D:dim[_0-9]*]] = tensor.dim %arg1, %c0 : tensor<?x8xf32>
// CHECK-NEXT: %[[INIT:[0-9]+]] = tensor.empty(%[[D]]) : tensor<?x8xf32>
// CHECK-NEXT: linalg.generic {indexing_maps = [#[[SRC]], #{{map[0-9]*}}]
// CHECK-SAME: ins(%arg0 : tensor<8xf32>) outs(%[[INIT]] : tensor<?x8xf32>)
func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = "dynamo.broadcast_like"(%arg0, %arg1) {dims = array<i64: 1>} : (tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----
// numel over a static and a dynamic dim: 4 * (dim 1), converted to the result's float type,
// as a 0-d tensor (a mean's divisor).
// CHECK: %[[D:dim[_0-9]*]] = tensor.dim %arg0, %c1 : tensor<4x?xf32>
// CHECK-NEXT: %[[N:[0-9]+]] = arith.muli %[[D]], %c4 : index
// CHECK-NEXT: %[[I:[0-9]+]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT: %[[F:[0-9]+]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT: tensor.from_elements %[[F]] : tensor<f32>
func.func @main(%arg0: tensor<4x?xf32>) -> tensor<f32> {
  %0 = "dynamo.numel"(%arg0) {dims = array<i64: 0, 1>} : (tensor<4x?xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----
// dynamo.dim is tensor.dim; size arithmetic stays upstream arith on index; a reshape to a `?`
// dim builds its shape operand from those values.
// CHECK: %[[D:dim[_0-9]*]] = tensor.dim %arg0, %c1 : tensor<2x?x64xf32>
// CHECK-NEXT: %[[N:[0-9]+]] = arith.muli %[[D]], %c2 : index
// CHECK-NEXT: %[[N64:[0-9]+]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT: %[[SHAPE:from_elements[_0-9]*]] = tensor.from_elements %[[N64]], %c64_i64 : tensor<2xi64>
// CHECK-NEXT: tensor.reshape %arg0(%[[SHAPE]]) : (tensor<2x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
func.func @main(%arg0: tensor<2x?x64xf32>) -> tensor<?x64xf32> {
  %0 = "dynamo.dim"(%arg0) {dim = 1 : i64} : (tensor<2x?x64xf32>) -> index
  %c2 = arith.constant 2 : index
  %1 = arith.muli %0, %c2 : index
  %2 = "dynamo.reshape"(%arg0, %1) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x?x64xf32>, index) -> tensor<?x64xf32>
  return %2 : tensor<?x64xf32>
}
