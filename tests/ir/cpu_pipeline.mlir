// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix LOOPS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O fuse_elementwise=false -O fast_math=false --stage loops | check --prefix UNFUSED
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O fast_math=false --stage llvm | check --prefix LLVM
// RUN: not dynamo-mlir dump %s --from dynamo --target cpu -O cuda_arch=sm_90 --stage loops | check --prefix WRONG-TARGET
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix PAR
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O parallel=false --stage loops | check --prefix SERIAL

// The cpu target's stage boundaries on add + exp.
// loops: fused into one loop nest (fuse_elementwise), bufferized, the result an out-parameter
// (torch allocates it), no allocation left; the float32 exp expanded into arith (fast_math).
// LOOPS: func.func @main(%arg0: memref<4x8xf32>, %arg1: memref<4x8xf32>, %arg2: memref<4x8xf32>) {
// LOOPS-NOT: memref.alloc
// LOOPS: scf.for %[[I:arg[0-9]+]] = %c0 to %c4 step %c1 {
// LOOPS-NEXT: scf.for %[[J:arg[0-9]+]] = %c0 to %c8 step %c1 {
// LOOPS-NEXT: %[[A:[0-9]+]] = memref.load %arg0[%[[I]], %[[J]]] : memref<4x8xf32>
// LOOPS-NEXT: %[[B:[0-9]+]] = memref.load %arg1[%[[I]], %[[J]]] : memref<4x8xf32>
// LOOPS-NEXT: %[[S:[0-9]+]] = arith.addf %[[A]], %[[B]] : f32
// LOOPS-NOT: math.exp
// LOOPS: math.fma
// LOOPS: memref.store %{{[0-9]+}}, %arg2[%[[I]], %[[J]]] : memref<4x8xf32>
// LOOPS-NOT: scf.for
// With fuse_elementwise off: two loop nests, the second reading the first's output.
// UNFUSED: arith.addf
// UNFUSED-NEXT: memref.store %{{[0-9]+}}, %arg2
// UNFUSED: scf.for
// UNFUSED: memref.load %arg2
// UNFUSED-NEXT: math.exp
// llvm: static shapes take the bare-pointer convention, one !llvm.ptr per tensor; with fast_math
// off exp is the LLVM intrinsic (a libm call).
// LLVM: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr) {
// LLVM: llvm.fadd %{{[0-9]+}}, %{{[0-9]+}} : f32
// LLVM-NEXT: llvm.intr.exp(%{{[0-9]+}}) : (f32) -> f32
// LLVM: llvm.return
// Another target's option is refused, naming where it belongs and what cpu accepts.
// WRONG-TARGET: unknown option(s) 'cuda_arch' (an option of cuda) for target 'cpu'{{.*}}its options: ['opt_level', 'library_matmul'
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "dynamo.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----
// A `?` dim: memrefs are passed as descriptors (pointers, offset, sizes, strides); the result, of
// symbolic size too, is computed into its out-param (cpu-results-into-out-params): no allocation,
// no copy.
// LLVM-NOT: llvm.func @malloc
// LLVM: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, %arg5: i64, %arg6: i64,
// LLVM-NOT: llvm.call @malloc
// LLVM-NOT: memcpy
func.func @main(%arg0: tensor<?x8xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----
// A large nest (256 x 512 elements, over MIN_CHUNK_WORK) runs on torch's intra-op pool: the loop
// moves into @main_parallel_0_body (its buffers noalias: no two share memory), @main_parallel_0
// reads them back from ctx, and main calls torch_parallel_for over the 256 rows, 16 at the least
// per chunk (16 x 512 = 8192). With parallel off it is today's loop in main.
// PAR: func.func @main(%arg0: memref<256x512xf32>, %arg1: memref<256x512xf32>, %arg2: memref<256x512xf32>) {
// PAR: call @torch_parallel_for(%c0_i64, %c256_i64, %c16_i64, %f, %{{[0-9]+}})
// PAR-NOT: scf.for
// PAR: return
// PAR: func.func private @torch_parallel_for(i64, i64, i64, (i64, i64, !llvm.ptr) -> (), !llvm.ptr) -> i32
// PAR: func.func private @main_parallel_0_body(%arg0: index, %arg1: index, %arg2: !llvm.ptr, %arg3: memref<256x512xf32> {llvm.noalias}, %arg4: memref<256x512xf32> {llvm.noalias}, %arg5: memref<256x512xf32> {llvm.noalias})
// PAR: scf.for %[[I:arg[0-9]+]] = %arg0 to %arg1 step %c1 {
// PAR-NEXT: scf.for %[[J:arg[0-9]+]] = %c0 to %c512 step %c1 {
// PAR: func.func private @main_parallel_0(%arg0: i64, %arg1: i64, %arg2: !llvm.ptr)
// PAR: call @main_parallel_0_body(
// SERIAL: func.func @main(
// SERIAL-NEXT: %c0 = arith.constant 0 : index
// SERIAL-NOT: torch_parallel_for
// SERIAL: scf.for
func.func @main(%arg0: tensor<256x512xf32>, %arg1: tensor<256x512xf32>) -> tensor<256x512xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  return %0 : tensor<256x512xf32>
}
