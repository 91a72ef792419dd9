// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: not dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix BAD

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
// dynamo.size_tensor: a size as a 0-d tensor (a SymInt operand of an elementwise op, x / (2 * s0)):
// one index_cast for an integer type, through i64 for a float or bool one.
// CHECK: %[[A:[0-9]+]] = arith.index_cast %arg0 : index to i32
// CHECK-NEXT: tensor.from_elements %[[A]] : tensor<i32>
// CHECK: %[[I:[0-9]+]] = arith.index_cast %arg0 : index to i64
// CHECK-NEXT: %[[F:[0-9]+]] = arith.sitofp %[[I]] : i64 to f32
// CHECK-NEXT: tensor.from_elements %[[F]] : tensor<f32>
func.func @main(%arg0: index) -> (tensor<i32>, tensor<f32>) {
  %0 = "dynamo.size_tensor"(%arg0) : (index) -> tensor<i32>
  %1 = "dynamo.size_tensor"(%arg0) : (index) -> tensor<f32>
  return %0, %1 : tensor<i32>, tensor<f32>
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

// -----
// A slice by run-time bounds (x[o : o + n] along a `?` dim, as the importer computes them with
// Python's slicing rules): the offset and size operands become tensor.extract_slice's dynamic
// offset and size; the static dim keeps its static offset and size.
// CHECK: func.func @main(%arg0: tensor<?x4xf32>, %arg1: index, %arg2: index) -> tensor<?x3xf32>
// CHECK-NEXT: tensor.extract_slice %arg0[%arg1, 1] [%arg2, 3] [1, 1] : tensor<?x4xf32> to tensor<?x3xf32>
func.func @main(%arg0: tensor<?x4xf32>, %arg1: index, %arg2: index) -> tensor<?x3xf32> {
  %0 = "dynamo.slice"(%arg0, %arg1, %arg2) {operandSegmentSizes = array<i32: 1, 1, 1>, start = array<i64: -9223372036854775808, 1>, step = array<i64: 1, 1>} : (tensor<?x4xf32>, index, index) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----
// A causal mask's rows of a static buffer, bias[k - q : k]: a dynamic offset and a dynamic size
// into a static operand, with a step (one size operand for the one `?` result dim).
// CHECK: tensor.extract_slice %arg0[%arg1, 0] [%arg2, 16] [2, 1] : tensor<16x16xf32> to tensor<?x16xf32>
func.func @main(%arg0: tensor<16x16xf32>, %arg1: index, %arg2: index) -> tensor<?x16xf32> {
  %0 = "dynamo.slice"(%arg0, %arg1, %arg2) {operandSegmentSizes = array<i32: 1, 1, 1>, start = array<i64: -9223372036854775808, 0>, step = array<i64: 2, 1>} : (tensor<16x16xf32>, index, index) -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----
// x[1:] of a `?` dim, the form without sizes: the size is the operand's dim less the start.
// CHECK: %[[D:dim[_0-9]*]] = tensor.dim %arg0, %c0 : tensor<?x4xf32>
// CHECK-NEXT: %[[N:[0-9]+]] = arith.subi %[[D]], %c1 : index
// CHECK-NEXT: tensor.extract_slice %arg0[1, 0] [%[[N]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
func.func @main(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "dynamo.slice"(%arg0) {operandSegmentSizes = array<i32: 1, 0, 0>, start = array<i64: 1, 0>, step = array<i64: 1, 1>} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----
// The verifier counts the run-time bounds: one offset per `?` start, one size per `?` result dim.
// BAD: 'dynamo.slice' 0 offsets given for 1 `?` starts
func.func @main(%arg0: tensor<?x4xf32>, %arg1: index) -> tensor<?x4xf32> {
  %0 = "dynamo.slice"(%arg0, %arg1) {operandSegmentSizes = array<i32: 1, 0, 1>, start = array<i64: -9223372036854775808, 0>, step = array<i64: 1, 1>} : (tensor<?x4xf32>, index) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----
// BAD: 'dynamo.slice' 2 sizes given for 1 dynamic result dims
func.func @main(%arg0: tensor<?x4xf32>, %arg1: index) -> tensor<?x4xf32> {
  %0 = "dynamo.slice"(%arg0, %arg1, %arg1, %arg1) {operandSegmentSizes = array<i32: 1, 1, 2>, start = array<i64: -9223372036854775808, 0>, step = array<i64: 1, 1>} : (tensor<?x4xf32>, index, index, index) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
