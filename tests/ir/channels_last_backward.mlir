// RUN: dynamo-mlir pass cpu-channels-last %s | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix LIB

// A training backward (codegen/channels_last.py) whose saved activation %x and weight %w came
// channels-last from the forward: each arrives as its NHWC bytes and a permute back to NCHW
// (frontend/input_views.unpermute_inputs). The relu gradient (compare, select) runs NHWC on
// them, the output gradient %g is copied to NHWC once, and both convolution gradients read
// NHWC operands; the input gradient's result is NHWC and the weight, FHWC, needs no copy. Only
// the function's results go back: the input gradient to NCHW, the weight gradient is FCHW.
// CHECK: "dynamo.compare"(%arg1, %{{.*}}) {predicate = "le"} : (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xi1>
// CHECK: %[[G:.*]] = "dynamo.permute"(%arg0) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[D:.*]] = "dynamo.select"({{.*}}, %[[G]]) : ({{.*}}) -> tensor<2x8x8x4xf32>
// CHECK: %[[DX:.*]] = "dynamo.conv_grad_input"(%[[D]], %arg2) {{.*}}layout = "nhwc"{{.*}}weight_layout = "fhwc"{{.*}} -> tensor<2x8x8x4xf32>
// CHECK: %[[BACK:.*]] = "dynamo.permute"(%[[DX]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[DW:.*]] = "dynamo.conv_grad_weight"(%[[D]], %arg1) {{.*}}layout = "nhwc"{{.*}} -> tensor<4x4x3x3xf32>
// CHECK: return %[[BACK]], %[[DW]]
// torch's convolution_backward sees every operand as an NCHW tensor with channels-last strides
// (8x8x4 NHWC: 256 1 32 4); the weight's gradient, which only lends its shape, too (its bytes
// read as FHWC: 36 1 12 4), so torch makes no channels-last copy of it first.
// LIB: call @aoti_torch_cpu_convolution_backward(
// LIB: memref.reinterpret_cast {{.*}} sizes: [4, 3, 3, 4], strides: [36, 12, 4, 1] : memref<4x4x3x3xf32> to memref<4x3x3x4xf32>
// LIB: memref.store %c36_i64
// LIB-NEXT: memref.store %c1_i64
// LIB-NEXT: memref.store %c12_i64
// LIB-NEXT: memref.store %c4_i64
// LIB: call @aoti_torch_cpu_convolution_backward(
module {
  func.func @main(%g: tensor<2x4x8x8xf32>, %x_nhwc: tensor<2x8x8x4xf32>, %w_fhwc: tensor<4x3x3x4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) {
    %x = "dynamo.permute"(%x_nhwc) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x8x8x4xf32>) -> tensor<2x4x8x8xf32>
    %w = "dynamo.permute"(%w_fhwc) {perm = array<i64: 0, 3, 1, 2>} : (tensor<4x3x3x4xf32>) -> tensor<4x4x3x3xf32>
    %zero = "dynamo.constant"() {value = dense<0.000000e+00> : tensor<2x4x8x8xf32>} : () -> tensor<2x4x8x8xf32>
    %dead = "dynamo.compare"(%x, %zero) {predicate = "le"} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xi1>
    %d = "dynamo.select"(%dead, %zero, %g) : (tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %dx = "dynamo.conv_grad_input"(%d, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %dw = "dynamo.conv_grad_weight"(%d, %x) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x4x3x3xf32>
    return %dx, %dw : tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>
  }
}
