// RUN: dynamo-mlir pass cpu-lower-dynamo-ops %s | check --prefix LOWER
// RUN: dynamo-mlir pass cpu-results-into-out-params %s | check --prefix OUTPARAM
// RUN: dynamo-mlir pass cuda-results-into-out-params %s --target cuda | check --prefix OUTPARAM
// RUN: dynamo-mlir pass cuda-lower-dynamo-ops %s --target cuda | check --prefix LOWER
// RUN: dynamo-mlir pass cpu-linalg-cleanup %s | check --prefix CLEAN
// RUN: dynamo-mlir pass cuda-linalg-cleanup %s --target cuda | check --prefix CLEAN
// RUN: dynamo-mlir pass cpu-fuse-elementwise %s | check --prefix FUSE
// RUN: dynamo-mlir pass cuda-fuse-elementwise %s --target cuda | check --prefix FUSE
// RUN: dynamo-mlir pass cpu-deallocate %s | check --prefix DEALLOC
// RUN: dynamo-mlir pass cpu-plan-memory %s | check --prefix PLAN
// RUN: dynamo-mlir pass cpu-to-loops %s -O parallel=false | check --prefix LOOPS
// RUN: dynamo-mlir pass cuda-kernels %s --target cuda | check --prefix KERNELS
// RUN: dynamo-mlir pass cpu-fast-math %s | check --prefix FASTMATH
// RUN: dynamo-mlir pass cpu-parallel-loops %s | check --prefix PARALLEL
// RUN: dynamo-mlir pass cpu-to-llvm %s | check --prefix LLVM
// RUN: dynamo-mlir pass cuda-outline-kernels %s --target cuda | check --prefix OUTLINE
// RUN: dynamo-mlir pass cpu-lane-vectors %s | check --prefix LANES

// The passes both targets have, run alone (`dynamo-mlir passes`). cpu-/cuda-lower-dynamo-ops:
// each dynamo op by its rule (here the generic exp: one linalg.generic with math.exp);
// *-linalg-cleanup: canonicalize and CSE (the two equal exps become one, returned twice: what
// cpu-distinct-results and bufferize's copy then undo).
// LOWER: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
// LOWER: math.exp
// LOWER-NOT: dynamo.
// CLEAN: %[[E:[0-9]+]] = "dynamo.exp"(%arg0)
// CLEAN-NEXT: return %[[E]], %[[E]]
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "dynamo.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "dynamo.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// *-fuse-elementwise: a producer and its elementwise consumer, one generic (exp then add).
// FUSE: linalg.generic {{.*}} ins(%arg0 : tensor<4xf32>)
// FUSE: math.exp
// FUSE-NEXT: arith.addf
// FUSE-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// The passes after bufferization, on one intermediate buffer %t between two loop nests.
// cpu-deallocate: the buffer freed after its last use.
// DEALLOC: %[[T:alloc[_0-9]*]] = memref.alloc() : memref<4xf32>
// DEALLOC: outs(%arg1 : memref<4xf32>)
// DEALLOC: memref.dealloc %[[T]]
// DEALLOC-NEXT: return
// cpu-plan-memory: the buffer a marked view of a workspace argument, its size on the module.
// PLAN: module attributes {dynamo_mlir.workspace_bytes = 64 : i64}
// PLAN: func.func @main(%arg0: memref<4xf32>, %arg1: memref<4xf32>, %arg2: memref<64xi8>)
// PLAN: %[[V:view[_0-9]*]] = memref.view %arg2[%{{.*}}][] {dynamo_mlir.planned} : memref<64xi8> to memref<4xf32>
// PLAN-NOT: memref.alloc
// PLAN: outs(%[[V]] : memref<4xf32>)
// cpu-to-loops (parallel off): each nest an scf.for.
// LOOPS: scf.for
// LOOPS: scf.for
// LOOPS-NOT: linalg.generic
// cuda-kernels: each nest a gpu.launch (one warp for 4 elements), no linalg op left.
// KERNELS: gpu.launch blocks
// KERNELS: gpu.launch blocks
// KERNELS-NOT: linalg.
// cpu-fast-math: math.exp as arithmetic (the polynomial of lowering/math/approx.py).
// FASTMATH-NOT: math.exp
// FASTMATH: arith.mulf
#id = affine_map<(d0) -> (d0)>
func.func @main(%a: memref<4xf32>, %out: memref<4xf32>) {
  %t = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%t : memref<4xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// cpu-parallel-loops: a nest of 1M elements outlined into a body torch's thread pool calls on
// chunks of rows (torch_parallel_for), its buffers passed llvm.noalias (no other shares them).
// PARALLEL: call @torch_parallel_for(
// PARALLEL: func.func private @main_parallel_0_body({{.*}}memref<1024x1024xf32> {llvm.noalias}, %{{.*}}: memref<1024x1024xf32> {llvm.noalias})
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: memref<1024x1024xf32>, %out: memref<1024x1024xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a : memref<1024x1024xf32>) outs(%out : memref<1024x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = math.exp %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// cpu-to-llvm: scf loops to the LLVM dialect, one bare pointer per static-shaped memref.
// LLVM: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr)
// LLVM-NOT: scf.
// LLVM-NOT: memref.
func.func @main(%a: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %out[%i] : memref<4xf32>
  }
  return
}

