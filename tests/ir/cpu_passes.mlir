// RUN: dynamo-mlir pass cpu-unshare-zero-fills %s | check --prefix UNSHARE
// RUN: dynamo-mlir pass cpu-write-inputs-in-place %s | check --prefix INPLACE
// RUN: dynamo-mlir pass cpu-call-blas %s | check --prefix BLAS
// RUN: dynamo-mlir pass cpu-distinct-results %s | check --prefix DISTINCT
// RUN: dynamo-mlir pass cuda-distinct-results %s --target cuda | check --prefix DISTINCT
// RUN: dynamo-mlir pass cpu-clone-shared-broadcasts %s | check --prefix CLONE
// RUN: dynamo-mlir pass cpu-fold-transposes %s | check --prefix FOLDT
// RUN: dynamo-mlir pass cpu-fold-bias %s | check --prefix BIAS
// RUN: dynamo-mlir pass cpu-bufferize %s | check --prefix BUF
// RUN: dynamo-mlir pass cuda-bufferize %s --target cuda | check --prefix BUF
// RUN: dynamo-mlir pass cpu-read-only-arguments %s | check --prefix RO
// RUN: dynamo-mlir pass cuda-read-only-arguments %s --target cuda | check --prefix RO
// RUN: dynamo-mlir pass cpu-prebufferize-cleanup %s | check --prefix PRECLEAN
// RUN: dynamo-mlir pass cuda-prebufferize-cleanup %s --target cuda | check --prefix PRECLEAN
// RUN: dynamo-mlir pass cpu-bf16-as-bits %s | check --prefix BITS
// RUN: dynamo-mlir pass cpu-contractions-in-float32 %s | check --prefix WIDEN
// RUN: dynamo-mlir pass cpu-expand-conv-grads %s | check --prefix GRADS
// RUN: dynamo-mlir pass cpu-collapse-narrow-elementwise %s | check --prefix NARROW
// RUN: dynamo-mlir pass cpu-hoist-invariant-scalars %s | check --prefix HOIST

// Named passes of the cpu target run alone (`dynamo-mlir passes` lists them). Two gemms share
// one zero fill after CSE: cpu-unshare-zero-fills gives each its own fill right before it, what
// cpu-call-blas folds into beta = 0.
// UNSHARE: %[[F1:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{[0-9]+}} : tensor<4x3xf32>)
// UNSHARE-NEXT: linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[F1]] : tensor<4x3xf32>)
// UNSHARE-NEXT: tensor.empty() : tensor<4x3xf32>
// UNSHARE-NEXT: %[[F2:[0-9]+]] = linalg.fill ins(%{{.*}} : f32) outs(%{{[0-9]+}} : tensor<4x3xf32>)
// UNSHARE-NEXT: linalg.matmul ins(%arg2, %arg3 : {{.*}}) outs(%[[F2]] : tensor<4x3xf32>)
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %c: tensor<4x8xf32>, %d: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = linalg.matmul ins(%c, %d : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// cpu-call-blas on bufferized IR: a zero fill right before a matmul of buffers becomes one
// sgemm_ call with beta = 0 (the fill folded), the matmul gone.
// BLAS: func.func @main
// BLAS-NOT: linalg.fill
// BLAS-NOT: linalg.matmul
// BLAS: call @sgemm_
// BLAS-NOT: linalg.matmul
// BLAS: func.func private @sgemm_
func.func @main(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %out: memref<4x3xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%out : memref<4x3xf32>)
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%out : memref<4x3xf32>)
  return
}

// -----

// cpu-distinct-results: a value returned twice gets a copy of its own (buffer-results-to-out-params
// would crash the process on the repeat).
// DISTINCT: %[[E:[0-9]+]] = math.exp %arg0
// DISTINCT-NEXT: %[[C:[0-9]+]] = bufferization.alloc_tensor() copy(%[[E]])
// DISTINCT-NEXT: return %[[E]], %[[C]]
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = math.exp %a : tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// cpu-clone-shared-broadcasts: a scalar broadcast CSE made one value for two elementwise users
// is cloned per user, so elementwise fusion folds each copy into its loop (a constant) instead
// of writing a 4x8 buffer of 0.5 that both read.
// CLONE: %[[B1:[0-9]+]] = linalg.generic {{.*}} ins(%[[CST:cst[_0-9]*]] : tensor<f32>)
// CLONE: %[[B2:[0-9]+]] = linalg.generic {{.*}} ins(%[[CST]] : tensor<f32>)
// CLONE: ins(%arg0, %[[B2]] : tensor<4x8xf32>, tensor<4x8xf32>)
// CLONE: ins(%arg1, %[[B1]] : tensor<4x8xf32>, tensor<4x8xf32>)
#bcast = affine_map<(d0, d1) -> ()>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %cst = arith.constant dense<5.000000e-01> : tensor<f32>
  %0 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : tensor<f32>) outs(%0 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%arg0, %1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %4 = arith.mulf %in, %in_0 : f32
    linalg.yield %4 : f32
  } -> tensor<4x8xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%arg1, %1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %4 = arith.addf %in, %in_0 : f32
    linalg.yield %4 : f32
  } -> tensor<4x8xf32>
  return %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// cpu-fold-transposes: a linear's weight transpose feeding only a matmul becomes the matmul's
