// RUN: dynamo-mlir pass cpu-channels-last %s | check
// RUN: dynamo-mlir pass cpu-channels-last %s -O channels_last_training=inf | check --prefix NEVER
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix LIB

// A training forward (codegen/channels_last.py, frontend/saved_layouts.py): conv -> relu -> conv,
// returning the model's output (result 0) and two activations saved for the backward (results
// 1 and 2, FREE_RESULTS), and a channels-last copy of the second weight (the importer's
// clone(permute(w)) of a saved weight). Its activations (1280 elements) are 3.2 times its weights'
// (360): the default channels_last_training (0.7) runs it channels-last. The saved activations are
// returned NHWC as they are computed, no transpose, and the module says so (the runtime hands
// them on as NCHW tensors with channels-last strides); only the model's output goes back to NCHW.
// CHECK: module attributes {dynamo_mlir.nhwc_results = array<i64: 1, 2>}
// CHECK: func.func @main({{.*}}) -> (tensor<2x6x8x8xf32>, tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>, tensor<6x3x3x4xf32>)
// CHECK: %[[W2:.*]] = "dynamo.permute"(%arg2) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[X:.*]] = "dynamo.permute"(%arg0) {perm = array<i64: 0, 2, 3, 1>}
// CHECK: %[[Y1:.*]] = "dynamo.conv2d"(%[[X]], %arg1) {{.*}}layout = "nhwc"
// CHECK-NOT: weight_layout
// CHECK-SAME: -> tensor<2x8x8x4xf32>
// CHECK: %[[R:.*]] = "dynamo.relu"(%[[Y1]]) : (tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
// The second convolution reads the weight's FHWC copy, so torch does not make one per call.
// CHECK: %[[Y2:.*]] = "dynamo.conv2d"(%[[R]], %[[W2]]) {{.*}}layout = "nhwc"{{.*}}weight_layout = "fhwc"
// CHECK: %[[OUT:.*]] = "dynamo.permute"(%[[Y2]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: return %[[OUT]], %[[Y1]], %[[R]], %[[W2]]
// With channels_last_training=inf (or where the activations are not enough): NCHW throughout, as
// a training forward ran before; nothing returned channels-last.
// NEVER-NOT: nhwc_results
// NEVER-NOT: layout = "nhwc"
// NEVER: return
// The library call shows torch the FHWC copy (6x3x3x4) as the FCHW weight it is (sizes 6 4 3 3,
// read off the buffer's dims 0 3 1 2, with its strides).
// LIB: call @aoti_torch_cpu_convolution(
// LIB: memref.store %c6_i64
// LIB-NEXT: memref.store %c4_i64
// LIB-NEXT: memref.store %c3_i64
// LIB-NEXT: memref.store %c3_i64
// LIB: call @aoti_torch_cpu_convolution(
module {
  func.func @main(%x: tensor<2x4x8x8xf32>, %w1: tensor<4x4x3x3xf32>, %w2: tensor<6x4x3x3xf32>)
      -> (tensor<2x6x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<6x3x3x4xf32>)
      attributes {dynamo_mlir.free_layout_results = array<i64: 1, 2, 3>} {
    %w2c = "dynamo.permute"(%w2) {perm = array<i64: 0, 2, 3, 1>} : (tensor<6x4x3x3xf32>) -> tensor<6x3x3x4xf32>
    %y1 = "dynamo.conv2d"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x8x8xf32>
    %r = "dynamo.relu"(%y1) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %y2 = "dynamo.conv2d"(%r, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x8xf32>
    return %y2, %y1, %r, %w2c : tensor<2x6x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<6x3x3x4xf32>
  }
}
