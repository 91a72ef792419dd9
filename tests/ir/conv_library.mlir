// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg -O hand_over_results=0 | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops -O hand_over_results=0 | check --prefix LOOPS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage llvm | check --prefix LLVM
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg -O hand_over_results=0 | check --prefix GRADS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix HANDED

// cpu, library_matmul (the default): a float32 convolution (stride 2, padding 1) is torch's
// kernel (codegen/cpu/library_conv.py). Its operands become buffers of any layout (read only),
// its result a fresh buffer that the calls write and hand back as the tensor; each call after
// the first runs only if those before it succeeded (scf.if on the status), the handles are
// deleted, and the status is or-ed into the module's global. Each read is numbered apart, so
// that CSE cannot merge two calls' reads (codegen/buffer_reads.py).
// CHECK: bufferization.to_buffer %arg0 read_only {dynamo_mlir.read = 0 : i64} : tensor<1x2x5x5xf32> to memref<1x2x5x5xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: bufferization.to_buffer %arg1 read_only {dynamo_mlir.read = 1 : i64}
// CHECK: %[[Y:alloc[_0-9]*]] = memref.alloc() : memref<1x3x3x3xf32>
// CHECK: call @aoti_torch_create_tensor_from_blob(
// CHECK: scf.if
// CHECK: call @aoti_torch_cpu_convolution(
// CHECK: extract_strided_metadata %[[Y]]
// CHECK: call @aoti_torch_copy_(
// CHECK: call @aoti_torch_delete_tensor_object(
// CHECK: memref.get_global @_mlir_dynamo_library_status
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK-NOT: linalg.conv
// CHECK: memref.global "public" @_mlir_dynamo_library_status : memref<1xi32> = dense<0>
// loops, hand_over_results off: the result buffer is the out-parameter itself (no allocation, no
// copy), the input read where it is (its strides, 50 25 5 1, are stored for torch).
// LOOPS: func.func @main(%arg0: memref<1x2x5x5xf32>, %arg1: memref<3x2x3x3xf32>, %arg2: memref<1x3x3x3xf32>)
// LOOPS-NOT: memref.alloc()
// LOOPS-NOT: memref.copy
// LOOPS: memref.store %c50_i64
// LOOPS: call @aoti_torch_cpu_convolution(
// LOOPS: extract_strided_metadata %arg2
// LOOPS: return
// With hand_over_results (the default; codegen/cpu/handed_results.py) the convolution's result,
// the function's, is torch's own tensor: its handle goes to the caller through a new argument
// (one int64 per result) and the out-parameter %arg2 is not written; nothing reads the result
// here, so no copy of it is made for readers either.
// HANDED: module attributes {dynamo_mlir.handed_results = array<i64: 0>
// HANDED: func.func @main(%arg0: memref<1x2x5x5xf32>, %arg1: memref<3x2x3x3xf32>, %arg2: memref<1x3x3x3xf32>, %arg3: memref<1xi64>
// HANDED-NOT: aoti_torch_copy_(
// HANDED-NOT: %arg2
// HANDED: memref.store %{{[0-9]+}}, %arg3[%c0] : memref<1xi64>
// HANDED: return
// LLVM: llvm.call @aoti_torch_cpu_convolution(
// LLVM: llvm.func @aoti_torch_cpu_convolution(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i32, !llvm.ptr, i64, i64, !llvm.ptr) -> i32
func.func @main(%arg0: tensor<1x2x5x5xf32>, %arg1: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = "dynamo.conv2d"(%arg0, %arg1) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----
// The gradients of a float32 convolution are torch's convolution_backward, one call each, with
// only the asked gradient in its output mask (1 0 0: input, 0 1 0: weight); the operand whose
// gradient is asked lends its shape only: the result buffer, wrapped, stands in for it and
// receives the copy. No convolution of our own, and no forward convolution either.
// GRADS: %[[DX:alloc[_0-9]*]] = memref.alloc() : memref<2x4x10x10xf32>
// GRADS: memref.store %c1_i32, %[[MASK:alloca[_0-9]*]][%c0] : memref<3xi32>
// GRADS-NEXT: memref.store %c0_i32, %[[MASK]][%c1] : memref<3xi32>
// GRADS-NEXT: memref.store %c0_i32, %[[MASK]][%c2] : memref<3xi32>
// GRADS: call @aoti_torch_cpu_convolution_backward(
// GRADS: call @aoti_torch_copy_(
// GRADS: bufferization.to_tensor %[[DX]] restrict writable
// GRADS: %[[DW:alloc[_0-9]*]] = memref.alloc() : memref<8x4x3x3xf32>
// GRADS: memref.store %c0_i32, %[[MASK2:alloca[_0-9]*]][%c0] : memref<3xi32>
// GRADS-NEXT: memref.store %c1_i32, %[[MASK2]][%c1] : memref<3xi32>
// GRADS: call @aoti_torch_cpu_convolution_backward(
// GRADS: bufferization.to_tensor %[[DW]] restrict writable
// GRADS-NOT: call @aoti_torch_cpu_convolution(
// GRADS-NOT: linalg.conv
func.func @main(%g: tensor<2x8x5x5xf32>, %w: tensor<8x4x3x3xf32>, %x: tensor<2x4x10x10xf32>) -> (tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>) {
  %dx = "dynamo.conv_grad_input"(%g, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xf32>, tensor<8x4x3x3xf32>) -> tensor<2x4x10x10xf32>
  %dw = "dynamo.conv_grad_weight"(%g, %x) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xf32>, tensor<2x4x10x10xf32>) -> tensor<8x4x3x3xf32>
  return %dx, %dw : tensor<2x4x10x10xf32>, tensor<8x4x3x3xf32>
}
