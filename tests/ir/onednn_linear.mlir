// RUN: dynamo-mlir pass cpu-call-onednn-linear %s -O gemm_library=onednn | check
// RUN: dynamo-mlir pass cpu-call-onednn-linear %s -O gemm_library=mkl | check --prefix MKL

// codegen/cpu/library_linear.py: a large float32 matmul with a row-major left operand becomes
// torch's oneDNN linear. The first, an nn.Linear's (x @ W^T, C preset to the broadcast bias by
// library_epilogue), passes the bias to oneDNN (a handle over the 1-d buffer, rank 1) and its
// broadcast loop goes; x, W (shown to torch as [3072, 768], its own layout), the bias and C are
// wrapped, oneDNN's result copied into C and every handle deleted.
// CHECK: call @aoti_torch_create_tensor_from_blob(%{{[0-9]+}}, %c2_i64
// CHECK: call @aoti_torch_create_tensor_from_blob(%{{[0-9]+}}, %c2_i64
// CHECK: call @aoti_torch_create_tensor_from_blob(%{{[0-9]+}}, %c1_i64
// CHECK: memref.get_global @dynamo_linear_attr_none
// CHECK: call @aoti_torch_cpu__linear_pointwise(
// CHECK: call @aoti_torch_copy_(
// CHECK-COUNT-5: call @aoti_torch_delete_tensor_object(
// CHECK: memref.get_global @_mlir_dynamo_library_status
// A small one (8x64x64, under MIN_MACS) stays for call-blas, with its zero fill.
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg6 : memref<8x64xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg4, %arg5
// One of a size known at run time: tested then, oneDNN's calls in the then branch, the fill
// and the matmul (for call-blas) in the else branch.
// CHECK: arith.cmpi uge, %{{[0-9]+}}, %c16777216 : index
// CHECK: scf.if
// CHECK: call @aoti_torch_cpu__linear_pointwise(
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg9 : memref<?x3072xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg7, %arg8
// CHECK-NEXT: }
// CHECK: memref.global "private" constant @dynamo_linear_attr_none : memref<5xi8> = dense<[110, 111, 110, 101, 0]>
// gemm_library=mkl: nothing changes.
// MKL-NOT: aoti_torch
// MKL: linalg.generic
// MKL-NEXT: ^bb0
// MKL-NEXT: linalg.yield
// MKL: linalg.matmul
#bcast = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func @main(%w: memref<3072x768xf32>, %x: memref<128x768xf32>, %bias: memref<3072xf32>, %out: memref<128x3072xf32>,
                  %small_x: memref<8x64xf32>, %small_w: memref<64x64xf32>, %small_out: memref<8x64xf32>,
                  %xd: memref<?x768xf32>, %wd: memref<768x3072xf32>, %outd: memref<?x3072xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%bias : memref<3072xf32>) outs(%out : memref<128x3072xf32>) {
    ^bb0(%in: f32, %o: f32):
      linalg.yield %in : f32
    }
    linalg.matmul indexing_maps = [#a, #bt, #c] ins(%x, %w : memref<128x768xf32>, memref<3072x768xf32>) outs(%out : memref<128x3072xf32>)
    linalg.fill ins(%zero : f32) outs(%small_out : memref<8x64xf32>)
    linalg.matmul ins(%small_x, %small_w : memref<8x64xf32>, memref<64x64xf32>) outs(%small_out : memref<8x64xf32>)
    linalg.fill ins(%zero : f32) outs(%outd : memref<?x3072xf32>)
    linalg.matmul ins(%xd, %wd : memref<?x768xf32>, memref<768x3072xf32>) outs(%outd : memref<?x3072xf32>)
    return
  }
}
