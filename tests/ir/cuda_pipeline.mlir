// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage gpu | check --prefix GPU
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O cuda_fuse_rows=false --stage gpu | check --prefix UNFUSED
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O cuda_rowfuse_only=0-0 --stage gpu | check --prefix UNFUSED
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage nvvm | check --prefix NVVM
// RUN: dynamo-mlir dump %s --from dynamo --target cuda -O cuda_arch=sm_80 --stage ptx | check --prefix PTX
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST
// RUN: not dynamo-mlir dump %s --from dynamo --target cuda -O cuda_arch=90 --stage gpu | check --prefix BAD-OPTION
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage buffers | check --prefix WRITTEN
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix WHOST

// Softmax over rows of 256: the cuda target's stage boundaries.
// gpu: with cuda_fuse_rows (the default) both row reductions and the elementwise ops around
// them are one outlined kernel, one block (32 threads) per row: max, then exp and sum, with
// block-wide gpu.all_reduce. Each kernel is named for its strategy and the graph ops of the
// locations it holds (plain arithmetic left out).
// GPU: func.func @softmax(%arg0: memref<4x256xf32>, %arg1: memref<4x256xf32>)
// GPU: gpu.launch_func @row_fused_amax_exp_sum::@kernel blocks in (%c4, %c1, %c1) threads in (%c32, %c1, %c1)
// GPU-NOT: gpu.launch_func
// GPU: gpu.module @row_fused_amax_exp_sum
// GPU-NEXT: gpu.func @kernel(%arg0: memref<1024xf32>, %arg1: memref<1024xf32>) kernel
// GPU: gpu.all_reduce maximumf
// GPU: math.exp
// GPU: gpu.all_reduce add
// GPU: arith.divf
// GPU-NOT: gpu.module
// Without row fusion (or with cuda_rowfuse_only keeping no group): four kernels, the row
// statistics through 4-element buffers, each reduction its own (own-inits), its zero fill
// folded into its kernel.
// UNFUSED: %[[STATS:alloc[_0-9]*]] = memref.alloc() {{.*}} : memref<4xf32>
// UNFUSED: gpu.launch_func @row_reduce_amax::@kernel {{.*}} args({{.*}}, %[[STATS]] : memref<4xf32>)
// UNFUSED: gpu.launch_func @elementwise_exp::@kernel
// UNFUSED-NEXT: %[[SUMS:alloc[_0-9]*]] = memref.alloc() {{.*}} : memref<4xf32>
// UNFUSED-NEXT: gpu.launch_func @row_reduce_sum::@kernel {{.*}} args({{.*}}, %[[SUMS]] : memref<4xf32>)
// UNFUSED: gpu.launch_func @elementwise::@kernel
// nvvm: the kernel is an llvm.func marked nvvm.kernel; all_reduce became warp shuffles and a
// barrier; exp calls libdevice.
// NVVM: module attributes {llvm.target_triple = "nvptx64-nvidia-cuda"}
// NVVM: llvm.func @__nv_expf(f32) -> f32
// NVVM: llvm.func @row_fused_amax_exp_sum(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {{{.*}}nvvm.kernel, nvvm.maxntid = array<i32: 32, 1, 1>}
// NVVM: nvvm.shfl.sync bfly
// NVVM: nvvm.barrier
// NVVM: llvm.call @__nv_expf
// ptx: for the architecture the option names, one entry point, 16-byte loads, shuffles,
// libdevice's exp inlined (no call left).
// PTX: .target sm_80
// PTX: .visible .entry row_fused_amax_exp_sum(
// PTX: .maxntid 32, 1, 1
// PTX: ld.global.v4.b32
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync 0;
// PTX: ex2.approx
// PTX-NOT: call
// PTX-NOT: .entry
// The host schedule: one launch per row block.
// HOST: host softmax(%0: 4x256xfloat32, %1: 4x256xfloat32)
// HOST-NEXT: launch row_fused_amax_exp_sum grid=(4, 1, 1) block=(32, 1, 1) (%0, %1)
// An invalid cuda option value is refused before anything runs, naming the option.
// BAD-OPTION: invalid value for option 'cuda_arch' (target 'cuda'): a PTX architecture is sm_<number>
func.func @softmax(%x: tensor<4x256xf32>) -> tensor<4x256xf32> {
  %m_r = "dynamo.reduce"(%x) {kind = "max", dims = array<i64: 1>} : (tensor<4x256xf32>) -> tensor<4xf32> loc("amax = aten.amax.default")
  %m_k = "dynamo.reshape"(%m_r) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<4x1xf32>
  %m = "dynamo.broadcast"(%m_k) {dims = array<i64: 0, 1>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<4x1xf32>) -> tensor<4x256xf32>
  %s = "dynamo.sub"(%x, %m) : (tensor<4x256xf32>, tensor<4x256xf32>) -> tensor<4x256xf32>
  %e = "dynamo.exp"(%s) : (tensor<4x256xf32>) -> tensor<4x256xf32> loc("exp = aten.exp.default")
  %z_r = "dynamo.reduce"(%e) {kind = "sum", dims = array<i64: 1>} : (tensor<4x256xf32>) -> tensor<4xf32> loc("sum_1 = aten.sum.dim_IntList")
  %z_k = "dynamo.reshape"(%z_r) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<4xf32>) -> tensor<4x1xf32>
  %z = "dynamo.broadcast"(%z_k) {dims = array<i64: 0, 1>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<4x1xf32>) -> tensor<4x256xf32>
  %o = "dynamo.div"(%e, %z) : (tensor<4x256xf32>, tensor<4x256xf32>) -> tensor<4x256xf32>
  return %o : tensor<4x256xf32>
}

