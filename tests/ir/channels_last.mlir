// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg -O channels_last=0 | check --prefix OFF
// RUN: dynamo-mlir pass cpu-channels-last %s | check --prefix PASS
// RUN: dynamo-mlir pass cpu-library-convs %s | check --prefix LIB

// cpu, library_matmul and channels_last (the defaults): conv -> batch norm (inference: x - mean,
// * 1/std, * gamma, + beta, each per channel) -> relu -> max pool -> conv runs channels-last
// (codegen/cpu/channels_last.py). The image is transposed to NHWC once, the first convolution
// writes an NHWC buffer, batch norm and relu read it with their per-channel parameters
// broadcast along the last dim, the pool is NHWC (channel loop innermost), and the second convolution reads
// the pool's NHWC result: no transpose between the two convolutions, one after the second (the
// result is NCHW).
// The two passes alone, on the dynamo ops: cpu-channels-last rewrites the chain in NHWC (a
// permute in, the convolutions and the pool with layout = "nhwc", a permute out) ...
// PASS: "dynamo.permute"(%arg0) {perm = array<i64: 0, 2, 3, 1>}
// PASS: "dynamo.conv2d"({{.*}}layout = "nhwc"
// PASS: "dynamo.pool2d"({{.*}}layout = "nhwc"
// PASS: "dynamo.conv2d"({{.*}}layout = "nhwc"
// PASS: "dynamo.permute"({{.*}}perm = array<i64: 0, 3, 1, 2>
// ... and cpu-library-convs makes each convolution a call of torch's kernel on buffers read
// apart (numbered dynamo_mlir.read), no dynamo.conv2d left.
// LIB: bufferization.to_buffer %arg0 read_only {dynamo_mlir.read = 0 : i64}
// LIB: call @aoti_torch_cpu_convolution(
// LIB-NOT: "dynamo.conv2d"
// CHECK: linalg.transpose ins(%arg0 : tensor<2x3x8x8xf32>) outs(%{{[0-9]+}} : tensor<2x8x8x3xf32>) permutation = [0, 2, 3, 1]
// CHECK: call @aoti_torch_cpu_convolution(
// An NHWC buffer is shown to torch as an NCHW tensor (sizes 2 4 8 8) with channels-last strides
// (256 1 32 4). torch's result is read in place when it has those strides (codegen/cpu/
// adopted_results.py) ...
// CHECK: call @aoti_torch_get_strides(
// CHECK: arith.cmpi eq, %{{[0-9]+}}, %c256_i64
// CHECK: memref.alloc() : memref<2x8x8x4xf32>
// CHECK: call @aoti_torch_get_data_ptr(
// CHECK: builtin.unrealized_conversion_cast {{.*}} to memref<2x8x8x4xf32>
// ... else copied into our NHWC buffer, shown to torch that way: a view, no copy of ours.
// CHECK: memref.store %c256_i64
// CHECK-NEXT: memref.store %c1_i64
// CHECK-NEXT: memref.store %c32_i64
// CHECK-NEXT: memref.store %c4_i64
// CHECK: call @aoti_torch_copy_(
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<2x8x8x4xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<2x4x4x4xf32>)
// CHECK-NOT: linalg.transpose
// The second result reaches the function's result (through the transpose back): copied, as a
// result read in place would be gone before the caller's buffer is written.
// CHECK: memref.alloc() : memref<2x4x4x5xf32>
// CHECK-NOT: linalg.transpose
// CHECK: call @aoti_torch_cpu_convolution(
// CHECK-NOT: aoti_torch_get_data_ptr
// CHECK: call @aoti_torch_copy_(
// CHECK: linalg.transpose ins(%{{[0-9]+}} : tensor<2x4x4x5xf32>) outs(%{{[0-9]+}} : tensor<2x5x4x4xf32>) permutation = [0, 3, 1, 2]
// With channels_last off: NCHW buffers, NCHW pooling, no transpose anywhere.
// OFF: memref.alloc() : memref<2x4x8x8xf32>
// OFF: linalg.pooling_nchw_max
// OFF: memref.alloc() : memref<2x5x4x4xf32>
// OFF-NOT: linalg.transpose
func.func @main(%x: tensor<2x3x8x8xf32>, %w1: tensor<4x3x3x3xf32>, %mean: tensor<4xf32>, %rstd: tensor<4xf32>,
                %gamma: tensor<4xf32>, %beta: tensor<4xf32>, %w2: tensor<5x4x3x3xf32>) -> tensor<2x5x4x4xf32> {
  %0 = "dynamo.conv2d"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = "dynamo.reshape"(%mean) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %2 = "dynamo.broadcast"(%1) {dims = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %3 = "dynamo.sub"(%0, %2) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %4 = "dynamo.reshape"(%rstd) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %5 = "dynamo.broadcast"(%4) {dims = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %6 = "dynamo.mul"(%3, %5) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %7 = "dynamo.reshape"(%gamma) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %8 = "dynamo.broadcast"(%7) {dims = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %9 = "dynamo.mul"(%6, %8) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %10 = "dynamo.reshape"(%beta) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %11 = "dynamo.broadcast"(%10) {dims = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %12 = "dynamo.add"(%9, %11) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %13 = "dynamo.relu"(%12) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %14 = "dynamo.pool2d"(%13) {dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, kind = "max", padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %15 = "dynamo.conv2d"(%14, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<5x4x3x3xf32>) -> tensor<2x5x4x4xf32>
  return %15 : tensor<2x5x4x4xf32>
}
