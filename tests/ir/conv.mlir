// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O library_matmul=false --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O library_matmul=false --stage linalg | check --prefix OWN

// conv2d with padding 1: the input zero-padded by tensor.pad (5x5 -> 7x7), then linalg's
// NCHW/FCHW convolution accumulating into a zero fill.
// CHECK: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[PADDED:padded[_0-9]*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor.yield %[[ZERO]] : f32
// CHECK-NEXT: } : tensor<1x2x5x5xf32> to tensor<1x2x7x7xf32>
// CHECK: %[[ACC:[0-9]+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{[0-9]+}} : tensor<1x3x5x5xf32>)
// CHECK-NEXT: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME: ins(%[[PADDED]], %arg1 : tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>) outs(%[[ACC]] : tensor<1x3x5x5xf32>)
func.func @main(%arg0: tensor<1x2x5x5xf32>, %arg1: tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32> {
  %0 = "dynamo.conv2d"(%arg0, %arg1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x5x5xf32>
  return %0 : tensor<1x3x5x5xf32>
}

// -----
// groups = 2: channels split into a group dim (NCHW -> N,G,C/G,H,W; FCHW -> G,F/G,C,H,W),
// linalg's grouped convolution, and the result's group dim folded back into channels.
// CHECK: %[[X:expanded[_0-9]*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 5, 5]
// CHECK-NEXT: %[[W:expanded[_0-9]*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3], [4]] output_shape [2, 2, 2, 3, 3]
// CHECK: %[[Y:[0-9]+]] = linalg.conv_2d_ngchw_gfchw
// CHECK-SAME: ins(%[[X]], %[[W]] : tensor<1x2x2x5x5xf32>, tensor<2x2x2x3x3xf32>)
// CHECK-NEXT: tensor.collapse_shape %[[Y]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x2x3x3xf32> into tensor<1x4x3x3xf32>
func.func @main(%arg0: tensor<1x4x5x5xf32>, %arg1: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = "dynamo.conv2d"(%arg0, %arg1) {dilation = array<i64: 1, 1>, groups = 2 : i64, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----
// channels-last (layout = "nhwc") in our own loops: a correct fallback, not a fast one (the cpu
// target sets the layout only for convolutions it hands to torch): the NHWC input transposed to
// NCHW, the NCHW convolution, its result transposed back to NHWC.
// CHECK: linalg.transpose ins(%arg0 : tensor<1x5x5x2xf32>) outs(%{{[0-9]+}} : tensor<1x2x5x5xf32>) permutation = [0, 3, 1, 2]
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<1x4x3x3xf32>)
// CHECK: linalg.transpose ins(%{{[0-9]+}} : tensor<1x4x3x3xf32>) outs(%{{[0-9]+}} : tensor<1x3x3x4xf32>) permutation = [0, 2, 3, 1]
func.func @main(%arg0: tensor<1x5x5x2xf32>, %arg1: tensor<4x2x3x3xf32>) -> tensor<1x3x3x4xf32> {
  %0 = "dynamo.conv2d"(%arg0, %arg1) {dilation = array<i64: 1, 1>, groups = 1 : i64, layout = "nhwc", padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x5x5x2xf32>, tensor<4x2x3x3xf32>) -> tensor<1x3x3x4xf32>
  return %0 : tensor<1x3x3x4xf32>
}

// -----
// A bf16 convolution sums in float32 and rounds once (the dialect's semantics). On cuda it is one
// cuDNN call (a `torch.convolution` library call): bf16 in and out, padded as cuDNN reads the
// input (no padded copy, no zero fill), written into the result buffer itself (no copy after),
// and no kernel launched around it.
// HOST: host main(%0: 2x4x8x8xbfloat16, %1: 8x4x3x3xbfloat16, %2: 2x8x8x8xbfloat16)
// HOST-NEXT: torch torch.convolution(%0[2x4x8x8|256,64,8,1+0], %1[8x4x3x3|36,9,3,1+0], %2[2x8x8x8|512,64,8,1+0]) {{.*}} {'stride': (1, 1), 'padding': (1, 1), 'dilation': (1, 1), 'groups': 1}
// HOST-NOT: launch
// HOST-NOT: empty
// Without the library: the padded input, a float32 accumulator, then one truncf.
// OWN: tensor.pad
// OWN: linalg.conv_2d_nchw_fchw {{.*}} ins(%padded, %arg1 : tensor<2x4x10x10xbf16>, tensor<8x4x3x3xbf16>) outs(%{{[0-9]+}} : tensor<2x8x8x8xf32>)
// OWN: arith.truncf %{{.*}} : f32 to bf16
// The cpu convolves float32 copies (codegen/contraction_precision.py).
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%padded, %{{[0-9]+}} : tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%{{[0-9]+}} : tensor<2x8x8x8xf32>)
func.func @main(%x: tensor<2x4x8x8xbf16>, %w: tensor<8x4x3x3xbf16>) -> tensor<2x8x8x8xbf16> {
  %c = "dynamo.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x8x8xbf16>, tensor<8x4x3x3xbf16>) -> tensor<2x8x8x8xbf16>
  return %c : tensor<2x8x8x8xbf16>
}

// -----
// The gradients of a stride-2 convolution. Generic rule: the input gradient convolves the output
// gradient, spread every 2 positions of a zero tensor and padded by the window's reach (one
// strided insert_slice: 5 -> 9 positions, 1 zero low, 2 high: the forward's last window stopped
// one short of the input's end), with the weight flipped in space and its channels swapped (one
// generic reading w[f, c, 2 - kh, 2 - kw]); the weight gradient convolves the input by the
// gradient with batch and channels swapped, stride 2 becoming dilation 2, cut to 3x3.
// CHECK: #[[FLIP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>
// CHECK: %[[SPREAD:inserted_slice[_0-9]*]] = tensor.insert_slice %arg0 into %{{[0-9]+}}[0, 0, 1, 1] [2, 8, 5, 5] [1, 1, 2, 2] : tensor<2x8x5x5xf32> into tensor<2x8x12x12xf32>
// CHECK: %[[WT:[0-9]+]] = linalg.generic {indexing_maps = [#[[FLIP]], #{{map[0-9]*}}]{{.*}} ins(%arg1 : tensor<8x4x3x3xf32>) outs(%{{[0-9]+}} : tensor<4x8x3x3xf32>)
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[SPREAD]], %[[WT]] : tensor<2x8x12x12xf32>, tensor<4x8x3x3xf32>) outs(%{{[0-9]+}} : tensor<2x4x10x10xf32>)
// CHECK: linalg.transpose ins(%arg2 : tensor<2x4x10x10xf32>) outs(%{{[0-9]+}} : tensor<4x2x10x10xf32>) permutation = [1, 0, 2, 3]
// CHECK: linalg.transpose ins(%arg0 : tensor<2x8x5x5xf32>) outs(%{{[0-9]+}} : tensor<8x2x5x5xf32>) permutation = [1, 0, 2, 3]
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded{{[_0-9]*}}, %transposed{{[_0-9]*}} : tensor<4x2x12x12xf32>, tensor<8x2x5x5xf32>) outs(%{{[0-9]+}} : tensor<4x8x4x4xf32>)
// CHECK: tensor.extract_slice %{{[0-9]+}}[0, 0, 0, 0] [4, 8, 3, 3] [1, 1, 1, 1] : tensor<4x8x4x4xf32> to tensor<4x8x3x3xf32>
// On cuda both are one torch call each (cuDNN's backward-data and backward-filter kernels),
// writing the results' buffers: no kernel, no buffer of our own.
// HOST: host main(%0: 2x8x5x5xfloat32, %1: 8x4x3x3xfloat32, %2: 2x4x10x10xfloat32, %3: 2x4x10x10xfloat32, %4: 8x4x3x3xfloat32)
// HOST-NEXT: torch torch.conv_grad_input(%0[2x8x5x5|200,25,5,1+0], %1[8x4x3x3|36,9,3,1+0], %3[2x4x10x10|400,100,10,1+0]) {{.*}} {'stride': (2, 2), 'padding': (1, 1), 'dilation': (1, 1), 'groups': 1}
// HOST-NEXT: torch torch.conv_grad_weight(%0[2x8x5x5|200,25,5,1+0], %2[2x4x10x10|400,100,10,1+0], %4[8x4x3x3|36,9,3,1+0]) {{.*}} {'stride': (2, 2), 'padding': (1, 1), 'dilation': (1, 1), 'groups': 1}
// HOST-NOT: launch
// HOST-NOT: empty
// OWN: tensor.insert_slice %arg0 into %{{[0-9]+}}[0, 0, 1, 1] [2, 8, 5, 5] [1, 1, 2, 2]
// OWN: linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>
func.func @main(%g: tensor<2x8x5x5xf32>, %w: tensor<8x4x3x3xf32>, %x: tensor<2x4x10x10xf32>) -> (tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) {
  %dx = "dynamo.conv_grad_input"(%g, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xf32>, tensor<8x4x3x3xf32>) -> tensor<2x4x10x10xf32>
  %dw = "dynamo.conv_grad_weight"(%g, %x) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xf32>, tensor<2x4x10x10xf32>) -> tensor<8x4x3x3xf32>
  return %dx, %dw : tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>
}
