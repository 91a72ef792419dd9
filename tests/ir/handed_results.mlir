// RUN: dynamo-mlir pass cpu-hand-over-results %s | check

// Two convolution results the function returns itself (codegen/cpu/handed_results.py), each an
// adopt_or_copy branch marked dynamo_mlir.handed and copied by buffer-results-to-out-params into
// its out-param (%out0, %out1 after the one input: input_count = 1).
// - The first, in torch's own dim order, is handed over: the copy becomes its handle (slot 2 of
//   the stack slots) stored in a new last argument, one int64 per result, at its result index 0,
//   and the slot cleared, so the delete after it finds nothing. Nothing else reads it, so its
//   branch, which chose the buffer readers read (copying a result laid out otherwise), is gone.
// - The second is an NHWC buffer torch sees as NCHW (handed = true) that is not a channels-last
//   result of the function (no dynamo_mlir.nhwc_results): its tensor is not what the caller
//   takes, so it stays copied, and its branch keeps its condition.
// CHECK: module attributes {dynamo_mlir.handed_results = array<i64: 0>}
// CHECK: func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<4xf32>, %arg3: memref<2xi64>)
// CHECK: %[[OK:[0-9]+]] = arith.cmpf
// CHECK-NOT: dynamo_mlir.handed = false
// CHECK: scf.if %[[OK]] -> (memref<4xf32>)
// CHECK: {dynamo_mlir.adopted, dynamo_mlir.handed = true}
// CHECK-NOT: memref.copy {{.*}}, %arg1
// CHECK: %[[H:[0-9]+]] = memref.load %alloca[%c2{{.*}}] : memref<11xi64>
// CHECK: memref.store %[[H]], %arg3[%c0{{.*}}] : memref<2xi64>
// CHECK: memref.store %c0_i64, %alloca[%c2{{.*}}] : memref<11xi64>
// CHECK: memref.copy %{{[0-9]+}}, %arg2
// CHECK: call @aoti_torch_delete_tensor_object(
// CHECK: return
module {
  memref.global "public" @_mlir_dynamo_library_status : memref<1xi32> = dense<0>
  func.func private @aoti_torch_get_data_ptr(!llvm.ptr, !llvm.ptr) -> i32
  func.func private @aoti_torch_delete_tensor_object(!llvm.ptr) -> i32
  func.func @main(%in: memref<4xf32>, %out0: memref<4xf32>, %out1: memref<4xf32>) attributes {dynamo_mlir.input_count = 1 : i64} {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %v = memref.load %in[%c0] : memref<4xf32>
    %ok = arith.cmpf ogt, %v, %v : f32
    %slots = memref.alloca() : memref<11xi64>
    %fallback = memref.alloc() : memref<4xf32>
    %m = scf.if %ok -> (memref<4xf32>) {
      %h = memref.load %slots[%c2] : memref<11xi64>
      %hp = llvm.inttoptr %h : i64 to !llvm.ptr
      %dest = llvm.mlir.zero : !llvm.ptr
      %s = func.call @aoti_torch_get_data_ptr(%hp, %dest) : (!llvm.ptr, !llvm.ptr) -> i32
      scf.yield %fallback : memref<4xf32>
    } else {
      scf.yield %fallback : memref<4xf32>
    } {dynamo_mlir.adopted, dynamo_mlir.handed = false}
    %fallback2 = memref.alloc() : memref<4xf32>
    %n = scf.if %ok -> (memref<4xf32>) {
      %h = memref.load %slots[%c3] : memref<11xi64>
      %hp = llvm.inttoptr %h : i64 to !llvm.ptr
      %dest = llvm.mlir.zero : !llvm.ptr
      %s = func.call @aoti_torch_get_data_ptr(%hp, %dest) : (!llvm.ptr, !llvm.ptr) -> i32
      scf.yield %fallback2 : memref<4xf32>
    } else {
      scf.yield %fallback2 : memref<4xf32>
    } {dynamo_mlir.adopted, dynamo_mlir.handed = true}
    memref.copy %m, %out0 : memref<4xf32> to memref<4xf32>
    memref.copy %n, %out1 : memref<4xf32> to memref<4xf32>
    %h2 = memref.load %slots[%c2] : memref<11xi64>
    %p2 = llvm.inttoptr %h2 : i64 to !llvm.ptr
    %r = func.call @aoti_torch_delete_tensor_object(%p2) : (!llvm.ptr) -> i32
    return
  }
}
