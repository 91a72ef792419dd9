// RUN: dynamo-mlir pass cpu-lower-dynamo-ops %s | check --prefix LOWER
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
