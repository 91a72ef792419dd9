// RUN: dynamo-mlir pass cuda-channels-last %s --target cuda | check --prefix PASS
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg -O channels_last=0 | check --prefix OFF

// The cuda target's chained convolutions channels-last (codegen/channels_last.py, the cpu
// target's rewrite, with cuda's test of which convolutions: library_calls.channels_last_eligible,
// at least 64 channels out). A convolution to 16 channels (stays NCHW) -> relu -> one to 64
// -> relu -> one 64 -> 64: the two wide ones run as cuDNN NHWC calls with no transpose between
// them; the narrow one's result is copied to NHWC once, the last result back to NCHW.
// PASS: "dynamo.conv2d"(%arg0, %arg1) {dilation
// PASS-NOT: layout = "nhwc"
// PASS: "dynamo.permute"({{.*}}perm = array<i64: 0, 2, 3, 1>
// PASS: "dynamo.conv2d"({{.*}}layout = "nhwc"
// PASS: "dynamo.conv2d"({{.*}}layout = "nhwc"
// PASS: "dynamo.permute"({{.*}}perm = array<i64: 0, 3, 1, 2>
// CHECK: dynamo_mlir.library_call = "torch.convolution"
// CHECK-SAME: (memref<1x3x8x8xf32>, memref<16x3x3x3xf32>, memref<1x16x8x8xf32>) -> ()
// CHECK: linalg.transpose {{.*}} permutation = [0, 2, 3, 1]
// CHECK: dynamo_mlir.library_call = "torch.convolution_nhwc"
// CHECK-SAME: (memref<1x8x8x16xf32>, memref<64x16x3x3xf32>, memref<1x8x8x64xf32>) -> ()
// CHECK-NOT: linalg.transpose
// CHECK: dynamo_mlir.library_call = "torch.convolution_nhwc"
// CHECK: linalg.transpose ins(%{{[0-9]+}} : tensor<1x8x8x64xf32>) outs(%{{[0-9]+}} : tensor<1x64x8x8xf32>) permutation = [0, 3, 1, 2]
// With channels_last off: three NCHW calls, no transpose.
// OFF-NOT: linalg.transpose
// OFF-NOT: torch.convolution_nhwc
func.func @main(%x: tensor<1x3x8x8xf32>, %w0: tensor<16x3x3x3xf32>, %w1: tensor<64x16x3x3xf32>, %w2: tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32> {
  %0 = "dynamo.conv2d"(%x, %w0) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
  %1 = "dynamo.relu"(%0) : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %2 = "dynamo.conv2d"(%1, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<64x16x3x3xf32>) -> tensor<1x64x8x8xf32>
  %3 = "dynamo.relu"(%2) : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
  %4 = "dynamo.conv2d"(%3, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x8x8xf32>
  return %4 : tensor<1x64x8x8xf32>
}
