// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O library_matmul=false --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check --prefix LIBCPU
// RUN: dynamo-mlir pass cpu-library-attention %s | check --prefix LIBCPU
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage linalg | check --prefix CUDA
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST

// cpu with library_matmul off (the generic rule, expanded into dynamo ops and lowered with their
// rules, the contractions our own loops): k transposed, q @ k^T, times the scale, plus the bias
// read through a broadcast map (its unit dims never expanded in memory), then the softmax: row
// max, exp of the difference, row sum, division, and zeros where the row max is -inf (every
// position masked); then p @ v.
// cpu with library_matmul on (the default): one call of torch's fused CPU kernel on the operands'
// buffers (codegen/cpu/library_attention.py), the bias passed as its mask, no loops of ours.
// LIBCPU-NOT: linalg.generic
// LIBCPU: call @aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(
// LIBCPU: call @aoti_torch_copy_(
// LIBCPU-NOT: linalg.generic
// LIBCPU: func.func private @aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu(!llvm.ptr, !llvm.ptr, !llvm.ptr, f64, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-DAG: #[[BIAS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>
// CHECK: %[[SCALE:cst[_0-9]*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK: linalg.transpose ins(%arg1 : tensor<2x4x8x16xf32>) outs(%{{[0-9]+}} : tensor<2x4x16x8xf32>) permutation = [0, 1, 3, 2]
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{reshape[_0-9]*}}, %{{reshape[_0-9]*}} : tensor<8x8x16xf32>, tensor<8x16x8xf32>) outs(%{{[0-9]+}} : tensor<8x8x8xf32>)
// CHECK: ins(%[[SCALE]] : tensor<f32>)
// CHECK: arith.mulf
// CHECK: indexing_maps = [#[[BIAS]], {{.*}} ins(%arg3 : tensor<2x1x1x8xf32>)
// CHECK: arith.addf
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK: arith.divf
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{[0-9a-z_]*}}, %{{reshape[_0-9]*}} : tensor<8x8x8xf32>, tensor<8x8x16xf32>) outs(%{{[0-9]+}} : tensor<8x8x16xf32>)
// cuda: one torch call on the operands' buffers, writing the result's buffer; no linalg op at all.
// CUDA: func.func private @dynamo_cuda_attention_0(memref<2x4x8x16xf32>, memref<2x4x8x16xf32>, memref<2x4x8x16xf32>, memref<2x1x1x8xf32>, memref<2x4x8x16xf32>)
// CUDA: %[[OUT:alloc[_0-9]*]] = memref.alloc() : memref<2x4x8x16xf32>
// CUDA: call @dynamo_cuda_attention_0(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[OUT]]) {dynamo_mlir.library_call = "torch.attention", is_causal = 0 : i64, scale = 2.500000e-01 : f64}
// CUDA-NOT: linalg.
// HOST: host main(%0: 2x4x8x16xfloat32, %1: 2x4x8x16xfloat32, %2: 2x4x8x16xfloat32, %3: 2x1x1x8xfloat32, %4: 2x4x8x16xfloat32)
// HOST-NEXT: torch torch.attention(%0[2x4x8x16|512,128,16,1+0], %1[2x4x8x16|512,128,16,1+0], %2[2x4x8x16|512,128,16,1+0], %3[2x1x1x8|8,8,8,1+0], %4[2x4x8x16|512,128,16,1+0]) overwrite=False {'is_causal': 0, 'scale': 0.25}
// HOST-NOT: launch
func.func @main(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %b: tensor<2x1x1x8xf32>) -> tensor<2x4x8x16xf32> {
  %0 = "dynamo.attention"(%q, %k, %v, %b) {is_causal = 0 : i64, scale = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x1x8xf32>) -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----
// Causal, L = 4 queries over S = 8 keys, bf16: the mask keeps key s <= query l (top-left, as
// torch), from two iotas compared; the half type computes in f32 and rounds once at the end.
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.index 0 : index
// CHECK: linalg.index 1 : index
// CHECK: arith.cmpi sge
// CHECK: arith.select
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %{{.*}} : tensor<1x2x4x16xbf16>
// CUDA: call @dynamo_cuda_attention_0({{.*}}) {dynamo_mlir.library_call = "torch.attention", is_causal = 1 : i64, scale = 1.250000e-01 : f64} : (memref<1x2x4x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x4x16xbf16>) -> ()
// HOST: torch torch.attention({{.*}}) overwrite=False {'is_causal': 1, 'scale': 0.125}
// HOST-NOT: launch
func.func @main(%q: tensor<1x2x4x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x2x4x16xbf16> {
  %0 = "dynamo.attention"(%q, %k, %v) {is_causal = 1 : i64, scale = 0.125 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x4x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x4x16xbf16>
  return %0 : tensor<1x2x4x16xbf16>
}

// -----
// cuda: the heads moved in front of the sequence (q) and back (the result) are transposed views,
// as eager's fused kernels take and lay them out, not copy kernels: the schedule is the call alone.
// CHECK: linalg.transpose
// HOST: host main(%0: 2x8x4x16xfloat32, %1: 2x4x8x16xfloat32, %2: 2x4x8x16xfloat32, %3: 2x8x4x16xfloat32)
// HOST-NEXT: torch torch.attention(%0[2x4x8x16|512,16,64,1+0], %1[2x4x8x16|512,128,16,1+0], %2[2x4x8x16|512,128,16,1+0], %3[2x4x8x16|512,16,64,1+0]) overwrite=False {'is_causal': 1, 'scale': 0.25}
// HOST-NOT: launch
func.func @main(%x: tensor<2x8x4x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32> {
  %q = "dynamo.permute"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %0 = "dynamo.attention"(%q, %k, %v) {is_causal = 1 : i64, scale = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = "dynamo.permute"(%0) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %1 : tensor<2x8x4x16xf32>
}

// -----
// A transpose that moves the head dim (the last) stays a copy: torch's fused kernels need it
// innermost, and SDPA would otherwise fall back to its math kernel.
// HOST: launch elementwise
// HOST-NEXT: torch torch.attention(%{{[0-9]+}}[2x4x8x16|512,128,16,1+0]
func.func @main(%x: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %q = "dynamo.permute"(%x) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %0 = "dynamo.attention"(%q, %k, %v) {is_causal = 0 : i64, scale = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