// -----

// cuda-outline-kernels: a gpu.launch body outlined into a gpu.module's kernel, launched by name.
// OUTLINE: gpu.launch_func @main_kernel::@main_kernel blocks in (%{{.*}}) threads in (%{{.*}}) args(%arg0 : memref<32xf32>)
// OUTLINE: gpu.module @main_kernel
// OUTLINE-NEXT: gpu.func @main_kernel(%arg0: memref<32xf32>) kernel
module attributes {gpu.container_module} {
  func.func @main(%a: memref<32xf32>) {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a1 = %c32, %a2 = %c1, %a3 = %c1) {
      %v = memref.load %a[%tx] : memref<32xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %a[%tx] : memref<32xf32>
      gpu.terminator
    }
    return
  }
}

// -----

// cpu-lane-vectors: a 0..16 lane loop over buffers no other shares (llvm.noalias) becomes one
// vector<16> load/add/store: what row_reduction.py's lanes turn into.
// LANES: scf.for %[[I:arg[0-9]+]] =
// LANES-NEXT: %[[X:[0-9]+]] = vector.load %arg0[%[[I]], %c0] : memref<2x16xf32>, vector<16xf32>
// LANES-NEXT: %[[Y:[0-9]+]] = vector.load %arg1[%[[I]], %c0] : memref<2x16xf32>, vector<16xf32>
// LANES-NEXT: %[[S:[0-9]+]] = arith.addf %[[X]], %[[Y]] : vector<16xf32>
// LANES-NEXT: vector.store %[[S]], %arg1[%[[I]], %c0]
func.func @main(%a: memref<2x16xf32> {llvm.noalias}, %out: memref<2x16xf32> {llvm.noalias}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %l = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %l] : memref<2x16xf32>
      %y = memref.load %out[%i, %l] : memref<2x16xf32>
      %s = arith.addf %x, %y : f32
      memref.store %s, %out[%i, %l] : memref<2x16xf32>
    }
  }
  return
}

// -----

// <target>-results-into-out-params: the ?-sized result %t, filled and then copied whole into the
// out-param %out, is computed into %out (no temporary, no copy, no free); %u is read after its copy,
// so it stays; a static result (hoisted by bufferization already) is left alone.
// OUTPARAM: func.func @main(%arg0: memref<?x8xf32>, %arg1: memref<?x8xf32>, %arg2: memref<?x8xf32>, %arg3: memref<4xf32>)
// OUTPARAM: linalg.generic {{.*}} ins(%arg0 : memref<?x8xf32>) outs(%arg1 : memref<?x8xf32>)
// OUTPARAM-NOT: memref.copy %{{.*}}, %arg1
// OUTPARAM: %[[U:alloc[_0-9]*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// OUTPARAM: memref.copy %[[U]], %arg2
// OUTPARAM: linalg.generic {{.*}} ins(%[[U]] : memref<?x8xf32>)
// OUTPARAM: memref.copy %{{.*}}, %arg3
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#first = affine_map<(d0) -> (d0)>
func.func @main(%x: memref<?x8xf32>, %out: memref<?x8xf32>, %out2: memref<?x8xf32>, %out3: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %t = memref.alloc(%n) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x8xf32>) outs(%t : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  memref.copy %t, %out : memref<?x8xf32> to memref<?x8xf32>
  memref.dealloc %t : memref<?x8xf32>
  %u = memref.alloc(%n) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x8xf32>) outs(%u : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.tanh %a : f32
    linalg.yield %e : f32
  }
  memref.copy %u, %out2 : memref<?x8xf32> to memref<?x8xf32>
  %s = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%u : memref<?x8xf32>) outs(%u : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  memref.copy %s, %out3 : memref<4xf32> to memref<4xf32>
  return
}