// -----
// An elementwise chain: fused at linalg, one kernel at gpu, each thread loading 4 contiguous
// floats of each input (vector<4xf32>) and storing 4.
// GPU: gpu.launch_func @elementwise::@kernel blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
// GPU-NOT: gpu.launch_func
// GPU: vector.load %arg0[%[[I:[0-9]+]]] {alignment = 16 : i64} : memref<32xf32>, vector<4xf32>
// GPU: vector.load %arg1[%[[I]]] {alignment = 16 : i64} : memref<32xf32>, vector<4xf32>
// GPU: arith.addf
// GPU: math.exp
// GPU: vector.store %{{[0-9]+}}, %arg2[%[[I]]] {alignment = 16 : i64} : memref<32xf32>, vector<4xf32>
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "dynamo.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----
// A column sum (a bias gradient) of 256 rows x 32 columns: the cascade's blocks of 64 rows, then
// the 4 block sums of each column. The first stage's 128 (column, block) points are far too few
// to fill a GPU one thread each, so it is `split`: a block of 32 points x 8 slices, slice s
// folding rows s, s + 8, ... of its point from 0, its partial stored in shared memory, and after
// a barrier slice 0 adding the 8 partials in order. The column varies fastest from thread to
// thread, so that a warp's loads are 32 consecutive floats of one row (coalesced), not one
// column of 32 blocks.
// GPU: gpu.launch_func @split_sum::@kernel blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)  dynamic_shared_memory_size %c1024_i32
// GPU: gpu.module @split_sum
// GPU: %[[POINT:[0-9]+]] = arith.remui %thread_id_x, %c32 : index
// GPU-NEXT: %[[SLICE:[0-9]+]] = arith.divui %thread_id_x, %c32 : index
// GPU: %[[T:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[POINT]] : index
// GPU-NEXT: %[[VALID:[0-9]+]] = arith.cmpi ult, %[[T]], %c128 : index
// GPU-NEXT: %[[COL:[0-9]+]] = arith.remui %[[T]], %c32 : index
// GPU-NEXT: %[[BLOCK:[0-9]+]] = arith.divui %[[T]], %c32 : index
// GPU-NEXT: %[[FIRST:[0-9]+]] = arith.select %[[VALID]], %[[SLICE]], %c64 : index
// GPU-NEXT: %[[PART:[0-9]+]] = scf.for %{{.*}} = %[[FIRST]] to %c64 step %c8 iter_args(%{{.*}} = %cst) -> (f32)
// GPU: %[[AT:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[COL]] : index
// GPU-NEXT: memref.load %arg0[%[[AT]]] : memref<8192xf32>
// GPU: %[[VIEW:view[_0-9]*]] = memref.view %{{[0-9]+}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<256xf32, #gpu.address_space<workgroup>>
// GPU-NEXT: memref.store %[[PART]], %[[VIEW]][%thread_id_x]
// GPU-NEXT: gpu.barrier
// GPU-NEXT: %[[SLICE0:[0-9]+]] = arith.cmpi eq, %[[SLICE]], %c0 : index
// GPU-NEXT: %[[FOLDS:[0-9]+]] = arith.andi %[[VALID]], %[[SLICE0]] : i1
// GPU-NEXT: scf.if %[[FOLDS]]
// GPU: memref.load %[[VIEW]][%[[POINT]]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU: memref.load %[[VIEW]]
// GPU-NOT: memref.load
// GPU: memref.store
// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX: .visible .entry split_sum(
// PTX: st.shared.b32
// PTX-NEXT: bar.sync 0;
// PTX: ld.shared.b32
func.func @column_sum(%x: tensor<256x32xf32>) -> tensor<32xf32> {
  %s = "dynamo.reduce"(%x) {kind = "sum", dims = array<i64: 0>} : (tensor<256x32xf32>) -> tensor<32xf32> loc("sum_2 = aten.sum.dim_IntList")
  return %s : tensor<32xf32>
}

