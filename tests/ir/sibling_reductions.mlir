// RUN: dynamo-mlir pass cpu-fuse-sibling-reductions %s | check
// RUN: dynamo-mlir pass cuda-fuse-sibling-column-sums %s | check --prefix CUDA

// A variance's centered sum and sum of squares (frontend/aten/reduction.py `_variance`): two
// row reductions of one iteration space over the same centered values. They become one generic
// with two results, and the centered values, read by one op now, are fused into it: the rows
// are read once, as x and the row mean, and nothing of x's size is written.
// CHECK-LABEL: func.func @variance
// CHECK-NOT: tensor<4x64xf32>) outs
// CHECK: %[[BOTH:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %arg1 : tensor<4x64xf32>, tensor<4x1xf32>) outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[C:.*]] = arith.subf
// CHECK-NEXT: %[[S:.*]] = arith.addf %{{.*}}, %[[C]]
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[C]], %[[C]]
// CHECK-NEXT: %[[Q:.*]] = arith.addf %{{.*}}, %[[SQ]]
// CHECK-NEXT: linalg.yield %[[S]], %[[Q]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[BOTH]]#0, %[[BOTH]]#1
// On cuda the two row sums stay apart (a row kernel takes one result; cuda-fuse-rows groups them).
// CUDA-LABEL: func.func @variance
// CUDA: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CUDA: %[[SQ:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CUDA: return %[[SUM]], %[[SQ]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#out = affine_map<(d0, d1) -> (d0)>
module {
  func.func @variance(%x: tensor<4x64xf32>, %m: tensor<4x1xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x64xf32>
    %c = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x, %m : tensor<4x64xf32>, tensor<4x1xf32>) outs(%e : tensor<4x64xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    } -> tensor<4x64xf32>
    %e1 = tensor.empty() : tensor<4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
    %sum = linalg.generic {indexing_maps = [#id, #out], iterator_types = ["parallel", "reduction"]}
        ins(%c : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %sq = linalg.generic {indexing_maps = [#id, #out], iterator_types = ["parallel", "reduction"]}
        ins(%c : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %p = arith.mulf %a, %a : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    return %sum, %sq : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// A softmax's max and its sum of exponentials: the sum reads the max, so the two stay apart;
// a reduction over other maps (the columns) is no sibling of one over the rows.
// CHECK-LABEL: func.func @dependent_or_other_maps
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[MAX]] : tensor<4x64xf32>, tensor<4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0 : tensor<4x64xf32>)
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  func.func @dependent_or_other_maps(%x: tensor<4x64xf32>) -> (tensor<4xf32>, tensor<64xf32>) {
    %zero = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
    %max = linalg.generic {indexing_maps = [#id, #out], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<4x64xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.maximumf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %sum = linalg.generic {indexing_maps = [#id, #out, #out], iterator_types = ["parallel", "reduction"]}
        ins(%x, %max : tensor<4x64xf32>, tensor<4xf32>) outs(%init : tensor<4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %d = arith.subf %a, %b : f32
      %ex = math.exp %d : f32
      %s = arith.addf %o, %ex : f32
      linalg.yield %s : f32
    } -> tensor<4xf32>
    %e2 = tensor.empty() : tensor<64xf32>
    %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<64xf32>) -> tensor<64xf32>
    %cols = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%x : tensor<4x64xf32>) outs(%init2 : tensor<64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<64xf32>
    return %sum, %cols : tensor<4xf32>, tensor<64xf32>
  }
}

// -----

// A layer norm's weight and bias gradients: column sums of the output gradient times the
// normalized input, and of the output gradient alone. On cuda (cuda-fuse-sibling-column-sums)
// their inputs may differ but for the gradient they share through the same map: one generic
// reads it once, the normalized input as its second input, a result each. The cpu pass takes
// siblings with alike inputs only (its loop of the two ran slower): all three stay apart there.
// A sum over the same loops reading nothing in common (the third) stays apart on both.
// CHECK-LABEL: func.func @weight_and_bias_gradients
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<16x32xf32>)
// CHECK: %[[OTHER:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<16x32xf32>)
// CHECK: return %[[W]], %[[B]], %[[OTHER]]
// CUDA-LABEL: func.func @weight_and_bias_gradients
// CUDA: %[[BOTH:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0, %arg1 : tensor<16x32xf32>, tensor<16x32xf32>) outs(%{{.*}}, %{{.*}} : tensor<32xf32>, tensor<32xf32>)
// CUDA: ^bb0(%[[G:.*]]: f32, %[[XHAT:.*]]: f32, %[[WO:.*]]: f32, %[[BO:.*]]: f32):
// CUDA-NEXT: %[[P:.*]] = arith.mulf %[[G]], %[[XHAT]]
// CUDA-NEXT: %[[SW:.*]] = arith.addf %[[WO]], %[[P]]
// CUDA-NEXT: %[[SB:.*]] = arith.addf %[[BO]], %[[G]]
// CUDA-NEXT: linalg.yield %[[SW]], %[[SB]]
// CUDA: %[[OTHER:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<16x32xf32>)
// CUDA: return %[[BOTH]]#0, %[[BOTH]]#1, %[[OTHER]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  func.func @weight_and_bias_gradients(%g: tensor<16x32xf32>, %xhat: tensor<16x32xf32>, %y: tensor<16x32xf32>)
      -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<32xf32>
    %init = linalg.fill ins(%zero : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
    %w = linalg.generic {indexing_maps = [#id, #id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%g, %xhat : tensor<16x32xf32>, tensor<16x32xf32>) outs(%init : tensor<32xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<32xf32>
    %b = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%g : tensor<16x32xf32>) outs(%init : tensor<32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<32xf32>
    %other = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%y : tensor<16x32xf32>) outs(%init : tensor<32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    } -> tensor<32xf32>
    return %w, %b, %other : tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
  }
}