// -----

// <target>-results-into-out-params through a reshape: a matmul's [?, 6] result, viewed as the
// out-param's [2, ?, 6] (a language model's logits), is computed into a view of the out-param
// with the temporary's sizes; the reshape, its shape buffer (only stored to), the copy and the
// temporary go. A static temporary reshaped into its out-param goes the same way.
// OUTPARAM: func.func @main(%arg0: memref<?x4xf32>, %arg1: memref<4x6xf32>, %arg2: memref<2x?x6xf32>, %arg3: memref<2x3x6xf32>)
// OUTPARAM: %[[V:.+]] = memref.reinterpret_cast %arg2 to offset: [0], sizes: [%{{.*}}, 6], strides: [6, 1] : memref<2x?x6xf32> to memref<?x6xf32>
// OUTPARAM: linalg.matmul ins(%arg0, %arg1 : memref<?x4xf32>, memref<4x6xf32>) outs(%[[V]] : memref<?x6xf32>)
// OUTPARAM: %[[S:.+]] = memref.reinterpret_cast %arg3 to offset: [0], sizes: [6, 6], strides: [6, 1] : memref<2x3x6xf32> to memref<6x6xf32>
// OUTPARAM: linalg.matmul ins(%{{.*}}, %arg1 : {{.*}}) outs(%[[S]] : memref<6x6xf32>)
// OUTPARAM-NOT: memref.reshape
// OUTPARAM-NOT: memref.copy
// OUTPARAM-NOT: memref.store
// OUTPARAM-NOT: memref.alloc
func.func @main(%x: memref<?x4xf32>, %w: memref<4x6xf32>, %out: memref<2x?x6xf32>, %out2: memref<2x3x6xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %two = arith.constant 2 : i64
  %six = arith.constant 6 : i64
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %t = memref.alloc(%n) : memref<?x6xf32>
  linalg.matmul ins(%x, %w : memref<?x4xf32>, memref<4x6xf32>) outs(%t : memref<?x6xf32>)
  %l = arith.divui %n, %c2 : index
  %li = arith.index_cast %l : index to i64
  %shape = memref.alloc() : memref<3xi64>
  %c1 = arith.constant 1 : index
  memref.store %two, %shape[%c0] : memref<3xi64>
  memref.store %li, %shape[%c1] : memref<3xi64>
  memref.store %six, %shape[%c2] : memref<3xi64>
  %r = memref.reshape %t(%shape) : (memref<?x6xf32>, memref<3xi64>) -> memref<2x?x6xf32>
  memref.copy %r, %out : memref<2x?x6xf32> to memref<2x?x6xf32>
  memref.dealloc %t : memref<?x6xf32>
  memref.dealloc %shape : memref<3xi64>
  %x6 = memref.subview %x[0, 0] [6, 4] [1, 1] : memref<?x4xf32> to memref<6x4xf32, strided<[4, 1]>>
  %s = memref.alloc() : memref<6x6xf32>
  linalg.matmul ins(%x6, %w : memref<6x4xf32, strided<[4, 1]>>, memref<4x6xf32>) outs(%s : memref<6x6xf32>)
  %e = memref.expand_shape %s [[0, 1], [2]] output_shape [2, 3, 6] : memref<6x6xf32> into memref<2x3x6xf32>
  memref.copy %e, %out2 : memref<2x3x6xf32> to memref<2x3x6xf32>
  memref.dealloc %s : memref<6x6xf32>
  return
}