// transposed map (BLAS reads the weight as it is, 'T'); the transpose is left dead for cleanup.
// FOLDT-DAG: #[[A:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// FOLDT-DAG: #[[B:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// FOLDT-DAG: #[[C:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// FOLDT: linalg.matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<32x16xf32>)
func.func @main(%a: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<16x32xf32>
  %t = linalg.transpose ins(%w : tensor<32x16xf32>) outs(%e : tensor<16x32xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e2 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %0 = linalg.matmul ins(%a, %t : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// cpu-fold-bias: a linear's bias (broadcast to the matmul's shape) becomes the gemm's
// accumulator (beta = 1 in the BLAS call later), and the add after the matmul is gone.
// BIAS: %[[B:[0-9]+]] = linalg.generic {{.*}} ins(%arg2 : tensor<32xf32>)
// BIAS: %[[M:[0-9]+]] = linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%[[B]] : tensor<8x32xf32>)
// BIAS-NOT: arith.addf
// BIAS: return %[[M]]
#row = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %e0 = tensor.empty() : tensor<8x32xf32>
  %bb = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<32xf32>) outs(%e0 : tensor<8x32xf32>) {
  ^bb0(%y: f32, %o: f32):
    linalg.yield %y : f32
  } -> tensor<8x32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %bb : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// cpu-bufferize (and cuda-bufferize, the same): a result as an out-param (%arg2), and the caller's tensor %a,
// not writable (cpu-read-only-arguments marked it), never written: the op that would accumulate
// into it in place writes a copy instead (issue 22's addmm).
// BUF: func.func @main(%arg0: memref<8xf32>, %arg1: memref<8xf32>, %arg2: memref<8xf32>)
// BUF-NEXT: memref.copy %arg0, %arg2
// BUF-NEXT: linalg.generic {{.*}} ins(%arg1 : memref<8xf32>) outs(%arg2 : memref<8xf32>)
#id1 = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<8xf32> {bufferization.writable = false}, %b: tensor<8xf32> {bufferization.writable = false}) -> tensor<8xf32> {
  %0 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%b : tensor<8xf32>) outs(%a : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// cpu-bf16-as-bits: a bf16 that is only moved (loaded, stored) moves as i16 bits, so no bfloat
// value reaches LLVM; widening it to f32 is the bits shifted into the high half.
// BITS: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr)
// BITS-NOT: bf16
// BITS: llvm.load %arg0 : !llvm.ptr -> i16
// BITS: llvm.shl
// BITS: llvm.bitcast %{{.*}} : i32 to f32
// BITS-NOT: bf16
llvm.func @main(%a: !llvm.ptr, %out: !llvm.ptr, %wide: !llvm.ptr) {
  %x = llvm.load %a : !llvm.ptr -> bf16
  llvm.store %x, %out : bf16, !llvm.ptr
  %f = llvm.fpext %x : bf16 to f32
  llvm.store %f, %wide : f32, !llvm.ptr
  llvm.return
}

// -----

// cpu-read-only-arguments (cuda-read-only-arguments, the same): every tensor argument of a
// function with a body is marked not writable, so bufferization never writes the caller's tensor.
// RO: func.func @main(%arg0: tensor<8xf32> {bufferization.writable = false}, %arg1: tensor<8xf32> {bufferization.writable = false}) -> tensor<8xf32>
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = arith.addf %a, %b : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// cpu-prebufferize-cleanup (cuda-prebufferize-cleanup, the same): a canonicalize before
// bufferizing; here an integer add of zero folds away.
// PRECLEAN: func.func @main(%arg0: tensor<8xi32>) -> tensor<8xi32>
// PRECLEAN-NEXT: return %arg0 : tensor<8xi32>
func.func @main(%a: tensor<8xi32>) -> tensor<8xi32> {
  %z = arith.constant dense<0> : tensor<8xi32>
  %0 = arith.addi %a, %z : tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// cpu-contractions-in-float32: a bf16 matmul and an f16 convolution computed on float32 copies
// of their operands. The matmul's reader that widens it back (a bias add's operand) reads the
// float32 sums directly (one rounding, at the end of the chain); the convolution's reader takes
// the result rounded to f16, as the op's semantics say.
// WIDEN: %[[A:[0-9]+]] = "dynamo.cast"(%arg0) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// WIDEN-NEXT: %[[B:[0-9]+]] = "dynamo.cast"(%arg1) : (tensor<8x3xbf16>) -> tensor<8x3xf32>
// WIDEN-NEXT: %[[M:[0-9]+]] = "dynamo.matmul"(%[[A]], %[[B]]) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// WIDEN-NOT: "dynamo.cast"(%[[M]])
// WIDEN: "dynamo.add"(%[[M]], %arg2)
// WIDEN: %[[C:[0-9]+]] = "dynamo.conv2d"(%{{[0-9]+}}, %{{[0-9]+}}) {{.*}} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
// WIDEN-NEXT: %[[R:[0-9]+]] = "dynamo.cast"(%[[C]]) : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf16>
// WIDEN: return %{{[0-9]+}}, %[[R]]
func.func @main(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>, %bias: tensor<4x3xf32>, %x: tensor<1x2x5x5xf16>, %w: tensor<3x2x3x3xf16>) -> (tensor<4x3xbf16>, tensor<1x3x3x3xf16>) {
  %m = "dynamo.matmul"(%a, %b) : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
  %wide = "dynamo.cast"(%m) : (tensor<4x3xbf16>) -> tensor<4x3xf32>
  %sum = "dynamo.add"(%wide, %bias) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = "dynamo.cast"(%sum) : (tensor<4x3xf32>) -> tensor<4x3xbf16>
  %c = "dynamo.conv2d"(%x, %w) {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16>) -> tensor<1x3x3x3xf16>
  return %y, %c : tensor<4x3xbf16>, tensor<1x3x3x3xf16>
}

// -----
// cpu-expand-conv-grads: the gradients become the dynamo.conv2d of their generic rule (torch's
// forward kernel then runs them, library_conv.py); every other dynamo op stays for the lowering.
// GRADS: tensor.insert_slice %arg0 into %{{[0-9]+}}[0, 0, 1, 1] [2, 8, 5, 5] [1, 1, 2, 2]
// GRADS: "dynamo.conv2d"(%inserted_slice{{[_0-9]*}}, %{{[0-9]+}}) {{.*}} -> tensor<2x4x10x10xbf16>
// GRADS: "dynamo.conv2d"(%transposed{{[_0-9]*}}, %transposed{{[_0-9]*}}) {{.*}}dilation = array<i64: 2, 2>{{.*}} -> tensor<4x8x4x4xbf16>
// GRADS: "dynamo.relu"
// GRADS-NOT: conv_grad
func.func @main(%g: tensor<2x8x5x5xbf16>, %w: tensor<8x4x3x3xbf16>, %x: tensor<2x4x10x10xbf16>) -> (tensor<2x4x10x10xbf16>, tensor<8x4x3x3xbf16>) {
  %dx = "dynamo.conv_grad_input"(%g, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xbf16>, tensor<8x4x3x3xbf16>) -> tensor<2x4x10x10xbf16>
  %dw = "dynamo.conv_grad_weight"(%g, %x) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x8x5x5xbf16>, tensor<2x4x10x10xbf16>) -> tensor<8x4x3x3xbf16>
  %r = "dynamo.relu"(%dx) : (tensor<2x4x10x10xbf16>) -> tensor<2x4x10x10xbf16>
  return %r, %dw : tensor<2x4x10x10xbf16>, tensor<8x4x3x3xbf16>
}

// -----
// A half matmul with a float32 result (the float32 sums unrounded, dialects/matmul.py): the cpu
// computes it on float32 copies, and its readers read that float32 result, with no rounding.
// WIDEN: %[[A:[0-9]+]] = "dynamo.cast"(%arg0) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// WIDEN-NEXT: %[[B:[0-9]+]] = "dynamo.cast"(%arg1) : (tensor<8x3xbf16>) -> tensor<8x3xf32>
// WIDEN-NEXT: %[[M:[0-9]+]] = "dynamo.matmul"(%[[A]], %[[B]]) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// WIDEN-NEXT: "dynamo.exp"(%[[M]])
func.func @main(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>) -> tensor<4x3xf32> {
  %m = "dynamo.matmul"(%a, %b) : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xf32>
  %e = "dynamo.exp"(%m) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %e : tensor<4x3xf32>
}

// -----
// cpu-write-inputs-in-place: result 1 is input 0's new value (an optimizer's parameter): it is
// returned no more but materialized in argument 0, now writable, and empty-tensor elimination
// makes the subtraction write that argument (its init); the other result stays. The function
// lists argument 0 as written, which outlives bufferization.
// INPLACE: func.func @main(%arg0: tensor<8xf32> {bufferization.writable = true}, %arg1: tensor<8xf32> {bufferization.writable = false}) -> tensor<8xf32> attributes {dynamo_mlir.written_arguments = array<i64: 0>} {
// INPLACE: %[[NEW:[0-9]+]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<8xf32>, tensor<8xf32>) outs(%arg0 : tensor<8xf32>)
// INPLACE: bufferization.materialize_in_destination %[[NEW]] in %arg0
// INPLACE-NEXT: return %{{[0-9]+}} : tensor<8xf32>
// INPLACE-NOT: written_inputs
#id = affine_map<(d0) -> (d0)>
func.func @main(%p: tensor<8xf32> {bufferization.writable = false}, %g: tensor<8xf32> {bufferization.writable = false}) -> (tensor<8xf32>, tensor<8xf32>) attributes {dynamo_mlir.written_inputs = [[1, 0]]} {
  %e = tensor.empty() : tensor<8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%g : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%p, %g : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.subf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %sq, %new : tensor<8xf32>, tensor<8xf32>
}

// -----
// cpu-write-inputs-in-place: a result that is the written argument itself (a 0-d input's mean,
// returned beside its in-place square: fuzz seed 13 program 220) is the argument's old value,
// copied at the entry: bufferization need not read the argument after writing it (it refused).
// INPLACE: func.func @main(%arg0: tensor<f32> {bufferization.writable = true}) -> tensor<f32> attributes {dynamo_mlir.written_arguments = array<i64: 0>} {
// INPLACE-NEXT: %[[OLD:[0-9]+]] = bufferization.alloc_tensor() copy(%arg0) : tensor<f32>
// INPLACE: bufferization.materialize_in_destination %{{[0-9]+}} in %arg0
// INPLACE-NEXT: return %[[OLD]] : tensor<f32>
#scalar = affine_map<() -> ()>
func.func @main(%x: tensor<f32> {bufferization.writable = false}) -> (tensor<f32>, tensor<f32>) attributes {dynamo_mlir.written_inputs = [[1, 0]]} {
  %e = tensor.empty() : tensor<f32>
  %sq = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []} ins(%x : tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %x, %sq : tensor<f32>, tensor<f32>
}

// -----
// cpu-write-inputs-in-place: the written input's new value is also a result of its own (two
// results canonicalization made one value: x.t().relu_() returned beside its transpose back,
// fuzz seed 29 program 289). The op writes its own buffer, returned; a copy goes into the
// argument. Written into the argument and returned too, it failed to bufferize (RaW conflict).
// INPLACE: func.func @main(%arg0: tensor<4xf32> {bufferization.writable = true}) -> tensor<4xf32> attributes {dynamo_mlir.written_arguments = array<i64: 0>} {
// INPLACE: %[[E:[0-9]+]] = tensor.empty() : tensor<4xf32>
// INPLACE-NEXT: %[[NEW:[0-9]+]] = linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>)
// INPLACE: %[[COPY:[0-9]+]] = bufferization.alloc_tensor() copy(%[[NEW]]) : tensor<4xf32>
// INPLACE-NEXT: bufferization.materialize_in_destination %[[COPY]] in %arg0
// INPLACE-NEXT: return %[[NEW]] : tensor<4xf32>
#id = affine_map<(d0) -> (d0)>
func.func @main(%x: tensor<4xf32> {bufferization.writable = false}) -> (tensor<4xf32>, tensor<4xf32>) attributes {dynamo_mlir.written_inputs = [[1, 0]]} {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.maximumf %a, %c0 : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %r, %r : tensor<4xf32>, tensor<4xf32>
}

// -----

// cpu-collapse-narrow-elementwise: SGD's momentum update of a 3x3 convolution's weight (an
// innermost loop of 3) runs over rows x one flat dim of 4608, through one view per buffer
// (the buffer read and written is one view, one pointer); the scalar operand keeps its map.
// NARROW: %[[B:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1, 2, 3]] : memref<512x512x3x3xf32> into memref<512x4608xf32>
// NARROW-NEXT: %[[G:.*]] = memref.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : memref<512x512x3x3xf32> into memref<512x4608xf32>
// NARROW-NEXT: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%[[B]], %arg2, %[[G]] : memref<512x4608xf32>, memref<f32>, memref<512x4608xf32>) outs(%[[B]] : memref<512x4608xf32>)
// NARROW: arith.mulf
// NARROW-NEXT: arith.addf
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#scalar4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @main(%buf: memref<512x512x3x3xf32>, %grad: memref<512x512x3x3xf32>, %m: memref<f32>) {
  linalg.generic {indexing_maps = [#id4, #scalar4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%buf, %m, %grad : memref<512x512x3x3xf32>, memref<f32>, memref<512x512x3x3xf32>) outs(%buf : memref<512x512x3x3xf32>) {
  ^bb0(%b: f32, %s: f32, %g: f32, %o: f32):
    %0 = arith.mulf %b, %s : f32
    %1 = arith.addf %0, %g : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A rank-2 op with a narrow innermost dim (Adam's moment update of a linear layer's 64 x 10
// weight) runs over one flat dim of 640: a 64 x 10 view would change nothing.
// NARROW-LABEL: func.func @main
// NARROW: %[[W:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1]] : memref<64x10xf32> into memref<640xf32>
// NARROW-NEXT: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[W]], %arg1 : memref<640xf32>, memref<f32>) outs(%[[W]] : memref<640xf32>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>
func.func @main(%w: memref<64x10xf32>, %s: memref<f32>) {
  linalg.generic {indexing_maps = [#id2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%w, %s : memref<64x10xf32>, memref<f32>) outs(%w : memref<64x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// cpu-hoist-invariant-scalars: Adam's bias correction, 1 - 0.9 ** step (a powf of the 0-d step
// counter), fused into the update of every element, is computed once in a 0-d generic before
// the loop, which reads the result as a broadcast scalar; the per-element ops stay.
// HOIST-LABEL: func.func @main
// HOIST: %[[E:.*]] = tensor.empty() : tensor<f32>
// HOIST-NEXT: %[[C:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []} ins(%arg1 : tensor<f32>) outs(%[[E]] : tensor<f32>)
// HOIST-NEXT: ^bb0(%[[STEP:.*]]: f32, %{{.*}}: f32):
// HOIST-NEXT: math.powf %{{.*}}, %[[STEP]] : f32
// HOIST-NEXT: arith.subf
// HOIST-NEXT: linalg.yield
// HOIST: linalg.generic {{.*}} ins(%arg0, %[[C]] : tensor<64x10xf32>, tensor<f32>)
// HOIST-NOT: math.powf
// HOIST: arith.divf
// HOIST: return
#id2h = affine_map<(d0, d1) -> (d0, d1)>
#scalar2h = affine_map<(d0, d1) -> ()>
func.func @main(%m: tensor<64x10xf32>, %step: tensor<f32>) -> tensor<64x10xf32> {
  %beta = arith.constant 0.9 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<64x10xf32>
  %r = linalg.generic {indexing_maps = [#id2h, #scalar2h, #id2h], iterator_types = ["parallel", "parallel"]}
      ins(%m, %step : tensor<64x10xf32>, tensor<f32>) outs(%e : tensor<64x10xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %p = math.powf %beta, %t : f32
    %c = arith.subf %one, %p : f32
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<64x10xf32>
  return %r : tensor<64x10xf32>
}

// -----

// Left as they are: an innermost dim wide enough to vectorize, a strided buffer (not one
// contiguous range per row), a broadcast operand (its map is no identity), a body reading
// linalg.index.
// NARROW-LABEL: func.func @main
// NARROW-NOT: memref.collapse_shape
// NARROW: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0)>
func.func @main(%wide: memref<4x4x32xf32>, %s: memref<4x4x3xf32, strided<[24, 6, 1]>>, %out: memref<4x4x3xf32>,
                %bias: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%wide : memref<4x4x32xf32>) outs(%wide : memref<4x4x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.negf %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : memref<4x4x3xf32, strided<[24, 6, 1]>>) outs(%out : memref<4x4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%bias : memref<4xf32>) outs(%out : memref<4x4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]} outs(%out : memref<4x4x3xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 2 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    linalg.yield %f : f32
  }
  return
}
