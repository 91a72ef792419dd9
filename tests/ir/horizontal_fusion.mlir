// RUN: dynamo-mlir pass cuda-fuse-horizontally %s --target cuda | check

// Three step counts incremented on their own (an optimizer's foreach add): one generic with
// three results, built where the last one was; the input two of them read is one operand.
// CHECK-LABEL: func.func @step_counts
// CHECK: %[[M:[0-9]+]]:3 = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<f32>, tensor<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK-COUNT-3: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2

// A chain (the second reads the first) stays two ops; so do two loops too large to be
// launch-bound (128 x 256 points).
// CHECK-LABEL: func.func @dependent_and_large
// CHECK-COUNT-4: linalg.generic
#none = affine_map<() -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @step_counts(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
    %one = arith.constant 1.000000e+00 : f32
    %e = tensor.empty() : tensor<f32>
    %x = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%a : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %one : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %y = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%b : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %one : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %z = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%a : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %i : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    return %x, %y, %z : tensor<f32>, tensor<f32>, tensor<f32>
  }

  func.func @dependent_and_large(%a: tensor<f32>, %p: tensor<128x256xf32>, %q: tensor<128x256xf32>)
      -> (tensor<f32>, tensor<128x256xf32>, tensor<128x256xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    %e = tensor.empty() : tensor<f32>
    %x = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%a : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %one : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %y = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%x : tensor<f32>) outs(%e : tensor<f32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.mulf %i, %i : f32
      linalg.yield %r : f32
    } -> tensor<f32>
    %big = tensor.empty() : tensor<128x256xf32>
    %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<128x256xf32>) outs(%big : tensor<128x256xf32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %one : f32
      linalg.yield %r : f32
    } -> tensor<128x256xf32>
    %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%q : tensor<128x256xf32>) outs(%big : tensor<128x256xf32>) {
    ^bb0(%i: f32, %o: f32):
      %r = arith.addf %i, %one : f32
      linalg.yield %r : f32
    } -> tensor<128x256xf32>
    return %y, %u, %v : tensor<f32>, tensor<128x256xf32>, tensor<128x256xf32>
  }
}