// -----
// An AMP bias gradient: a float32 sum over batch and sequence, rounded to bf16, viewed as
// [1, N], and cast back to float32 for the parameter. Two kernels: blocks of 64 rows summed
// by 8 threads per (batch, block, column), the partials added to 0 (the zero fill folded in:
// no fill kernel, no load of the partial sums' buffer), then one row kernel summing each
// column's 8 x 8 block sums (the batch dim with the blocks, not after them), the two casts in
// it (the [1, N] view sunk below them).
// GPU: func.func @bias_gradient
// GPU: gpu.launch_func @split_sum::@kernel blocks in (%c64, %c1, %c1) threads in (%c256, %c1, %c1)
// GPU-NOT: gpu.launch_func
// GPU: gpu.launch_func @row_fused_sum::@kernel blocks in (%c32, %c1, %c1)
// GPU-NOT: gpu.launch_func
// GPU: return
// GPU: gpu.module @split_sum
// GPU: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// GPU: scf.for %{{.*}} = %{{[0-9]+}} to %c64 step %c8 iter_args(%{{.*}} = %[[ZERO]]) -> (f32)
// GPU: gpu.barrier
// GPU-NOT: memref.load %arg2
// GPU: arith.addf %{{[0-9]+}}, %[[ZERO]] : f32
// GPU: gpu.module @row_fused_sum
// GPU: arith.truncf %{{.*}} : f32 to bf16
// GPU: arith.extf %{{.*}} : bf16 to f32
func.func @bias_gradient(%x: tensor<8x512x32xf32>) -> tensor<1x32xf32> {
  %s = "dynamo.reduce"(%x) {kind = "sum", dims = array<i64: 0, 1>} : (tensor<8x512x32xf32>) -> tensor<32xf32> loc("sum_3 = aten.sum.dim_IntList")
  %h = "dynamo.cast"(%s) : (tensor<32xf32>) -> tensor<32xbf16>
  %r = "dynamo.reshape"(%h) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<32xbf16>) -> tensor<1x32xbf16>
  %c = "dynamo.cast"(%r) : (tensor<1x32xbf16>) -> tensor<1x32xf32>
  return %c : tensor<1x32xf32>
}

// -----
// A layer norm's weight and bias gradients (cuda-fuse-sibling-column-sums): the column sums of
// g * xhat and of g run over the same loops reading g alike, so one generic computes both and
// each stage is one kernel with two results: 8 threads per (batch, block, column) point load g
// and xhat once and keep two partials (two shared-memory slots, both fills folded: no fill
// kernel), then one row kernel sums both outputs' block sums.
// GPU: func.func @norm_gradients
// GPU-NOT: gpu.launch_func
// GPU: gpu.launch_func @split_sum::@kernel blocks in (%c64, %c1, %c1) threads in (%c256, %c1, %c1)  dynamic_shared_memory_size %c2048_i32 args(%{{.*}} : memref<131072xf32>, %{{.*}} : memref<131072xf32>, %{{.*}} : memref<64xf32>, %{{.*}} : memref<2048xf32>, %{{.*}} : memref<2048xf32>)
// GPU-NEXT: gpu.launch_func @row_fused_sum::@kernel blocks in (%c32, %c1, %c1) threads in (%c32, %c1, %c1)  args(%{{.*}} : memref<2048xf32>, %{{.*}} : memref<2048xf32>, %arg2 : memref<32xf32>, %arg3 : memref<32xf32>)
// GPU-NOT: gpu.launch_func
// GPU: gpu.module @split_sum
// GPU: scf.for %{{.*}} step %c8 iter_args(%{{.*}} = %cst, %{{.*}} = %cst) -> (f32, f32)
// GPU: memref.load %arg0
// GPU-NEXT: memref.load %arg1
// GPU-NOT: memref.load %arg
// GPU: gpu.barrier
func.func @norm_gradients(%g: tensor<8x512x32xf32>, %xhat: tensor<8x512x32xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %p = "dynamo.mul"(%g, %xhat) : (tensor<8x512x32xf32>, tensor<8x512x32xf32>) -> tensor<8x512x32xf32> loc("mul_1 = aten.mul.Tensor")
  %w = "dynamo.reduce"(%p) {kind = "sum", dims = array<i64: 0, 1>} : (tensor<8x512x32xf32>) -> tensor<32xf32> loc("sum_1 = aten.sum.dim_IntList")
  %b = "dynamo.reduce"(%g) {kind = "sum", dims = array<i64: 0, 1>} : (tensor<8x512x32xf32>) -> tensor<32xf32> loc("sum_2 = aten.sum.dim_IntList")
  return %w, %b : tensor<32xf32>, tensor<32xf32>
}

