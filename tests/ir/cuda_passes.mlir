// RUN: dynamo-mlir pass cuda-erase-empty-loop-nests %s --target cuda | check --prefix EMPTY
// RUN: dynamo-mlir pass cuda-fold-transposes-into-matmuls %s --target cuda | check --prefix FOLDT
// RUN: dynamo-mlir pass cuda-fold-transposes-of-attention %s --target cuda | check --prefix ATTN
// RUN: dynamo-mlir pass cuda-generalize-library-ops %s --target cuda -O library_matmul=false | check --prefix GENERAL
// RUN: dynamo-mlir pass cuda-fold-fills-into-library-ops %s --target cuda | check --prefix FILLS
// RUN: dynamo-mlir pass cuda-fold-bias-into-matmuls %s --target cuda | check --prefix BIAS
// RUN: dynamo-mlir pass cuda-hoist-reshapes %s --target cuda | check --prefix HOIST
// RUN: dynamo-mlir pass cuda-own-inits %s --target cuda | check --prefix OWN
// RUN: dynamo-mlir pass cuda-fuse-rows %s --target cuda | check --prefix ROWS
// RUN: dynamo-mlir pass cuda-kernels %s --target cuda | check --prefix KERNELS
// RUN: dynamo-mlir pass cuda-index-bitwidth %s --target cuda | check --prefix BITS
// RUN: dynamo-mlir pass cuda-to-nvvm %s --target cuda | check --prefix NVVM
// RUN: not dynamo-mlir pass cuda-to-nvvm %s --target cuda | check --prefix NOBITS
// RUN: dynamo-mlir pass cuda-widened-matmuls-on-half %s --target cuda | check --prefix WIDENED
// RUN: dynamo-mlir pass cuda-program %s --target cuda | check --prefix PROGRAM
// RUN: dynamo-mlir pass cuda-recompute-cheap-producers %s --target cuda | check --prefix RECOMPUTE
// RUN: dynamo-mlir pass cuda-fuse-recomputed-producers %s --target cuda | check --prefix FUSEREC
// RUN: dynamo-mlir pass cuda-write-inputs-in-place %s --target cuda | check --prefix INPLACE
// RUN: dynamo-mlir pass cuda-merge-identical-kernels %s --target cuda | check --prefix MERGE
// RUN: dynamo-mlir pass cuda-kernels %s --target cuda | check --prefix TILED
// RUN: dynamo-mlir pass cuda-kernels %s --target cuda | check --prefix LONGROWS
// RUN: dynamo-mlir pass cuda-read-scalars-directly %s --target cuda | check --prefix SCALARS
// RUN: dynamo-mlir pass cuda-expand-reshapes-of-slices %s --target cuda | check --prefix EXPAND
// RUN: dynamo-mlir pass cuda-erase-unread-inputs %s --target cuda | check --prefix UNREAD
// RUN: dynamo-mlir pass cuda-extern-dynamic-shared %s --target cuda | check --prefix EXTERN
// RUN: dynamo-mlir pass cuda-compute-gathered-elements %s --target cuda | check --prefix GATHERED

// Named passes of the cuda target run alone (`dynamo-mlir passes --target cuda`).
// cuda-erase-empty-loop-nests: loop nests with a zero-size operand have no trips and are erased
// (a zero-size view may have no static strides to build a kernel from, fuzzer program 47); the
// fill of the reduction's non-empty output stays: the sum over an empty dim is that fill.
// EMPTY: func.func @main
// EMPTY-NEXT: arith.constant
// EMPTY-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg1 : memref<7xf32>)
// EMPTY-NEXT: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%a: memref<7x0xf32>, %out: memref<7xf32>, %b: memref<7x0xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<7xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%a : memref<7x0xf32>) outs(%out : memref<7xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : memref<7x0xf32>) outs(%b : memref<7x0xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// cuda-fold-transposes-into-matmuls: a weight transpose that only feeds a library matmul is not
// materialized (no copy kernel, no buffer): the matmul reads a transposed view, which torch
// hands cuBLAS as a transposed operand.
// FOLDT: %[[T:transpose[_0-9]*]] = memref.transpose %arg1 (d0, d1) -> (d1, d0)
// FOLDT-NEXT: linalg.matmul ins(%arg0, %[[T]] : {{.*}}) outs(%arg2 : memref<8x32xf32>)
// FOLDT-NOT: linalg.transpose
// FOLDT-NOT: memref.alloc
func.func @main(%a: memref<8x16xf32>, %w: memref<32x16xf32>, %out: memref<8x32xf32>) {
  %t = memref.alloc() : memref<16x32xf32>
  linalg.transpose ins(%w : memref<32x16xf32>) outs(%t : memref<16x32xf32>) permutation = [1, 0]
  linalg.matmul ins(%a, %t : memref<8x16xf32>, memref<16x32xf32>) outs(%out : memref<8x32xf32>)
  memref.dealloc %t : memref<16x32xf32>
  return
}

// -----

// cuda-fold-transposes-of-attention: the attention's [B, H, L, E] result that only a transpose
// back to [B, L, H, E] reads is written by the call straight into a transposed view of the
// transpose's destination, as eager's fused kernels lay it out: no buffer, no copy kernel.
// ATTN: %[[T:transpose[_0-9]*]] = memref.transpose %arg3 (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// ATTN-NEXT: call @dynamo_cuda_attention_{{[0-9]+}}(%arg0, %arg1, %arg2, %[[T]]) {dynamo_mlir.library_call = "torch.attention"
// ATTN-NOT: linalg.transpose
// ATTN-NOT: memref.alloc
func.func private @dynamo_cuda_attention_0(memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>)
func.func @main(%q: memref<1x2x4x8xf32>, %k: memref<1x2x4x8xf32>, %v: memref<1x2x4x8xf32>, %out: memref<1x4x2x8xf32>) {
  %a = memref.alloc() : memref<1x2x4x8xf32>
  call @dynamo_cuda_attention_0(%q, %k, %v, %a) {dynamo_mlir.library_call = "torch.attention", is_causal = 0 : i64, scale = 2.500000e-01 : f64} : (memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) -> ()
  linalg.transpose ins(%a : memref<1x2x4x8xf32>) outs(%out : memref<1x4x2x8xf32>) permutation = [0, 2, 1, 3]
  memref.dealloc %a : memref<1x2x4x8xf32>
  return
}

// -----

// ... and a query our kernels compute into a buffer of its own (a rotary embedding's result) gets
// that [B, L, H, E] layout too: cuDNN's attention lays its result out as the query is, so the
// result is the call's buffer as it is (no copy kernel after the call).
// ATTN: %[[Q:alloc[_0-9]*]] = memref.alloc() : memref<1x4x2x8xf32>
// ATTN-NEXT: %[[QV:transpose[_0-9]*]] = memref.transpose %[[Q]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// ATTN-NEXT: linalg.generic
// ATTN-SAME: outs(%[[QV]] : memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>>)
// ATTN: call @dynamo_cuda_attention_{{[0-9]+}}(%[[QV]], %arg1, %arg2, %{{transpose[_0-9]*}})
// ATTN-NEXT: memref.dealloc %[[Q]] : memref<1x4x2x8xf32>
func.func private @dynamo_cuda_attention_0(memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>)
func.func @main(%x: memref<1x2x4x8xf32>, %k: memref<1x2x4x8xf32>, %v: memref<1x2x4x8xf32>, %out: memref<1x4x2x8xf32>) {
  %q = memref.alloc() : memref<1x2x4x8xf32>
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x2x4x8xf32>) outs(%q : memref<1x2x4x8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %m = arith.mulf %i, %i : f32
    linalg.yield %m : f32
  }
  %a = memref.alloc() : memref<1x2x4x8xf32>
  call @dynamo_cuda_attention_0(%q, %k, %v, %a) {dynamo_mlir.library_call = "torch.attention", is_causal = 0 : i64, scale = 2.500000e-01 : f64} : (memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) -> ()
  memref.dealloc %q : memref<1x2x4x8xf32>
  linalg.transpose ins(%a : memref<1x2x4x8xf32>) outs(%out : memref<1x4x2x8xf32>) permutation = [0, 2, 1, 3]
  memref.dealloc %a : memref<1x2x4x8xf32>
  return
}

