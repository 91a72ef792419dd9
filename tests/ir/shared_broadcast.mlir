// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O fuse_elementwise=false --stage loops | check --prefix UNFUSED

// A scalar broadcast used by two elementwise ops (CSE makes GPT-2's per-layer gelu constants one
// value): codegen/cpu/shared_broadcasts.py gives each use its own copy before elementwise
// fusion, so each loop reads the scalar as a constant; no 4x8 buffer of 0.5 is written or read.
// CHECK: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<4x8xf32>, %arg2: memref<4x8xf32>, %arg3: memref<4x8xf32>)
// CHECK: %[[HALF:cst[_0-9]*]] = arith.constant 5.000000e-01 : f32
// CHECK-NOT: memref.alloc
// CHECK: %[[X:[0-9]+]] = memref.load %arg0
// CHECK-NEXT: arith.mulf %[[X]], %[[HALF]] : f32
// CHECK: %[[Y:[0-9]+]] = memref.load %arg1
// CHECK-NEXT: arith.addf %[[Y]], %[[HALF]] : f32
// CHECK-NOT: memref.dealloc
// Without fusion the broadcast is one buffer (here the second result's, reused), written once
// and read by both loops.
// UNFUSED: memref.store %{{cst[_0-9]*}}, %[[B:arg[0-9]+]]
// UNFUSED: memref.load %[[B]]
// UNFUSED: memref.load %[[B]]
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = "dynamo.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %b = "dynamo.broadcast"(%c) {dims = array<i64>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<f32>) -> tensor<4x8xf32>
  %0 = "dynamo.mul"(%arg0, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "dynamo.add"(%arg1, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
