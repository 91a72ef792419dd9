// RUN: dynamo-mlir pass cuda-fuse-pads-into-producers %s --target cuda | check
// RUN: dynamo-mlir pass cuda-erase-self-copies %s --target cuda | check --prefix SELF
// RUN: dynamo-mlir pass cpu-erase-self-copies %s | check --prefix SELF

// A half matmul's operand padded to a multiple of 8 (frontend/padded_matmuls.py): the gradient
// of the logits, padded from 50-odd columns to 56, is written by its producer into the padded
// tensor's interior, and only the 6 columns past it are filled. The other reader of the
// producer's result (the sum) reads the value written in place.
// CHECK-LABEL: func.func @gradient
// CHECK-NOT: tensor.pad
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16x56xbf16>
// CHECK: %[[B:.*]] = tensor.extract_slice %[[E]][0, 50] [16, 6] [1, 1]
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[B]] : tensor<16x6xbf16>)
// CHECK: %[[F:.*]] = tensor.insert_slice %[[Z]] into %[[E]][0, 50] [16, 6] [1, 1]
// CHECK: %[[I:.*]] = tensor.extract_slice %[[F]][0, 0] [16, 50] [1, 1]
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<16x50xf32>) outs(%[[I]] : tensor<16x50xbf16>)
// CHECK: %[[P:.*]] = tensor.insert_slice %[[G]] into %[[F]][0, 0] [16, 50] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[G]] : tensor<16x50xbf16>)
// CHECK: return %[[P]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func @gradient(%x: tensor<16x50xf32>) -> (tensor<16x56xbf16>, tensor<16xf32>) {
    %zero = arith.constant 0.0 : bf16
    %fzero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16x50xbf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x50xf32>) outs(%e : tensor<16x50xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<16x50xbf16>
    %p = tensor.pad %g low[0, 0] high[0, 6] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : bf16
    } : tensor<16x50xbf16> to tensor<16x56xbf16>
    %se = tensor.empty() : tensor<16xf32>
    %s0 = linalg.fill ins(%fzero : f32) outs(%se : tensor<16xf32>) -> tensor<16xf32>
    %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%g : tensor<16x50xbf16>) outs(%s0 : tensor<16xf32>) {
    ^bb0(%a: bf16, %acc: f32):
      %w = arith.extf %a : bf16 to f32
      %r = arith.addf %acc, %w : f32
      linalg.yield %r : f32
    } -> tensor<16xf32>
    return %p, %s : tensor<16x56xbf16>, tensor<16xf32>
  }
}

// Padded in two dims: the slab below the source (all columns) and the one to its right
// (its rows only) are filled, each element once.
// CHECK-LABEL: func.func @both_dims
// CHECK: tensor.extract_slice %{{.*}}[16, 0] [8, 56] [1, 1]
// CHECK: tensor.extract_slice %{{.*}}[0, 50] [16, 6] [1, 1]
// CHECK-NOT: tensor.pad
module {
  func.func @both_dims(%x: tensor<16x50xf32>) -> tensor<24x56xbf16> {
    %zero = arith.constant 0.0 : bf16
    %e = tensor.empty() : tensor<16x50xbf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x50xf32>) outs(%e : tensor<16x50xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<16x50xbf16>
    %p = tensor.pad %g low[0, 0] high[8, 6] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : bf16
    } : tensor<16x50xbf16> to tensor<24x56xbf16>
    return %p : tensor<24x56xbf16>
  }
}

// Through a reshape to the producer's own shape (a view there and back, which this MLIR's
// canonicalizer keeps): the producer writes the padded tensor.
// CHECK-LABEL: func.func @through_reshape
// CHECK-NOT: tensor.pad
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<16x50xbf16>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 50] [1, 1]
module {
  func.func @through_reshape(%x: tensor<16x50xf32>, %shape: tensor<2xi64>) -> tensor<16x56xbf16> {
    %zero = arith.constant 0.0 : bf16
    %e = tensor.empty() : tensor<16x50xbf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x50xf32>) outs(%e : tensor<16x50xbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<16x50xbf16>
    %r = tensor.reshape %g(%shape) : (tensor<16x50xbf16>, tensor<2xi64>) -> tensor<16x50xbf16>
    %p = tensor.pad %r low[0, 0] high[0, 6] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : bf16
    } : tensor<16x50xbf16> to tensor<16x56xbf16>
    return %p : tensor<16x56xbf16>
  }
}

// Left as they are: a pad of an argument (nothing computes it) and of a generic reading its
// init (an accumulation: its init's values are not the pad's).
// CHECK-LABEL: func.func @left
// CHECK-COUNT-2: tensor.pad
module {
  func.func @left(%x: tensor<16x50xbf16>, %y: tensor<16x50xbf16>) -> (tensor<16x56xbf16>, tensor<16x56xbf16>) {
    %zero = arith.constant 0.0 : bf16
    %p = tensor.pad %x low[0, 0] high[0, 6] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : bf16
    } : tensor<16x50xbf16> to tensor<16x56xbf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x50xbf16>) outs(%y : tensor<16x50xbf16>) {
    ^bb0(%a: bf16, %o: bf16):
      %t = arith.addf %a, %o : bf16
      linalg.yield %t : bf16
    } -> tensor<16x50xbf16>
    %q = tensor.pad %g low[0, 0] high[0, 6] {
    ^bb0(%i: index, %j: index):
      tensor.yield %zero : bf16
    } : tensor<16x50xbf16> to tensor<16x56xbf16>
    return %p, %q : tensor<16x56xbf16>, tensor<16x56xbf16>
  }
}

// A copy of a view onto itself goes; a copy between two buffers stays.
// SELF-LABEL: func.func @self_copy
// SELF: memref.subview %arg0
// SELF-NEXT: memref.copy %arg0, %arg1
module {
  func.func @self_copy(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
    %s = memref.subview %a[0, 0] [4, 4] [1, 1] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 1]>>
    memref.copy %s, %s : memref<4x4xf32, strided<[8, 1]>> to memref<4x4xf32, strided<[8, 1]>>
    memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
    return
  }
}
