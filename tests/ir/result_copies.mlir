// RUN: dynamo-mlir pass cpu-results-into-out-params %s | check

// Two results that are reshapes of one buffer (max_pool1d's indices, returned as the forward's
// result and saved for its backward, each in its own shape): the first copy's out-param takes
// the buffer, which is then computed there; the second stays a copy, now from that out-param's
// view (it was a crash: the second copy's buffer was already gone).
// CHECK: func.func @main(%arg0: memref<1x2xi64>, %arg1: memref<2x1xi64>)
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [2], strides: [1]
// CHECK-NOT: memref.alloc()
// CHECK: linalg.fill ins(%{{.*}} : i64) outs(%[[VIEW]] : memref<2xi64>)
// CHECK-NOT: memref.copy %{{.*}}, %arg0
// CHECK: %[[SECOND:.*]] = memref.expand_shape %[[VIEW]]
// CHECK-NEXT: memref.copy %[[SECOND]], %arg1
// CHECK-NEXT: return
module {
  func.func @main(%out1: memref<1x2xi64>, %out2: memref<2x1xi64>) {
    %c = arith.constant 7 : i64
    %alloc = memref.alloc() : memref<2xi64>
    linalg.fill ins(%c : i64) outs(%alloc : memref<2xi64>)
    %first = memref.expand_shape %alloc [[0, 1]] output_shape [1, 2] : memref<2xi64> into memref<1x2xi64>
    %second = memref.expand_shape %alloc [[0, 1]] output_shape [2, 1] : memref<2xi64> into memref<2x1xi64>
    memref.copy %first, %out1 : memref<1x2xi64> to memref<1x2xi64>
    memref.copy %second, %out2 : memref<2x1xi64> to memref<2x1xi64>
    return
  }
}

// -----

// A result that is a reshape of a temporary also read before the copy (a training forward's
// logits: saved as [B*L, V] and read by the loss): the producer writes a view of the out-param,
// the reshape stays for its reader, and no copy is left. A reshape also read after the copy
// keeps its copy (the out-param could be written by then).
// CHECK-LABEL: func.func @read_before
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [2, 3], strides: [3, 1]
// CHECK-NOT: memref.alloc()
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[VIEW]] : memref<2x3xf32>)
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[VIEW]]
// CHECK: memref.load %[[FLAT]]
// CHECK-NOT: memref.copy
// CHECK: return
// CHECK-LABEL: func.func @read_after
// CHECK: memref.alloc()
// CHECK: memref.copy
module {
  func.func @read_before(%out: memref<6xf32>, %sum: memref<f32>) {
    %c = arith.constant 1.0 : f32
    %i = arith.constant 4 : index
    %alloc = memref.alloc() : memref<2x3xf32>
    linalg.fill ins(%c : f32) outs(%alloc : memref<2x3xf32>)
    %flat = memref.collapse_shape %alloc [[0, 1]] : memref<2x3xf32> into memref<6xf32>
    %v = memref.load %flat[%i] : memref<6xf32>
    memref.store %v, %sum[] : memref<f32>
    memref.copy %flat, %out : memref<6xf32> to memref<6xf32>
    return
  }
  func.func @read_after(%out: memref<6xf32>, %sum: memref<f32>) {
    %c = arith.constant 1.0 : f32
    %i = arith.constant 4 : index
    %alloc = memref.alloc() : memref<2x3xf32>
    linalg.fill ins(%c : f32) outs(%alloc : memref<2x3xf32>)
    %flat = memref.collapse_shape %alloc [[0, 1]] : memref<2x3xf32> into memref<6xf32>
    memref.copy %flat, %out : memref<6xf32> to memref<6xf32>
    %v = memref.load %flat[%i] : memref<6xf32>
    memref.store %v, %sum[] : memref<f32>
    return
  }
}
