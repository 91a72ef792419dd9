// RUN: dynamo-mlir pass cuda-name-kernels %s --target cuda | check --prefix NAMES

// Each launch is given the gpu.module name it is outlined under: the name its builder marked
// (its strategy and graph ops: codegen/kernel_names.mark_kernel; tests/ir/cuda_pipeline.mlir
// names kernels from locations), a second launch of the same name with a suffix. The function
// inside is always @kernel (merge-identical-kernels compares module bodies).
// NAMES: gpu.launch {{.*}} module(@row_fused_var_mean_rsqrt_gelu) function(@kernel) {
// NAMES: gpu.launch {{.*}} module(@row_fused_var_mean_rsqrt_gelu_1) function(@kernel) {
// NAMES: gpu.launch {{.*}} module(@elementwise_add) function(@kernel) {
// A launch no builder marked (none of ours) is a plain kernel.
// NAMES: gpu.launch {{.*}} module(@kernel) function(@kernel) {
module attributes {gpu.container_module} {
func.func @main(%m: memref<16xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %f = arith.constant 1.0 : f32
    memref.store %f, %m[%tx] : memref<16xf32>
    gpu.terminator
  } {dynamo_mlir.kernel_name = "row_fused_var_mean_rsqrt_gelu"}
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %f = arith.constant 2.0 : f32
    memref.store %f, %m[%tx] : memref<16xf32>
    gpu.terminator
  } {dynamo_mlir.kernel_name = "row_fused_var_mean_rsqrt_gelu"}
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    %f = arith.constant 3.0 : f32
    memref.store %f, %m[%tx] : memref<16xf32>
    gpu.terminator
  } {dynamo_mlir.kernel_name = "elementwise_add"}
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%a = %c1, %b = %c1, %c = %c1) {
    gpu.terminator
  }
  return
}
}
