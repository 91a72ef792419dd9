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
