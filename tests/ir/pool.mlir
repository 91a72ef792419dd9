// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// max pooling 2x2 stride 2: linalg's NCHW max pooling over a -inf fill (the window shape is
// an empty 2x2 tensor).
// CHECK: %[[NEGINF:cst[_0-9]*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[ACC:[0-9]+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{[0-9]+}} : tensor<1x2x2x2xf32>)
// CHECK-NEXT: %[[WINDOW:[0-9]+]] = tensor.empty() : tensor<2x2xf32>
// CHECK-NEXT: linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME: ins(%arg0, %[[WINDOW]] : tensor<1x2x4x4xf32>, tensor<2x2xf32>) outs(%[[ACC]] : tensor<1x2x2x2xf32>)
func.func @main(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %0 = "dynamo.pool2d"(%arg0) {dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, kind = "max", padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----
// avg pooling: a sum pooling over a zero fill, then each sum divided by the window size, 4.
// CHECK-DAG: %[[FOUR:cst[_0-9]*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32)
// CHECK: %[[SUM:[0-9]+]] = linalg.pooling_nchw_sum
// CHECK-NEXT: linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<1x2x2x2xf32>)
// CHECK-NEXT: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: arith.divf %in, %[[FOUR]] : f32
func.func @main(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %0 = "dynamo.pool2d"(%arg0) {dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, kind = "avg", padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %0 : tensor<1x2x2x2xf32>
}

// -----
// channels-last (layout = "nhwc", codegen/cpu/channels_last.py sets it): padding on dims 1 and 2
// (H, W) with -inf, then one generic over (n, oh, ow, kh, kw, c), the channel loop innermost.
// CHECK-DAG: #[[X:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 2 + d3, d2 * 2 + d4, d5)>
// CHECK-DAG: #[[Y:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK: %[[NEGINF:cst[_0-9]*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: tensor.yield %[[NEGINF]] : f32
// CHECK: linalg.generic {indexing_maps = [#[[X]], #{{map[0-9]*}}, #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<1x3x3x2xf32>)
// CHECK: arith.maximumf
func.func @main(%arg0: tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32> {
  %0 = "dynamo.pool2d"(%arg0) {dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, kind = "max", layout = "nhwc", padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>) -> tensor<1x3x3x2xf32>
  return %0 : tensor<1x3x3x2xf32>
}
