// RUN: dynamo-mlir dump %s --from linalg --target cuda --stage gpu | check
// RUN: dynamo-mlir dump %s --from linalg --target cuda --stage ptx | check --prefix PTX

// An elementwise kernel over rows that 8 lanes do not divide but that start 16-byte aligned: a
// half matmul's padded operand (frontend/padded_matmuls.py), here 100 columns in rows of 104 as
// GPT-2's 50257 logits in rows of 50264. Each thread takes 8 columns with vector accesses
// where they end inside the row, and the row's last partial vector lane by lane; the 104-column
// rows are 13 vectors, 16 x 13 threads. Only the stride-1 accesses set the width: the row's
// float32 statistic is a scalar load, not a cap of 4 lanes.
// CHECK: gpu.launch_func @elementwise_1::@kernel blocks in (%c1, %c1, %c1) threads in (%c208, %c1, %c1)
// CHECK: gpu.module @elementwise_1
// CHECK: %[[COL:[0-9]+]] = arith.remui %{{[0-9]+}}, %c104 : index
// CHECK: %[[END:[0-9]+]] = arith.addi %[[COL]], %c8 : index
// CHECK: %[[WHOLE:[0-9]+]] = arith.cmpi ule, %[[END]], %c100 : index
// CHECK: scf.if %[[WHOLE]] {
// CHECK: vector.load %arg0[%{{[0-9]+}}] {alignment = 16 : i64} : memref<1664xbf16>, vector<8xbf16>
// CHECK: memref.load %arg1[%{{[0-9]+}}] : memref<16xf32>
// CHECK: vector.store %{{[0-9]+}}, %arg2[%{{[0-9]+}}] {alignment = 16 : i64} : memref<1664xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: scf.for %[[LANE:arg[0-9]+]] = %c0 to %c8 step %c1 {
// CHECK: %[[AT:[0-9]+]] = arith.addi %[[COL]], %[[LANE]] : index
// CHECK: arith.cmpi ult, %[[AT]], %c100 : index
// CHECK: memref.load %arg0
// CHECK: memref.store %{{[0-9]+}}, %arg2
// PTX: .visible .entry elementwise_1(
// PTX: ld.global.v4.b32
// PTX: st.global.v4.b32
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @logits_gradient(%x: tensor<16x104xbf16>, %m: tensor<16x1xf32>) -> tensor<16x104xbf16> {
    %zero = arith.constant 0.0 : bf16
    %s = tensor.extract_slice %x[0, 0] [16, 100] [1, 1] : tensor<16x104xbf16> to tensor<16x100xbf16>
    %e = tensor.empty() : tensor<16x104xbf16>
    %b = tensor.extract_slice %e[0, 100] [16, 4] [1, 1] : tensor<16x104xbf16> to tensor<16x4xbf16>
    %z = linalg.fill ins(%zero : bf16) outs(%b : tensor<16x4xbf16>) -> tensor<16x4xbf16>
    %f = tensor.insert_slice %z into %e[0, 100] [16, 4] [1, 1] : tensor<16x4xbf16> into tensor<16x104xbf16>
    %i = tensor.extract_slice %f[0, 0] [16, 100] [1, 1] : tensor<16x104xbf16> to tensor<16x100xbf16>
    %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%s, %m : tensor<16x100xbf16>, tensor<16x1xf32>) outs(%i : tensor<16x100xbf16>) {
    ^bb0(%a: bf16, %c: f32, %o: bf16):
      %w = arith.extf %a : bf16 to f32
      %d = arith.subf %w, %c : f32
      %x2 = math.exp %d : f32
      %t = arith.truncf %x2 : f32 to bf16
      linalg.yield %t : bf16
    } -> tensor<16x100xbf16>
    %p = tensor.insert_slice %g into %f[0, 0] [16, 100] [1, 1] : tensor<16x100xbf16> into tensor<16x104xbf16>
    return %p : tensor<16x104xbf16>
  }
}