// -----

// ... also when it is written in parts through subviews (a kernel, a copy) and then in place
// (LLaMA's rotary embedding: the concat of two halves, then the rotation read and written
// elementwise), and read by another layer's attention as its query (memory planning gave both
// layers' queries one buffer): each subview is taken again of the transposed view, and the other
// call reads the view too.
// ATTN: %[[Q:alloc[_0-9]*]] = memref.alloc() : memref<1x4x2x8xf32>
// ATTN-NEXT: %[[QV:transpose[_0-9]*]] = memref.transpose %[[Q]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// ATTN: %[[LO:.*]] = memref.subview %[[QV]][0, 0, 0, 0] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>> to memref<1x2x4x4xf32, strided<[64, 8, 16, 1]>>
// ATTN: outs(%[[LO]] : memref<1x2x4x4xf32, strided<[64, 8, 16, 1]>>)
// ATTN: %[[HI:.*]] = memref.subview %[[QV]][0, 0, 0, 4] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>> to memref<1x2x4x4xf32, strided<[64, 8, 16, 1], offset: 4>>
// ATTN: memref.copy %arg0, %[[HI]]
// ATTN: ins(%[[QV]] : memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>>) outs(%[[QV]] : memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>>)
// ATTN: call @dynamo_cuda_attention_{{[0-9]+}}(%[[QV]], %arg1, %arg2, %{{transpose[_0-9]*}})
// ATTN: call @dynamo_cuda_attention_{{[0-9]+}}(%[[QV]], %arg2, %arg1, %{{.*}}) {{.*}} : (memref<1x2x4x8xf32, strided<[64, 8, 16, 1]>>
func.func private @dynamo_cuda_attention_0(memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>)
func.func @main(%x: memref<1x2x4x4xf32>, %k: memref<1x2x4x8xf32>, %v: memref<1x2x4x8xf32>, %out: memref<1x4x2x8xf32>) {
  %q = memref.alloc() : memref<1x2x4x8xf32>
  %lo = memref.subview %q[0, 0, 0, 0] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x4x8xf32> to memref<1x2x4x4xf32, strided<[64, 32, 8, 1]>>
  linalg.copy ins(%x : memref<1x2x4x4xf32>) outs(%lo : memref<1x2x4x4xf32, strided<[64, 32, 8, 1]>>)
  %hi = memref.subview %q[0, 0, 0, 4] [1, 2, 4, 4] [1, 1, 1, 1] : memref<1x2x4x8xf32> to memref<1x2x4x4xf32, strided<[64, 32, 8, 1], offset: 4>>
  memref.copy %x, %hi : memref<1x2x4x4xf32> to memref<1x2x4x4xf32, strided<[64, 32, 8, 1], offset: 4>>
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%q : memref<1x2x4x8xf32>) outs(%q : memref<1x2x4x8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %m = arith.mulf %i, %i : f32
    linalg.yield %m : f32
  }
  %a = memref.alloc() : memref<1x2x4x8xf32>
  call @dynamo_cuda_attention_0(%q, %k, %v, %a) {dynamo_mlir.library_call = "torch.attention", is_causal = 0 : i64, scale = 2.500000e-01 : f64} : (memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) -> ()
  linalg.transpose ins(%a : memref<1x2x4x8xf32>) outs(%out : memref<1x4x2x8xf32>) permutation = [0, 2, 1, 3]
  memref.dealloc %a : memref<1x2x4x8xf32>
  %b = memref.alloc() : memref<1x2x4x8xf32>
  call @dynamo_cuda_attention_0(%q, %v, %k, %b) {dynamo_mlir.library_call = "torch.attention", is_causal = 0 : i64, scale = 2.500000e-01 : f64} : (memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>, memref<1x2x4x8xf32>) -> ()
  memref.dealloc %q : memref<1x2x4x8xf32>
  memref.copy %b, %v : memref<1x2x4x8xf32> to memref<1x2x4x8xf32>
  memref.dealloc %b : memref<1x2x4x8xf32>
  return
}

// -----

// cuda-generalize-library-ops (library_matmul off): the matmul becomes the equivalent
// linalg.generic, which cuda-kernels makes a kernel of; its fill stays a fill.
// GENERAL: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<8x32xf32>)
// GENERAL-NEXT: linalg.generic {{{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : memref<8x16xf32>, memref<16x32xf32>) outs(%arg2 : memref<8x32xf32>)
// GENERAL: arith.mulf
// GENERAL-NEXT: arith.addf
// GENERAL-NOT: linalg.matmul
// cuda-fold-fills-into-library-ops: the zero fill right before the matmul writing its buffer is
// erased and the matmul overwrites its output (the host schedule has torch write C, beta = 0);
// the fill of 1.0 before the second matmul is its accumulator and stays.
// FILLS: func.func @main
// FILLS-NEXT: arith.constant 0.000000e+00
// FILLS-NEXT: arith.constant 1.000000e+00
// FILLS-NEXT: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 : memref<8x32xf32>)
// FILLS-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg3 : memref<8x32xf32>)
// FILLS-NEXT: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%arg3 : memref<8x32xf32>)
// FILLS-NEXT: return
func.func @main(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %out: memref<8x32xf32>, %acc: memref<8x32xf32>) {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%out : memref<8x32xf32>)
  linalg.fill ins(%one : f32) outs(%acc : memref<8x32xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%acc : memref<8x32xf32>)
  return
}

// -----

