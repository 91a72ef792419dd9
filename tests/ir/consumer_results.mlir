// RUN: dynamo-mlir pass cuda-fuse-consumers-as-results %s --target cuda | check
// RUN: dynamo-mlir pass cpu-fuse-consumers-as-results %s | check

// A residual gradient (f32, read by two ops) and its bf16 copy: the copy becomes the producer's
// second result, computed from the value in registers; the other reader reads result 0.
// CHECK-LABEL: func.func @gradient_and_copy
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x16xbf16>
// CHECK-NEXT: %[[M:.*]]:2 = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%{{.*}}, %[[E]] : tensor<8x16xf32>, tensor<8x16xbf16>)
// CHECK: %[[S:.*]] = arith.addf
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[S]], %[[T]] : f32, bf16
// CHECK-NOT: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%[[M]]#0 : tensor<8x16xf32>)
// CHECK: return %[[M]]#1, %{{.*}}

// A sole reader is upstream fusion's case: left alone.
// CHECK-LABEL: func.func @sole_reader
// CHECK: linalg.generic
// CHECK: linalg.generic
// A consumer that reads the value at another element (a transpose) is not elementwise on it:
// left alone; the elementwise one beside it is merged.
// CHECK-LABEL: func.func @transposed_reader
// CHECK: %[[M:.*]]:2 = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], {{.*}} ins(%[[M]]#0 : tensor<16x16xf32>)
// CHECK: return %{{.*}}, %[[M]]#1, %[[M]]#0

// An AdamW-like update: the first moment (returned, written back) and a consumer with two
// results (the second moment and the parameter, both from the new first moment): one generic
// with three results, the consumer's inits kept, the gradient both read one operand.
// CHECK-LABEL: func.func @moments_and_update
// CHECK: %[[M:.*]]:3 = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK: math.sqrt
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: return %[[M]]#0, %[[M]]#1, %[[M]]#2
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module {
  func.func @gradient_and_copy(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> (tensor<8x16xbf16>, tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a, %b : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %h = tensor.empty() : tensor<8x16xbf16>
    %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<8x16xf32>) outs(%h : tensor<8x16xbf16>) {
    ^bb0(%x: f32, %o: bf16):
      %t = arith.truncf %x : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<8x16xbf16>
    %e2 = tensor.empty() : tensor<8x16xf32>
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.mulf %x, %x : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    return %c, %d : tensor<8x16xbf16>, tensor<8x16xf32>
  }

  func.func @sole_reader(%a: tensor<8x16xf32>) -> tensor<8x16xbf16> {
    %e = tensor.empty() : tensor<8x16xf32>
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.addf %x, %x : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %h = tensor.empty() : tensor<8x16xbf16>
    %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<8x16xf32>) outs(%h : tensor<8x16xbf16>) {
    ^bb0(%x: f32, %o: bf16):
      %t = arith.truncf %x : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<8x16xbf16>
    return %c : tensor<8x16xbf16>
  }

  func.func @transposed_reader(%a: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
    %e = tensor.empty() : tensor<16x16xf32>
    %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.addf %x, %x : f32
      linalg.yield %r : f32
    } -> tensor<16x16xf32>
    %e2 = tensor.empty() : tensor<16x16xf32>
    %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<16x16xf32>) outs(%e2 : tensor<16x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
    } -> tensor<16x16xf32>
    %e3 = tensor.empty() : tensor<16x16xf32>
    %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s : tensor<16x16xf32>) outs(%e3 : tensor<16x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %r = arith.mulf %x, %x : f32
      linalg.yield %r : f32
    } -> tensor<16x16xf32>
    return %t, %u, %s : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  }

  func.func @moments_and_update(%g: tensor<8x16xf32>, %m: tensor<8x16xf32>, %v: tensor<8x16xf32>, %p: tensor<8x16xf32>)
      -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %beta = arith.constant 0.1 : f32
    %m2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g, %m : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %d = arith.subf %x, %y : f32
      %s = arith.mulf %d, %beta : f32
      %r = arith.addf %y, %s : f32
      linalg.yield %r : f32
    } -> tensor<8x16xf32>
    %u:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%v, %g, %p, %m2 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) outs(%e, %e : tensor<8x16xf32>, tensor<8x16xf32>) {
    ^bb0(%vv: f32, %x: f32, %pp: f32, %mm: f32, %o: f32, %o2: f32):
      %sq = arith.mulf %x, %x : f32
      %v2 = arith.addf %vv, %sq : f32
      %root = math.sqrt %v2 : f32
      %step = arith.divf %mm, %root : f32
      %p2 = arith.subf %pp, %step : f32
      linalg.yield %v2, %p2 : f32, f32
    } -> (tensor<8x16xf32>, tensor<8x16xf32>)
    return %m2, %u#0, %u#1 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
}