// -----
// Two sums of one long row (a vocabulary's 50000 logits: blocked rows of 12500, 4 a row) are no
// column sums: cuda-fuse-sibling-column-sums leaves them apart, each a block per blocked row
// (merged, they were one split kernel: a single block of 128 threads, 8 for each of the 16
// blocked rows).
// GPU: func.func @long_rows
// GPU: gpu.launch_func @row_reduce::@kernel blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
// GPU: gpu.launch_func @row_fused::@kernel blocks in (%c4, %c1, %c1)
// GPU: gpu.launch_func @row_reduce_1::@kernel blocks in (%c16, %c1, %c1) threads in (%c256, %c1, %c1)
// GPU-NOT: split
func.func @long_rows(%x: tensor<4x50000xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = "dynamo.reduce"(%x) {kind = "sum", dims = array<i64: 1>} : (tensor<4x50000xf32>) -> tensor<4xf32>
  %q = "dynamo.mul"(%x, %x) : (tensor<4x50000xf32>, tensor<4x50000xf32>) -> tensor<4x50000xf32>
  %t = "dynamo.reduce"(%q) {kind = "sum", dims = array<i64: 1>} : (tensor<4x50000xf32>) -> tensor<4xf32>
  return %s, %t : tensor<4xf32>, tensor<4xf32>
}

// -----
// An SGD step with momentum whose new buffer (result 1) and parameter (result 2) the frontend
// asked to have computed into their inputs (arguments 0 and 2): after bufferizing they are no
// out-params, the kernel writes those arguments, and the host schedule marks the slots written.
// The parameter's update reads the new buffer element by element: one generic computes both
// (cuda-fuse-consumers-as-results), each element of the buffer read, then written, by its thread.
// WRITTEN: func.func @main(%arg0: memref<1000xf32>, %arg1: memref<1000xf32>, %arg2: memref<1000xf32>, %arg3: memref<f32>) attributes {dynamo_mlir.written_arguments = array<i64: 0, 2>}
// WRITTEN: ins(%arg0, %arg1, %arg2 : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>) outs(%arg0, %arg2 : memref<1000xf32>, memref<1000xf32>)
// WRITTEN-NOT: memref.copy
// WHOST: host main(%0: 1000xfloat32 written, %1: 1000xfloat32, %2: 1000xfloat32 written, %3: xfloat32)
// WHOST-NEXT: launch row_fused {{.*}} (%0, %1, %2, %3)
func.func @main(%arg0: tensor<1000xf32>, %arg1: tensor<1000xf32>, %arg2: tensor<1000xf32>) -> (tensor<f32>, tensor<1000xf32>, tensor<1000xf32>) attributes {dynamo_mlir.written_inputs = [[1, 0], [2, 2]]} {
  %0 = "dynamo.constant"() {value = dense<0.899999976> : tensor<f32>} : () -> tensor<f32>
  %1 = "dynamo.broadcast"(%0) {dims = array<i64>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<f32>) -> tensor<1000xf32>
  %2 = "dynamo.mul"(%arg0, %1) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %3 = "dynamo.add"(%2, %arg1) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %4 = "dynamo.constant"() {value = dense<-1.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %5 = "dynamo.broadcast"(%4) {dims = array<i64>, operandSegmentSizes = array<i32: 1, 0>} : (tensor<f32>) -> tensor<1000xf32>
  %6 = "dynamo.mul"(%3, %5) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %7 = "dynamo.add"(%arg2, %6) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  %8 = "dynamo.reduce"(%arg1) {dims = array<i64: 0>, kind = "sum"} : (tensor<1000xf32>) -> tensor<f32>
  return %8, %3, %7 : tensor<f32>, tensor<1000xf32>, tensor<1000xf32>
}
