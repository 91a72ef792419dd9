// RUN: dynamo-mlir pass cpu-release-adopted-results %s | check

// A convolution result read in place (codegen/cpu/adopted_results.py): the branch choosing its
// buffer (torch's data, else a copy in ours) carries dynamo_mlir.adopted; after bufferization,
// cpu-release-adopted-results deletes the torch tensor behind it (its handle, slot 2 of the
// call's stack slots) right after the last op using the buffer, here the first copy, not at the
// return: torch's allocator has the memory back for what follows.
// CHECK: scf.if
// CHECK: call @aoti_torch_get_data_ptr
// CHECK: dynamo_mlir.adopted
// CHECK: memref.copy %0, %arg2
// CHECK: %[[H:[0-9]+]] = memref.load %alloca[%c2{{.*}}] : memref<11xi64>
// CHECK-NEXT: %[[P:[0-9]+]] = llvm.inttoptr %[[H]]
// CHECK-NEXT: call @aoti_torch_delete_tensor_object(%[[P]])
// CHECK: memref.get_global @_mlir_dynamo_library_status
// CHECK: memref.copy %arg3, %arg2
// CHECK-NOT: aoti_torch_delete_tensor_object(
// CHECK: return
module {
  memref.global "public" @_mlir_dynamo_library_status : memref<1xi32> = dense<0>
  func.func private @aoti_torch_get_data_ptr(!llvm.ptr, !llvm.ptr) -> i32
  func.func private @aoti_torch_delete_tensor_object(!llvm.ptr) -> i32
  func.func @main(%flag: i1, %fallback: memref<4xf32>, %out: memref<4xf32>, %other: memref<4xf32>) {
    %c2 = arith.constant 2 : index
    %slots = memref.alloca() : memref<11xi64>
    %m = scf.if %flag -> (memref<4xf32>) {
      %h = memref.load %slots[%c2] : memref<11xi64>
      %hp = llvm.inttoptr %h : i64 to !llvm.ptr
      %dest = llvm.mlir.zero : !llvm.ptr
      %s = func.call @aoti_torch_get_data_ptr(%hp, %dest) : (!llvm.ptr, !llvm.ptr) -> i32
      scf.yield %fallback : memref<4xf32>
    } else {
      scf.yield %fallback : memref<4xf32>
    } {dynamo_mlir.adopted}
    memref.copy %m, %out : memref<4xf32> to memref<4xf32>
    memref.copy %other, %out : memref<4xf32> to memref<4xf32>
    return
  }
}