// cuda-fold-bias-into-matmuls: a matmul overwriting a fresh buffer, then a bias add reading it,
// is one torch.addmm call (a, b, bias, out) where the add was; the buffer goes. Left alone: a
// matmul that accumulates (no overwrite), and one whose result is read again after the add.
// BIAS: func.func private @dynamo_cuda_addmm_0(memref<?x16xf32>, memref<16x32xf32>, memref<32xf32>, memref<?x32xf32>)
// BIAS: func.func @main
// BIAS-NOT: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg1
// BIAS: call @dynamo_cuda_addmm_0(%arg0, %arg1, %arg2, %arg3) {dynamo_mlir.library_call = "torch.addmm"}
// BIAS: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%arg4 : memref<?x32xf32>)
// BIAS: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg1 : {{.*}}) outs(%[[KEPT:.+]] : memref<?x32xf32>)
// BIAS: linalg.generic
// BIAS: linalg.generic {{.*}} ins(%[[KEPT]] : memref<?x32xf32>)
#mm_id = affine_map<(d0, d1) -> (d0, d1)>
#mm_col = affine_map<(d0, d1) -> (d1)>
func.func @main(%a: memref<?x16xf32>, %b: memref<16x32xf32>, %bias: memref<32xf32>, %out: memref<?x32xf32>,
                %acc: memref<?x32xf32>, %out2: memref<?x32xf32>, %out3: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x16xf32>
  %t = memref.alloc(%n) : memref<?x32xf32>
  linalg.matmul {dynamo_mlir.overwrite} ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%t : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#mm_id, #mm_col, #mm_id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<?x32xf32>, memref<32xf32>) outs(%out : memref<?x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  memref.dealloc %t : memref<?x32xf32>
  linalg.matmul ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%acc : memref<?x32xf32>)
  %u = memref.alloc(%n) : memref<?x32xf32>
  linalg.matmul {dynamo_mlir.overwrite} ins(%a, %b : memref<?x16xf32>, memref<16x32xf32>) outs(%u : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#mm_id, #mm_col, #mm_id], iterator_types = ["parallel", "parallel"]} ins(%u, %bias : memref<?x32xf32>, memref<32xf32>) outs(%out2 : memref<?x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %y, %x : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#mm_id, #mm_id], iterator_types = ["parallel", "parallel"]} ins(%u : memref<?x32xf32>) outs(%out3 : memref<?x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// cuda-fold-bias-into-matmuls, an autocast linear: bf16 operands, the product summed into a
// float32 C, the float32 bias rounded to bf16 and added, the sum rounded to the bf16 output. One
// torch.addmm writing the bf16 output (cuBLASLt's epilogue computes exactly that), C gone. Left
// alone: a bias added unrounded (the graph's sum is not the half addmm's), and a product whose
// N (36) is no multiple of 8 (library.py pads those for cuBLAS's aligned kernels).
// BIAS: func.func private @dynamo_cuda_addmm_0(memref<?x16xbf16>, memref<16x32xbf16>, memref<32xf32>, memref<?x32xbf16>)
// BIAS-LABEL: func.func @autocast
// BIAS-NEXT: arith.constant
// BIAS-NEXT: memref.dim
// BIAS-NEXT: call @dynamo_cuda_addmm_0(%arg0, %arg1, %arg2, %arg3) {dynamo_mlir.library_call = "torch.addmm"}
// BIAS-NEXT: memref.alloc
// BIAS-NEXT: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg1
// BIAS: linalg.matmul {dynamo_mlir.overwrite} ins(%arg0, %arg5
#amp_id = affine_map<(d0, d1) -> (d0, d1)>
#amp_col = affine_map<(d0, d1) -> (d1)>
func.func @autocast(%a: memref<?x16xbf16>, %b: memref<16x32xbf16>, %bias: memref<32xf32>, %out: memref<?x32xbf16>,
                    %out2: memref<?x32xbf16>, %b36: memref<16x36xbf16>, %bias36: memref<36xf32>, %out3: memref<?x36xbf16>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?x16xbf16>
  %t = memref.alloc(%n) : memref<?x32xf32>
  linalg.matmul {dynamo_mlir.overwrite} ins(%a, %b : memref<?x16xbf16>, memref<16x32xbf16>) outs(%t : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#amp_id, #amp_col, #amp_id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<?x32xf32>, memref<32xf32>) outs(%out : memref<?x32xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %r = arith.truncf %y : f32 to bf16
    %w = arith.extf %r : bf16 to f32
    %s = arith.addf %x, %w : f32
    %h = arith.truncf %s : f32 to bf16
    linalg.yield %h : bf16
  }
  %u = memref.alloc(%n) : memref<?x32xf32>
  linalg.matmul {dynamo_mlir.overwrite} ins(%a, %b : memref<?x16xbf16>, memref<16x32xbf16>) outs(%u : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#amp_id, #amp_col, #amp_id], iterator_types = ["parallel", "parallel"]} ins(%u, %bias : memref<?x32xf32>, memref<32xf32>) outs(%out2 : memref<?x32xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %s = arith.addf %x, %y : f32
    %h = arith.truncf %s : f32 to bf16
    linalg.yield %h : bf16
  }
  %v = memref.alloc(%n) : memref<?x36xf32>
  linalg.matmul {dynamo_mlir.overwrite} ins(%a, %b36 : memref<?x16xbf16>, memref<16x36xbf16>) outs(%v : memref<?x36xf32>)
  linalg.generic {indexing_maps = [#amp_id, #amp_col, #amp_id], iterator_types = ["parallel", "parallel"]} ins(%v, %bias36 : memref<?x36xf32>, memref<36xf32>) outs(%out3 : memref<?x36xbf16>) {
  ^bb0(%x: f32, %y: f32, %o: bf16):
    %r = arith.truncf %y : f32 to bf16
    %w = arith.extf %r : bf16 to f32
    %s = arith.addf %w, %x : f32
    %h = arith.truncf %s : f32 to bf16
    linalg.yield %h : bf16
  }
  return
}

// -----

// cuda-hoist-reshapes, the other way: a layer norm's [2, 4, 8] rows merged into the [8, 8]
// operand of a matmul, then cast to bf16. The cast moves above the merge (over [2, 4, 8]) and the
// merge below it, so that elementwise fusion makes the norm and the cast one kernel writing bf16.
// HOIST-LABEL: func.func @merged_then_cast
// HOIST: %[[N:.+]] = linalg.generic {{.*}} ins(%arg0 : tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x4x8xf32>)
// HOIST: %[[C:.+]] = linalg.generic {{.*}} ins(%[[N]] : tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x4x8xbf16>)
// HOIST-NEXT: ^bb0
// HOIST-NEXT: arith.truncf
// HOIST: tensor.reshape %[[C]](%arg1) : (tensor<2x4x8xbf16>, tensor<2xi64>) -> tensor<8x8xbf16>
#s_id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s_id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @merged_then_cast(%x: tensor<2x4x8xf32>, %s: tensor<2xi64>) -> tensor<8x8xbf16> {
  %e = tensor.empty() : tensor<2x4x8xf32>
  %n = linalg.generic {indexing_maps = [#s_id3, #s_id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.negf %a : f32
    linalg.yield %y : f32
  } -> tensor<2x4x8xf32>
  %r = tensor.reshape %n(%s) : (tensor<2x4x8xf32>, tensor<2xi64>) -> tensor<8x8xf32>
  %e2 = tensor.empty() : tensor<8x8xbf16>
  %c = linalg.generic {indexing_maps = [#s_id2, #s_id2], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<8x8xf32>) outs(%e2 : tensor<8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8xbf16>
  return %c : tensor<8x8xbf16>
}

// -----

// cuda-hoist-reshapes: the bias add's [?, 8] result, reshaped to [2, ?, 8] for the tanh after it,
// becomes a bias add over the reshaped input (the bias's map now reads the last of three dims), so
// elementwise fusion can make one kernel of both. A reshape that only a return reads stays.
// HOIST: %[[X:.+]] = tensor.reshape %arg0(%arg2) : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<2x?x8xf32>
// HOIST: %[[ADD:.+]] = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[X]], %arg1 : tensor<2x?x8xf32>, tensor<8xf32>)
// HOIST: arith.addf
// HOIST: linalg.generic {{.*}} ins(%[[ADD]] : tensor<2x?x8xf32>)
// HOIST: math.tanh
// HOIST: %[[MUL:.+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<8xf32>)
// HOIST: tensor.reshape %[[MUL]](%arg2)
#h_id2 = affine_map<(d0, d1) -> (d0, d1)>
#h_col = affine_map<(d0, d1) -> (d1)>
#h_id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @main(%x: tensor<?x8xf32>, %b: tensor<8xf32>, %s: tensor<3xi64>, %m: index) -> (tensor<2x?x8xf32>, tensor<2x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %g = linalg.generic {indexing_maps = [#h_id2, #h_col, #h_id2], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x8xf32>, tensor<8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %a = arith.addf %p, %q : f32
    linalg.yield %a : f32
  } -> tensor<?x8xf32>
  %r = tensor.reshape %g(%s) : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<2x?x8xf32>
  %e2 = tensor.empty(%m) : tensor<2x?x8xf32>
  %h = linalg.generic {indexing_maps = [#h_id3, #h_id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<2x?x8xf32>) outs(%e2 : tensor<2x?x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<2x?x8xf32>
  %g2 = linalg.generic {indexing_maps = [#h_id2, #h_col, #h_id2], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<?x8xf32>, tensor<8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %a = arith.mulf %p, %q : f32
    linalg.yield %a : f32
  } -> tensor<?x8xf32>
  %r2 = tensor.reshape %g2(%s) : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<2x?x8xf32>
  return %h, %r2 : tensor<2x?x8xf32>, tensor<2x?x8xf32>
}

// -----

// A row max and the subtraction that reads it, as bufferization leaves them.
// cuda-fuse-rows: fill, max and subtraction are one launch, one block (32 threads) per row, the
// max combined across the block by gpu.all_reduce; no linalg op is left for cuda-kernels.
// ROWS: gpu.launch blocks({{.*}}) in (%{{.*}} = %c4{{.*}}) threads({{.*}}) in (%{{.*}} = %c32
// ROWS: gpu.all_reduce maximumf
// ROWS: arith.subf
// ROWS-NOT: gpu.launch
// ROWS-NOT: linalg.
// cuda-kernels (no row fusion): a launch per op, the fill folded into the row max's kernel
// (its -inf the initial value), so two launches, not three.
// KERNELS: gpu.launch
// KERNELS: gpu.all_reduce maximumf
// KERNELS: arith.constant 0xFF800000 : f32
// KERNELS-NEXT: arith.maximumf
// KERNELS: gpu.launch
// KERNELS: arith.subf
// KERNELS-NOT: gpu.launch
// KERNELS-NOT: linalg.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>
func.func @main(%x: memref<4x256xf32>, %out: memref<4x256xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %shape = memref.get_global @__constant_2xi64 : memref<2xi64>
  %max = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x256xf32>) outs(%max : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  %m2 = memref.reshape %max(%shape) : (memref<4xf32>, memref<2xi64>) -> memref<4x1xf32>
  linalg.generic {indexing_maps = [#id, #bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m2 : memref<4x256xf32>, memref<4x1xf32>) outs(%out : memref<4x256xf32>) {
  ^bb0(%in: f32, %m: f32, %o: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  }
  return
}
memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<[4, 1]> {alignment = 64 : i64}

// -----

// cuda-index-bitwidth: the kernels' index width on the module, 32 bits while every buffer the
// host functions take or allocate has fewer than 2**31 elements, else 64.
// BITS: module attributes {dynamo_mlir.index_bitwidth = 32 : i64}
// BITS-NEXT: func.func @small
func.func @small(%a: memref<32xf32>) {
  %t = memref.alloc() : memref<1024x1024xf32>
  return
}

// -----

// BITS: module attributes {dynamo_mlir.index_bitwidth = 64 : i64}
// BITS-NEXT: func.func @huge
func.func @huge(%a: memref<32xf32>) {
  %t = memref.alloc() : memref<2147483648xi8>
  return
}

// -----

// cuda-to-nvvm: the outlined kernel in the NVVM/LLVM dialect, a bare pointer per buffer, its
// index math at the module's width (32 bits: an i32 thread id and address offset).
// NVVM: func.func @main(%arg0: memref<32xf32>)
// NVVM: gpu.module @main_kernel
// NVVM-NEXT: llvm.func @main_kernel(%arg0: !llvm.ptr) attributes {{{.*}}nvvm.kernel
// NVVM: llvm.getelementptr {{.*}} : (!llvm.ptr, i32) -> !llvm.ptr, f32
module attributes {dynamo_mlir.index_bitwidth = 32 : i64, gpu.container_module} {
  func.func @main(%arg0: memref<32xf32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func  @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)  args(%arg0 : memref<32xf32>)
    return
  }
  gpu.module @main_kernel {
    gpu.func @main_kernel(%arg0: memref<32xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
      %thread_id_x = gpu.thread_id x
      %0 = memref.load %arg0[%thread_id_x] : memref<32xf32>
      %1 = arith.addf %0, %0 : f32
      memref.store %1, %arg0[%thread_id_x] : memref<32xf32>
      gpu.return
    }
  }
}

// -----

// cuda-to-nvvm without the index width on the module: refused, naming the pass that sets it.
// NOBITS: the module has no dynamo_mlir.index_bitwidth (cuda-index-bitwidth sets it)
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @main_kernel() kernel {
      gpu.return
    }
  }
}

// -----

// cuda-program: the module becomes a CudaProgram, printed as its device module (every kernel
// in one module for the NVPTX triple, no host function) and its host schedule as comments.
// PROGRAM: module attributes {llvm.target_triple = "nvptx64-nvidia-cuda"}
// PROGRAM-NEXT: llvm.func @main_kernel(%arg0: !llvm.ptr)
// PROGRAM-NOT: func.func
// PROGRAM: // host main(%0: 32xfloat32)
// PROGRAM-NEXT: //   launch main_kernel grid=(1, 1, 1) block=(32, 1, 1) (%0)
module attributes {dynamo_mlir.index_bitwidth = 32 : i64, gpu.container_module} {
  func.func @main(%arg0: memref<32xf32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func  @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)  args(%arg0 : memref<32xf32>)
    return
  }
  gpu.module @main_kernel {
    llvm.func @main_kernel(%arg0: !llvm.ptr) attributes {gpu.kernel, gpu.known_block_size = array<i32: 32, 1, 1>, gpu.known_grid_size = array<i32: 1, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
      %0 = nvvm.read.ptx.sreg.tid.x range <i32, 0, 32> : i32
      %1 = llvm.getelementptr inbounds|nuw %arg0[%0] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %2 = llvm.load %1 : !llvm.ptr -> f32
      %3 = llvm.fadd %2, %2 : f32
      llvm.store %3, %1 : f32, !llvm.ptr
      llvm.return
    }
  }
}

// -----

// cuda-fold-fills-into-library-ops: the zero fill of the matmul's buffer folds even with other
// ops between them (here a copy of another buffer), as long as none of them touches that
// buffer; a fill followed by a copy into its buffer before the matmul stays.
// FILLS: func.func @main
// FILLS-NEXT: arith.constant 0.000000e+00
// FILLS-NEXT: memref.copy %arg0, %arg3
// FILLS-NEXT: linalg.matmul {dynamo_mlir.overwrite} ins(%arg3, %arg1 : {{.*}}) outs(%arg2 : memref<8x32xf32>)
// FILLS-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg4 : memref<8x32xf32>)
// FILLS-NEXT: memref.copy %arg2, %arg4
// FILLS-NEXT: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%arg4 : memref<8x32xf32>)
func.func @main(%a: memref<8x16xf32>, %b: memref<16x32xf32>, %out: memref<8x32xf32>, %a2: memref<8x16xf32>, %acc: memref<8x32xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<8x32xf32>)
  memref.copy %a, %a2 : memref<8x16xf32> to memref<8x16xf32>
  linalg.matmul ins(%a2, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%out : memref<8x32xf32>)
  linalg.fill ins(%z : f32) outs(%acc : memref<8x32xf32>)
  memref.copy %out, %acc : memref<8x32xf32> to memref<8x32xf32>
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x32xf32>) outs(%acc : memref<8x32xf32>)
  return
}

// -----

// cuda-own-inits: two transposes of one shape share the empty CSE left them, and two matmuls
// the zero fill; each gets its own, cloned right before it, and the shared ones are erased.
// OWN: func.func @main
// OWN-NOT: tensor.empty
// OWN: %[[E1:[0-9]+]] = tensor.empty() : tensor<16x8xf32>
// OWN-NEXT: %[[T1:[a-z_0-9]+]] = linalg.transpose ins(%arg1 : tensor<8x16xf32>) outs(%[[E1]] : tensor<16x8xf32>)
// OWN-NEXT: %[[E2:[0-9]+]] = tensor.empty() : tensor<16x8xf32>
// OWN-NEXT: %[[T2:[a-z_0-9]+]] = linalg.transpose ins(%arg2 : tensor<8x16xf32>) outs(%[[E2]] : tensor<16x8xf32>)
// OWN-NEXT: %[[E3:[0-9]+]] = tensor.empty() : tensor<4x8xf32>
// OWN-NEXT: %[[F3:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E3]] : tensor<4x8xf32>)
// OWN-NEXT: linalg.matmul ins(%arg0, %[[T1]] : {{.*}}) outs(%[[F3]] : tensor<4x8xf32>)
// OWN-NEXT: %[[E4:[0-9]+]] = tensor.empty() : tensor<4x8xf32>
// OWN-NEXT: %[[F4:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E4]] : tensor<4x8xf32>)
// OWN-NEXT: linalg.matmul ins(%arg0, %[[T2]] : {{.*}}) outs(%[[F4]] : tensor<4x8xf32>)
func.func @main(%x: tensor<4x16xf32>, %wk: tensor<8x16xf32>, %wv: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %acc = tensor.empty() : tensor<4x8xf32>
  %zero = linalg.fill ins(%z : f32) outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %tk = linalg.transpose ins(%wk : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %tv = linalg.transpose ins(%wv : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %k = linalg.matmul ins(%x, %tk : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = linalg.matmul ins(%x, %tv : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %k, %v : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// cuda-fold-transposes-into-matmuls keeps a transpose whose input is written between it and
// the matmul: bufferization let the add write %g in place once the transpose had read it (as
// in an attention's backward), so a view of %g would show the matmul the new values.
// FOLDT: linalg.transpose ins(%arg0 : memref<16x8xf32>) outs(%[[T:alloc[_0-9]*]] : memref<8x16xf32>)
// FOLDT-NEXT: linalg.add ins(%arg0, %arg0 : {{.*}}) outs(%arg0 : memref<16x8xf32>)
// FOLDT-NEXT: linalg.matmul ins(%[[T]], %arg1 : {{.*}})
func.func @main(%g: memref<16x8xf32>, %b: memref<16x4xf32>, %out: memref<8x4xf32>) {
  %t = memref.alloc() : memref<8x16xf32>
  linalg.transpose ins(%g : memref<16x8xf32>) outs(%t : memref<8x16xf32>) permutation = [1, 0]
  linalg.add ins(%g, %g : memref<16x8xf32>, memref<16x8xf32>) outs(%g : memref<16x8xf32>)
  linalg.matmul ins(%t, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%out : memref<8x4xf32>)
  return
}

// -----
// cuda-widened-matmuls-on-half: a float32 matmul of two widened bf16 tensors reads the bf16 ones,
// its result float32 (cuBLAS's tensor-core kernels, the same sums); the cast still read
// elsewhere stays, the other goes. A matmul with one float32 operand is left as it is.
// WIDENED: %[[K:[0-9]+]] = "dynamo.cast"(%arg1)
// WIDENED-NEXT: "dynamo.matmul"(%arg0, %arg1) : (tensor<4x8x16xbf16>, tensor<4x16x8xbf16>) -> tensor<4x8x8xf32>
// WIDENED-NOT: "dynamo.cast"(%arg0)
// WIDENED: %[[W:[0-9]+]] = "dynamo.cast"(%arg3)
// WIDENED-NEXT: "dynamo.matmul"(%arg2, %[[W]]) : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
// WIDENED: return %{{[0-9]+}}, %{{[0-9]+}}, %[[K]]
func.func @main(%q: tensor<4x8x16xbf16>, %k: tensor<4x16x8xbf16>, %x: tensor<8x16xf32>, %w: tensor<16x4xbf16>) -> (tensor<4x8x8xf32>, tensor<8x4xf32>, tensor<4x16x8xf32>) {
  %qf = "dynamo.cast"(%q) : (tensor<4x8x16xbf16>) -> tensor<4x8x16xf32>
  %kf = "dynamo.cast"(%k) : (tensor<4x16x8xbf16>) -> tensor<4x16x8xf32>
  %s = "dynamo.matmul"(%qf, %kf) : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %wf = "dynamo.cast"(%w) : (tensor<16x4xbf16>) -> tensor<16x4xf32>
  %y = "dynamo.matmul"(%x, %wf) : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %s, %y, %kf : tensor<4x8x8xf32>, tensor<8x4xf32>, tensor<4x16x8xf32>
}

// -----
// The widening casts of a 4-d matmul are followed by reshapes and permutes (a bmm of reshaped
// operands): those are replayed on the bf16 tensors, and the matmul reads bf16 views.
// WIDENED: %[[Q:[0-9]+]] = "dynamo.reshape"(%arg0) {{.*}} : (tensor<2x4x8x16xbf16>) -> tensor<8x8x16xbf16>
// WIDENED-NEXT: %[[KT:[0-9]+]] = "dynamo.permute"(%arg1) {{.*}} : (tensor<2x4x16x8xbf16>) -> tensor<2x4x8x16xbf16>
// WIDENED-NEXT: %[[KR:[0-9]+]] = "dynamo.reshape"(%[[KT]]) {{.*}} -> tensor<8x8x16xbf16>
// WIDENED-NEXT: %[[K:[0-9]+]] = "dynamo.permute"(%[[KR]]) {{.*}} -> tensor<8x16x8xbf16>
// WIDENED-NEXT: "dynamo.matmul"(%[[Q]], %[[K]]) : (tensor<8x8x16xbf16>, tensor<8x16x8xbf16>) -> tensor<8x8x8xf32>
// WIDENED-NOT: xf32>) -> tensor<8x8x16xf32>
func.func @main(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x16x8xbf16>) -> tensor<8x8x8xf32> {
  %qf = "dynamo.cast"(%q) : (tensor<2x4x8x16xbf16>) -> tensor<2x4x8x16xf32>
  %kf = "dynamo.cast"(%k) : (tensor<2x4x16x8xbf16>) -> tensor<2x4x16x8xf32>
  %qr = "dynamo.reshape"(%qf) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %kt = "dynamo.permute"(%kf) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %kr = "dynamo.reshape"(%kt) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %kp = "dynamo.permute"(%kr) {perm = array<i64: 0, 2, 1>} : (tensor<8x8x16xf32>) -> tensor<8x16x8xf32>
  %s = "dynamo.matmul"(%qr, %kp) : (tensor<8x8x16xf32>, tensor<8x16x8xf32>) -> tensor<8x8x8xf32>
  return %s : tensor<8x8x8xf32>
}

// -----
// cuda-recompute-cheap-producers: a widened, shifted bf16 tensor read by a row sum and by a
// square is cloned for one of them (each then fuses its own copy: both read the bf16 input, and
// no float32 copy is written); a sum of two float32 tensors, wider to read than its result, and
// an exponential stay shared.
// RECOMPUTE: %[[S1:[0-9]+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<4xf32>)
// RECOMPUTE: %[[S2:[0-9]+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<4xf32>)
// RECOMPUTE: linalg.generic {{.*}} ins(%[[S2]] : tensor<4x8xf32>) outs(%{{[0-9]+}} : tensor<4xf32>)
// RECOMPUTE: linalg.generic {{.*}} ins(%[[S1]] : tensor<4x8xf32>) outs(%{{[0-9]+}} : tensor<4x8xf32>)
// RECOMPUTE: %[[P:[0-9]+]] = linalg.generic {{.*}} ins(%arg2, %arg3 : tensor<4x8xf32>, tensor<4x8xf32>)
// RECOMPUTE-NOT: ins(%arg2, %arg3
// RECOMPUTE: %[[E:[0-9]+]] = linalg.generic {{.*}} ins(%[[P]] : tensor<4x8xf32>)
// RECOMPUTE-NEXT: ^bb0
// RECOMPUTE-NEXT: math.exp
// RECOMPUTE-NOT: math.exp
// RECOMPUTE: return
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<4x8xbf16>, %m: tensor<4xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<4x8xbf16>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %d = arith.subf %w, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %r0 = tensor.empty() : tensor<4xf32>
  %r = linalg.fill ins(%zero : f32) outs(%r0 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%s : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %z : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%ex : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %sum, %sq, %p, %ex, %u : tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----
// cuda-fuse-recomputed-producers: each copy of a recomputed producer fuses into its one
// consumer, a row sum and a square, which then read the bf16 input themselves.
// FUSEREC: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<4xf32>)
// FUSEREC: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<4x8xbf16>, tensor<4xf32>)
// FUSEREC-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<4x8xbf16>, %m: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %s1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<4x8xbf16>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %d = arith.subf %w, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %r0 = tensor.empty() : tensor<4xf32>
  %r = linalg.fill ins(%zero : f32) outs(%r0 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%s1 : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %s2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<4x8xbf16>, tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %b: f32, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %d = arith.subf %w, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s2 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %sum, %sq : tensor<4xf32>, tensor<4x8xf32>
}

// -----

// cuda-write-inputs-in-place: an SGD step with momentum, whose results 1 and 2 are the new values
// of the momentum buffer (argument 0) and of the parameter (argument 2). Both are materialized in
// their arguments, made writable, so each generic writes its argument (its init after
// empty-tensor elimination) and the parameter's reads the buffer's new value; the function lists
// both arguments as written (the host schedule marks their slots, cuda-program below).
// INPLACE: func.func @main(%arg0: tensor<1000xf32> {bufferization.writable = true}, %arg1: tensor<1000xf32> {bufferization.writable = false}, %arg2: tensor<1000xf32> {bufferization.writable = true}) -> tensor<f32> attributes {dynamo_mlir.written_arguments = array<i64: 0, 2>}
// INPLACE: %[[BUF:[0-9]+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%arg0 : tensor<1000xf32>)
// INPLACE: %[[P:[0-9]+]] = linalg.generic {{.*}} ins(%arg2, %[[BUF]] : {{.*}}) outs(%arg2 : tensor<1000xf32>)
// INPLACE: bufferization.materialize_in_destination %[[BUF]] in %arg0
// INPLACE-NEXT: bufferization.materialize_in_destination %[[P]] in %arg2
// INPLACE-NEXT: return %{{[0-9]+}} : tensor<f32>
// INPLACE-NOT: written_inputs
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
func.func @main(%buf: tensor<1000xf32> {bufferization.writable = false}, %g: tensor<1000xf32> {bufferization.writable = false}, %p: tensor<1000xf32> {bufferization.writable = false}) -> (tensor<f32>, tensor<1000xf32>, tensor<1000xf32>) attributes {dynamo_mlir.written_inputs = [[1, 0], [2, 2]]} {
  %lr = arith.constant -1.000000e-01 : f32
  %momentum = arith.constant 0.899999976 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1000xf32>
  %new_buf = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%buf, %g : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%b: f32, %d: f32, %o: f32):
    %0 = arith.mulf %b, %momentum : f32
    %1 = arith.addf %0, %d : f32
    linalg.yield %1 : f32
  } -> tensor<1000xf32>
  %new_p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %new_buf : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %b, %lr : f32
    %1 = arith.addf %a, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1000xf32>
  %s0 = tensor.empty() : tensor<f32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%g : tensor<1000xf32>) outs(%s1 : tensor<f32>) {
  ^bb0(%d: f32, %acc: f32):
    %0 = arith.addf %d, %acc : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  return %sum, %new_buf, %new_p : tensor<f32>, tensor<1000xf32>, tensor<1000xf32>
}

// -----

// cuda-write-inputs-in-place: an AdamW step count. `step + 1` is computed first in the graph,
// but the parameter's update reads the old count (and adds one itself): the count's generic
// moves below that reader and writes the argument in place, where above it bufferization would
// stage the new count in a buffer of its own and copy it in at the end.
// INPLACE: func.func @main(%arg0: tensor<f32> {bufferization.writable = true}, %arg1: tensor<1000xf32> {bufferization.writable = true})
// INPLACE: %[[P:[0-9]+]] = linalg.generic {{.*}} ins(%arg1, %arg0 : tensor<1000xf32>, tensor<f32>) outs(%arg1 : tensor<1000xf32>)
// INPLACE: %[[S:[0-9]+]] = linalg.generic {{.*}} ins(%arg0 : tensor<f32>) outs(%arg0 : tensor<f32>)
// INPLACE-NOT: alloc_tensor
// INPLACE: bufferization.materialize_in_destination %[[S]] in %arg0
// INPLACE-NEXT: bufferization.materialize_in_destination %[[P]] in %arg1
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#none = affine_map<() -> ()>
func.func @main(%step: tensor<f32> {bufferization.writable = false}, %p: tensor<1000xf32> {bufferization.writable = false}) -> (tensor<f32>, tensor<1000xf32>) attributes {dynamo_mlir.written_inputs = [[0, 0], [1, 1]]} {
  %one = arith.constant 1.000000e+00 : f32
  %lr = arith.constant 1.000000e-03 : f32
  %s0 = tensor.empty() : tensor<f32>
  %new_step = linalg.generic {indexing_maps = [#none, #none], iterator_types = []} ins(%step : tensor<f32>) outs(%s0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.addf %a, %one : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<1000xf32>
  %new_p = linalg.generic {indexing_maps = [#id, #all, #id], iterator_types = ["parallel"]} ins(%p, %step : tensor<1000xf32>, tensor<f32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %0 = arith.addf %t, %one : f32
    %1 = arith.mulf %0, %lr : f32
    %2 = arith.subf %a, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<1000xf32>
  return %new_step, %new_p : tensor<f32>, tensor<1000xf32>
}

// -----

// cuda-write-inputs-in-place: two step counts incremented by one generic (cuda-fuse-horizontally
// merged them) and read, old, by an update: the generic moves below the update and writes both
// counts in place.
// INPLACE: func.func @main(%arg0: tensor<f32> {bufferization.writable = true}, %arg1: tensor<f32> {bufferization.writable = true}, %arg2: tensor<1000xf32> {bufferization.writable = true})
// INPLACE: %[[P:[0-9]+]] = linalg.generic {{.*}} ins(%arg2, %arg0, %arg1 : tensor<1000xf32>, tensor<f32>, tensor<f32>) outs(%arg2 : tensor<1000xf32>)
// INPLACE: %[[S:[0-9]+]]:2 = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<f32>, tensor<f32>) outs(%arg0, %arg1 : tensor<f32>, tensor<f32>)
// INPLACE-NOT: alloc_tensor
// INPLACE: bufferization.materialize_in_destination %[[S]]#0 in %arg0
// INPLACE-NEXT: bufferization.materialize_in_destination %[[S]]#1 in %arg1
// INPLACE-NEXT: bufferization.materialize_in_destination %[[P]] in %arg2
#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>
#none = affine_map<() -> ()>
func.func @main(%s: tensor<f32> {bufferization.writable = false}, %t: tensor<f32> {bufferization.writable = false}, %p: tensor<1000xf32> {bufferization.writable = false}) -> (tensor<f32>, tensor<f32>, tensor<1000xf32>) attributes {dynamo_mlir.written_inputs = [[0, 0], [1, 1], [2, 2]]} {
  %one = arith.constant 1.000000e+00 : f32
  %s0 = tensor.empty() : tensor<f32>
  %steps:2 = linalg.generic {indexing_maps = [#none, #none, #none, #none], iterator_types = []} ins(%s, %t : tensor<f32>, tensor<f32>) outs(%s0, %s0 : tensor<f32>, tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32, %o2: f32):
    %0 = arith.addf %a, %one : f32
    %1 = arith.addf %b, %one : f32
    linalg.yield %0, %1 : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  %e = tensor.empty() : tensor<1000xf32>
  %new_p = linalg.generic {indexing_maps = [#id, #all, #all, #id], iterator_types = ["parallel"]} ins(%p, %s, %t : tensor<1000xf32>, tensor<f32>, tensor<f32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %x: f32, %y: f32, %o: f32):
    %0 = arith.addf %x, %y : f32
    %1 = arith.subf %a, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<1000xf32>
  return %steps#0, %steps#1, %new_p : tensor<f32>, tensor<f32>, tensor<1000xf32>
}

// -----

// cuda-program: a function that writes an argument (cuda-write-inputs-in-place listed it) has
// that slot marked written in its host schedule: the runtime copies it back to the caller's
// tensor where it handed the kernels a copy (a misaligned input, a CUDA graph's input buffer).
// PROGRAM: // host main(%0: 32xfloat32 written, %1: 32xfloat32)
// PROGRAM-NEXT: //   launch main_kernel grid=(1, 1, 1) block=(32, 1, 1) (%0, %1)
module attributes {dynamo_mlir.index_bitwidth = 32 : i64, gpu.container_module} {
  func.func @main(%arg0: memref<32xf32>, %arg1: memref<32xf32>) attributes {dynamo_mlir.written_arguments = array<i64: 0>} {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func  @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)  args(%arg0 : memref<32xf32>, %arg1 : memref<32xf32>)
    return
  }
  gpu.module @main_kernel {
    llvm.func @main_kernel(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {gpu.kernel, gpu.known_block_size = array<i32: 32, 1, 1>, gpu.known_grid_size = array<i32: 1, 1, 1>, nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>} {
      %0 = nvvm.read.ptx.sreg.tid.x range <i32, 0, 32> : i32
      %1 = llvm.getelementptr inbounds|nuw %arg0[%0] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %2 = llvm.getelementptr inbounds|nuw %arg1[%0] : (!llvm.ptr, i32) -> !llvm.ptr, f32
      %3 = llvm.load %1 : !llvm.ptr -> f32
      %4 = llvm.load %2 : !llvm.ptr -> f32
      %5 = llvm.fadd %3, %4 : f32
      llvm.store %5, %1 : f32, !llvm.ptr
      llvm.return
    }
  }
}

// -----

// cuda-merge-identical-kernels: two layers' identical kernels (same code, same buffer types) are
// one gpu.module, both launches call it with their own buffers; a kernel over other sizes stays.
// MERGE: gpu.launch_func  @main_kernel::@main_kernel {{.*}} args(%arg0 : memref<32xf32>)
// MERGE-NEXT: gpu.launch_func  @main_kernel::@main_kernel {{.*}} args(%arg1 : memref<32xf32>)
// MERGE-NEXT: gpu.launch_func  @main_kernel_1::@main_kernel {{.*}} args(%arg2 : memref<64xf32>)
// MERGE: gpu.module @main_kernel {
// MERGE-NOT: gpu.module @main_kernel_0
// MERGE: gpu.module @main_kernel_1 {
module attributes {gpu.container_module} {
  func.func @main(%arg0: memref<32xf32>, %arg1: memref<32xf32>, %arg2: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func  @main_kernel::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)  args(%arg0 : memref<32xf32>)
    gpu.launch_func  @main_kernel_0::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)  args(%arg1 : memref<32xf32>)
    gpu.launch_func  @main_kernel_1::@main_kernel blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)  args(%arg2 : memref<64xf32>)
    return
  }
  gpu.module @main_kernel {
    gpu.func @main_kernel(%arg0: memref<32xf32>) kernel {
      %thread_id_x = gpu.thread_id x
      %0 = memref.load %arg0[%thread_id_x] : memref<32xf32>
      %1 = arith.addf %0, %0 : f32
      memref.store %1, %arg0[%thread_id_x] : memref<32xf32>
      gpu.return
    }
  }
  gpu.module @main_kernel_0 {
    gpu.func @main_kernel(%arg0: memref<32xf32>) kernel {
      %thread_id_x = gpu.thread_id x
      %0 = memref.load %arg0[%thread_id_x] : memref<32xf32>
      %1 = arith.addf %0, %0 : f32
      memref.store %1, %arg0[%thread_id_x] : memref<32xf32>
      gpu.return
    }
  }
  gpu.module @main_kernel_1 {
    gpu.func @main_kernel(%arg0: memref<64xf32>) kernel {
      %thread_id_x = gpu.thread_id x
      %0 = memref.load %arg0[%thread_id_x] : memref<64xf32>
      %1 = arith.addf %0, %0 : f32
      memref.store %1, %arg0[%thread_id_x] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// cuda-kernels on an op of symbolic size (codegen/gpu/tiled.py, kernel_abi.py): tiled by the
// transform interpreter, a row's 256 elements one block of 256 threads (rows below
// row_groups.LONG_ROW), one element a thread
// (adjacent threads, adjacent elements), the grid the row count read in the host; the ?-sized
// buffers reach the kernel as a one-element memref (a bare pointer) and their dynamic size, the
// view rebuilt inside; the static bias stays as it is.
// TILED: %[[ROWS:dim[_0-9]*]] = memref.dim %arg0, %c0 : memref<?x256xf32>
// TILED: %{{.*}}, %{{.*}}, %[[SIZES:sizes[_0-9]*]]:2, %{{.*}}:2 = memref.extract_strided_metadata %arg0
// TILED-NEXT: %[[PTR:reinterpret_cast[_0-9]*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [1], strides: [1] : memref<f32> to memref<1xf32>
// TILED: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ROWS]], {{.*}} = %c1, {{.*}} = %c1) threads(%[[TX:arg[0-9]+]], {{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// TILED: memref.reinterpret_cast %[[PTR]] to offset: [0], sizes: [%[[SIZES]]#0, 256], strides: [256, 1] : memref<1xf32> to memref<?x256xf32>
// TILED: memref.subview %{{.*}}[0, %[[TX]]] [1, 1] [1, 1]
// TILED-NOT: scf.for
// TILED: math.exp
// TILED-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%a: memref<?x256xf32>, %b: memref<256xf32>, %out: memref<?x256xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<?x256xf32>, memref<256xf32>) outs(%out : memref<?x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// cuda-kernels on an elementwise op over long static rows of symbolic count
// (codegen/gpu/row_groups.py, over_long_rows): one block per row of 768, the grid the row count;
// each thread takes four elements 256 apart per trip (a loop of step 1024 from its thread index),
// a lane past the row's end taking the trip's first element (the thread's own) and its store skipped.
// LONGROWS: %[[ROWS:dim[_0-9]*]] = memref.dim %arg0, %c0 : memref<?x768xf32>
// LONGROWS: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ROWS]], {{.*}} = %c1, {{.*}} = %c1) threads(%[[TX:arg[0-9]+]], {{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
// LONGROWS: scf.for %{{.*}} = %[[TX]] to %c768 step %c1024
// LONGROWS: arith.select
// LONGROWS: math.exp
// LONGROWS: math.exp
// LONGROWS: math.exp
// LONGROWS: math.exp
// LONGROWS: scf.if
// LONGROWS-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%a: memref<?x768xf32>, %b: memref<768xf32>, %out: memref<?x768xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<?x768xf32>, memref<768xf32>) outs(%out : memref<?x768xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  return
}

// -----
// cuda-read-scalars-directly: a mean over a row of symbolic length divides by the length made a
// float, packed into a 0-d tensor; the body reads the scalar itself (the packed input is left
// unread), and cuda-erase-unread-inputs then drops the input: the kernel takes the count as an
// argument, not a one-element buffer.
// SCALARS: %[[N:.*]] = arith.sitofp
// SCALARS: linalg.generic {{.*}} ins(%arg0, %from_elements : tensor<?x?xf32>, tensor<f32>)
// SCALARS: arith.divf %in, %[[N]] : f32
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d1 = tensor.dim %x, %c1 : tensor<?x?xf32>
  %i = arith.index_cast %d1 : index to i64
  %n = arith.sitofp %i : i64 to f32
  %packed = tensor.from_elements %n : tensor<f32>
  %d0 = tensor.dim %x, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %packed : tensor<?x?xf32>, tensor<f32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %s : f32
    linalg.yield %q : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----
// cuda-erase-unread-inputs: what cuda-read-scalars-directly leaves, the packed input unread,
// loses that input (and the packing, now unused).
// UNREAD: linalg.generic {{.*}} ins(%arg0 : tensor<?x?xf32>)
// UNREAD-NOT: from_elements
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d1 = tensor.dim %x, %c1 : tensor<?x?xf32>
  %i = arith.index_cast %d1 : index to i64
  %n = arith.sitofp %i : i64 to f32
  %packed = tensor.from_elements %n : tensor<f32>
  %d0 = tensor.dim %x, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %packed : tensor<?x?xf32>, tensor<f32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %q = arith.divf %a, %n : f32
    linalg.yield %q : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----
// cuda-expand-reshapes-of-slices: a slice of symbolic length reshaped to heads (its last dim
// split in two) becomes an expand_shape, a view; a reshape that merges dims stays a reshape.
// EXPAND: %[[S:.*]] = tensor.extract_slice
// EXPAND: tensor.expand_shape %[[S]] {{\[}}[0], [1], [2, 3]] output_shape [2, %{{.*}}, 4, 16] : tensor<2x?x64xf32> into tensor<2x?x4x16xf32>
// EXPAND: tensor.reshape %[[S]]
func.func @main(%p: tensor<2x?x192xf32>, %n: index) -> (tensor<2x?x4x16xf32>, tensor<?x64xf32>) {
  %c1 = arith.constant 1 : index
  %len = tensor.dim %p, %c1 : tensor<2x?x192xf32>
  %s = tensor.extract_slice %p[0, 0, 64] [2, %len, 64] [1, 1, 1] : tensor<2x?x192xf32> to tensor<2x?x64xf32>
  %c2 = arith.constant 2 : i64
  %c4 = arith.constant 4 : i64
  %c16 = arith.constant 16 : i64
  %c64 = arith.constant 64 : i64
  %ni = arith.index_cast %n : index to i64
  %heads = tensor.from_elements %c2, %ni, %c4, %c16 : tensor<4xi64>
  %h = tensor.reshape %s(%heads) : (tensor<2x?x64xf32>, tensor<4xi64>) -> tensor<2x?x4x16xf32>
  %rows = arith.muli %ni, %c2 : i64
  %flat = tensor.from_elements %rows, %c64 : tensor<2xi64>
  %f = tensor.reshape %s(%flat) : (tensor<2x?x64xf32>, tensor<2xi64>) -> tensor<?x64xf32>
  return %h, %f : tensor<2x?x4x16xf32>, tensor<?x64xf32>
}

// -----
// cuda-extern-dynamic-shared: the zero-length shared array upstream declares for
// gpu.dynamic_shared_memory (internal, which NVPTX would demote to one byte of the kernel's static
// shared memory) becomes an external declaration: the launch's dynamic shared memory. A sized one
// (gpu.all_reduce's partials) stays as it is.
// EXTERN: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// EXTERN: llvm.mlir.global internal @__wg_main_kernel_0() {addr_space = 3 : i32} : !llvm.array<32 x f32>
module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.mlir.global internal @__wg_main_kernel_0() {addr_space = 3 : i32} : !llvm.array<32 x f32>
    llvm.func @main_kernel() attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----
// cuda-compute-gathered-elements: a log_softmax's result (bf16 logits widened, minus the row's
// max and log-sum) read only by the gather of each row's target is computed at that element
// inside the gather: the logits and the two row statistics are extracted there, and the
// [4, 8] float32 tensor is not built. A producer something else reads in full stays.
// GATHERED: func.func @gathered
// GATHERED-NOT: outs(%{{.*}} : tensor<4x8xf32>)
// GATHERED: ^bb0(%{{.*}}: i64, %{{.*}}: f32):
// GATHERED: %[[ROW:[0-9]+]] = linalg.index 0 : index
// GATHERED: %[[COL:[0-9]+]] = arith.index_cast
// GATHERED: %[[X:.*]] = tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<4x8xbf16>
// GATHERED: %[[M:.*]] = tensor.extract %arg1[%[[ROW]], %{{.*}}] : tensor<4x1xf32>
// GATHERED: %[[L:.*]] = tensor.extract %arg2[%[[ROW]], %{{.*}}] : tensor<4x1xf32>
// GATHERED: %[[W:[0-9]+]] = arith.extf %[[X]] : bf16 to f32
// GATHERED: %[[D:[0-9]+]] = arith.subf %[[W]], %[[M]] : f32
// GATHERED: %[[R:[0-9]+]] = arith.subf %[[D]], %[[L]] : f32
// GATHERED: linalg.yield %[[R]] : f32
// GATHERED: func.func @read_in_full
// GATHERED: %[[P:[0-9]+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// GATHERED: tensor.extract %[[P]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bcast = affine_map<(d0, d1) -> (d0, 0)>
#rows = affine_map<(d0) -> (d0)>
func.func @gathered(%x: tensor<4x8xbf16>, %m: tensor<4x1xf32>, %l: tensor<4x1xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %logp = linalg.generic {indexing_maps = [#id2, #bcast, #bcast, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %l : tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %b: f32, %c: f32, %o: f32):
    %w = arith.extf %a : bf16 to f32
    %d = arith.subf %w, %b : f32
    %r = arith.subf %d, %c : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %g0 = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%g0 : tensor<4xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = linalg.index 0 : index
    %col = arith.index_cast %i : i64 to index
    %v = tensor.extract %logp[%row, %col] : tensor<4x8xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func @read_in_full(%x: tensor<4x8xbf16>, %t: tensor<4xi64>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %w = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %y = arith.extf %a : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %g0 = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%g0 : tensor<4xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = linalg.index 0 : index
    %col = arith.index_cast %i : i64 to index
    %v = tensor.extract %w[%row, %col] : tensor<4x8xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %g, %w : tensor<4xf32>, tensor<4x8xf32>
}
