// RUN: dynamo-mlir pass cuda-fold-transposes-of-attention %s --target cuda | check --prefix FOLD
// RUN: dynamo-mlir pass cuda-forward-copies %s --target cuda | check

// An attention backward's dq, dk, dv (heads first, as the call returns them) transposed back,
// their heads merged and concatenated into the gradient of a fused qkv projection (a
// concatenation of a concatenation, as torch.cat of three bufferizes). Folding the transposes
// makes the call write each gradient through a transposed view of the transpose's buffer;
// forwarding then makes each buffer that is only copied into the concatenation a view of it:
// the call writes the three gradients where the projection's backward reads them, and no copy
// is left (run alone here, it makes the transposes write there).
// FOLD-LABEL: func.func @qkv_gradient
// FOLD-NOT: linalg.transpose
// FOLD: call @dynamo_cuda_attention_grad_{{[0-9]+}}(%arg0, %arg1, %arg2, %arg3, %{{transpose[_0-9]*}}, %{{transpose[_0-9]*}}, %{{transpose[_0-9]*}})
// FOLD-COUNT-3: memref.copy
// CHECK-LABEL: func.func @qkv_gradient
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x24xf32>
// CHECK-NEXT: %[[QK:.*]] = memref.subview %[[OUT]][0, 0, 0] [1, 4, 16] [1, 1, 1]
// CHECK-NEXT: memref.subview %[[QK]][0, 0, 0] [1, 4, 8] [1, 1, 1]
// CHECK-NEXT: memref.expand_shape
// CHECK-NEXT: linalg.transpose {{.*}} outs(%{{.*}} : memref<1x4x2x4xf32, strided<[96, 24, 4, 1]>>)
// CHECK-NEXT: memref.subview %[[QK]][0, 0, 8] [1, 4, 8] [1, 1, 1]
// CHECK-NEXT: memref.expand_shape
// CHECK-NEXT: linalg.transpose {{.*}} outs(%{{.*}} : memref<1x4x2x4xf32, strided<[96, 24, 4, 1], offset: 8>>)
// CHECK-NEXT: memref.subview %[[OUT]][0, 0, 16] [1, 4, 8] [1, 1, 1]
// CHECK-NEXT: memref.expand_shape
// CHECK-NEXT: linalg.transpose {{.*}} outs(%{{.*}} : memref<1x4x2x4xf32, strided<[96, 24, 4, 1], offset: 16>>)
// CHECK-NEXT: return %[[OUT]]
module {
  func.func private @dynamo_cuda_attention_grad_0(memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>)
  func.func @qkv_gradient(%arg0: memref<1x2x4x4xf32>, %arg1: memref<1x2x4x4xf32>, %arg2: memref<1x2x4x4xf32>, %arg3: memref<1x2x4x4xf32>) -> memref<1x4x24xf32> {
    %shape = memref.get_global @shape : memref<3xi64>
    %dq = memref.alloc() : memref<1x2x4x4xf32>
    %dk = memref.alloc() : memref<1x2x4x4xf32>
    %dv = memref.alloc() : memref<1x2x4x4xf32>
    call @dynamo_cuda_attention_grad_0(%arg0, %arg1, %arg2, %arg3, %dq, %dk, %dv) {dynamo_mlir.library_call = "torch.attention_grad", is_causal = 0 : i64, scale = 5.000000e-01 : f64} : (memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>, memref<1x2x4x4xf32>) -> ()
    %tq = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4xf32>
    linalg.transpose ins(%dq : memref<1x2x4x4xf32>) outs(%tq : memref<1x4x2x4xf32>) permutation = [0, 2, 1, 3]
    %rq = memref.reshape %tq(%shape) : (memref<1x4x2x4xf32>, memref<3xi64>) -> memref<1x4x8xf32>
    %tk = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4xf32>
    linalg.transpose ins(%dk : memref<1x2x4x4xf32>) outs(%tk : memref<1x4x2x4xf32>) permutation = [0, 2, 1, 3]
    %rk = memref.reshape %tk(%shape) : (memref<1x4x2x4xf32>, memref<3xi64>) -> memref<1x4x8xf32>
    %tv = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4xf32>
    linalg.transpose ins(%dv : memref<1x2x4x4xf32>) outs(%tv : memref<1x4x2x4xf32>) permutation = [0, 2, 1, 3]
    %rv = memref.reshape %tv(%shape) : (memref<1x4x2x4xf32>, memref<3xi64>) -> memref<1x4x8xf32>
    %qk = memref.alloc() {alignment = 64 : i64} : memref<1x4x16xf32>
    %s0 = memref.subview %qk[0, 0, 0] [1, 4, 8] [1, 1, 1] : memref<1x4x16xf32> to memref<1x4x8xf32, strided<[64, 16, 1]>>
    memref.copy %rq, %s0 : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[64, 16, 1]>>
    %s1 = memref.subview %qk[0, 0, 8] [1, 4, 8] [1, 1, 1] : memref<1x4x16xf32> to memref<1x4x8xf32, strided<[64, 16, 1], offset: 8>>
    memref.copy %rk, %s1 : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[64, 16, 1], offset: 8>>
    %out = memref.alloc() {alignment = 64 : i64} : memref<1x4x24xf32>
    %s2 = memref.subview %out[0, 0, 0] [1, 4, 16] [1, 1, 1] : memref<1x4x24xf32> to memref<1x4x16xf32, strided<[96, 24, 1]>>
    memref.copy %qk, %s2 : memref<1x4x16xf32> to memref<1x4x16xf32, strided<[96, 24, 1]>>
    %s3 = memref.subview %out[0, 0, 16] [1, 4, 8] [1, 1, 1] : memref<1x4x24xf32> to memref<1x4x8xf32, strided<[96, 24, 1], offset: 16>>
    memref.copy %rv, %s3 : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[96, 24, 1], offset: 16>>
    return %out : memref<1x4x24xf32>
  }
  memref.global "private" constant @shape : memref<3xi64> = dense<[1, 4, 8]>
}

// -----

// Left alone: a buffer the copy's destination is read from between its write and the copy
// (forwarding would change what the kernel in between reads), and a buffer read before it is
// copied.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: memref.copy
#id = affine_map<(d0) -> (d0)>
module {
  func.func @kept(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>) {
    %b = memref.alloc() : memref<8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%arg0 : memref<8xf32>) outs(%b : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.negf %x : f32
      linalg.yield %y : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%arg1 : memref<8xf32>) outs(%arg2 : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.negf %x : f32
      linalg.yield %y : f32
    }
    memref.copy %b, %arg1 : memref<8xf32> to memref<8xf32>
    %c = memref.alloc() : memref<8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%arg0 : memref<8xf32>) outs(%c : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.negf %x : f32
      linalg.yield %y : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%c : memref<8xf32>) outs(%arg0 : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.negf %x : f32
      linalg.yield %y : f32
    }
    memref.copy %c, %arg2 : memref<8xf32> to memref<8xf32>
    return
  }
}
