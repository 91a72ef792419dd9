// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage host | check --prefix HOST
// RUN: dynamo-mlir dump %s --from dynamo --target cuda --stage gpu | check --prefix GPU

// The cuda target's host schedule with symbolic sizes (codegen/gpu/host_sizes.py): attention on
// a permuted query of symbolic length is one torch call on views whose sizes and strides are
// expressions of the arguments' sizes (the permute a strided view, folded into the call),
// writing the region's output %3 itself (cuda-results-into-out-params: no temporary, no copy).
// HOST: host main(%0: 2x?x4x32xfloat32, %1: 2x4x?x32xfloat32, %2: 2x4x?x32xfloat32, %3: 2x4x?x32xfloat32)
// HOST-NEXT: torch torch.attention(%0[2x4xdim(%0, 1)x32|muli(128, dim(%0, 1)),32,128,1+0], %1[2x4xdim(%1, 2)x32|{{.*}}, %3[2x4xdim(%3, 2)x32|
// HOST-NOT: launch
func.func @main(%q: tensor<2x?x4x32xf32>, %k: tensor<2x4x?x32xf32>, %v: tensor<2x4x?x32xf32>) -> tensor<2x4x?x32xf32> {
  %t = "dynamo.permute"(%q) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x32xf32>) -> tensor<2x4x?x32xf32>
  %o = "dynamo.attention"(%t, %k, %v) {is_causal = 1 : i64, scale = 0.17677669529663687 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>, tensor<2x4x?x32xf32>) -> tensor<2x4x?x32xf32>
  return %o : tensor<2x4x?x32xf32>
}

// -----

// A reshape to symbolic sizes: the sizes it takes, stored into a small integer buffer, stay host
// expressions (no device buffer is allocated for them); the size that no tensor carries is an
// `index` argument (%1) of the schedule, read by the grid and passed to the kernel; the result is
// computed into its out-param (%2) with no copy.
// HOST: host main(%0: 2x?x64xfloat32, %1: index, %2: ?x64xfloat32)
// HOST-NEXT: launch tiled grid=(index_cast(index_cast(%1)), 1, 1) block=(256, 1, 1) (%2, dim(%2, 0):index, %0, index_cast(%1):index)
// HOST-NOT: empty
func.func @main(%x: tensor<2x?x64xf32>, %n: index) -> tensor<?x64xf32> {
  %r = "dynamo.reshape"(%x, %n) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x?x64xf32>, index) -> tensor<?x64xf32>
  %y = "dynamo.exp"(%r) : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A row reduction over a symbolic row count and length (codegen/gpu/row_groups.py): one block
// per row, so the grid is the row count read per call (the output's, which the group's first op,
// the fill of -inf, writes); the row length is the threads' loop bound; the fill is in the same
// kernel (no launch of its own). With cuda_row_vectors (the default), the kernel holds the group twice (row_reduce.row_vectors): lane
// groups of 4 floats read by 16-byte vector loads, taken where this call's row length and row
// stride are multiples of 4 and x's first element is 16-byte aligned; one float a lane otherwise.
// HOST: host main(%0: ?x?xfloat32, %1: ?xfloat32)
// HOST-NEXT: launch row_group grid=(dim(%1, 0), 1, 1) block=(256, 1, 1) (%1, dim(%1, 0):index, %0, dim(%0, 0):index, dim(%0, 1):index, dim(%0, 1):index, dim(%0, 1):index)
// HOST-NOT: launch
// GPU: gpu.func @kernel(%[[OUT:.*]]: memref<1xf32>, %{{.*}}: index, %[[X:.*]]: memref<1xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %[[N:.*]]: index)
// GPU: %[[XV:.*]] = memref.reinterpret_cast %[[X]]
// GPU: %[[LEN:.*]] = arith.remui %[[N]], %c4
// GPU: %base_buffer, %offset, %sizes:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[XV]]
// GPU: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[XV]]
// GPU: arith.remui %[[PTR]], %c16
// GPU: arith.remui %[[STRIDES]]#0, %c4
// GPU: %[[OK:.*]] = arith.cmpi eq
// GPU-NEXT: scf.if %[[OK]] {
// GPU: %[[GROUPS:.*]] = arith.divui %[[N]], %c4
// GPU: scf.for %{{.*}} = %thread_id_x to %[[GROUPS]] step %c1024
// GPU: vector.load %[[XV]][%block_id_x, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// GPU-NOT: memref.load %[[XV]]
// GPU: gpu.all_reduce maximumf
// GPU: } else {
// GPU: scf.for %{{.*}} = %thread_id_x to %[[N]] step %c1024
// GPU-NOT: vector.load
// GPU: memref.load %[[XV]][%block_id_x, %{{.*}}] : memref<?x?xf32>
// GPU: gpu.all_reduce maximumf
func.func @main(%x: tensor<?x?xf32>) -> tensor<?xf32> {
  %0 = "dynamo.reduce"(%x) {dims = array<i64: 1>, kind = "max"} : (tensor<?x?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// codegen/sliced_reshapes.py (cuda-expand-reshapes-of-slices): GPT-2's attention input, one
// projection of symbolic length split into q, k and v, each reshaped to heads and transposed.
// The reshapes of the slices are expand_shapes, so the three reach the attention call as strided
// views of the projection's buffer %2 (row stride 192, offsets 0, 64, 128): no copy kernel.
// HOST: host main(%0: 2x?x192xfloat32, %1: index, %2: 2x4x?x16xfloat32)
// HOST-NEXT: torch torch.attention({{.*}}16,192,1+0]{{.*}}16,192,1+64]{{.*}}16,192,1+128]
// HOST-NOT: launch
func.func @main(%p: tensor<2x?x192xf32>, %n: index) -> tensor<2x4x?x16xf32> {
  %q = "dynamo.slice"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, start = array<i64: 0, 0, 0>, step = array<i64: 1, 1, 1>} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %k = "dynamo.slice"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, start = array<i64: 0, 0, 64>, step = array<i64: 1, 1, 1>} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %v = "dynamo.slice"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>, start = array<i64: 0, 0, 128>, step = array<i64: 1, 1, 1>} : (tensor<2x?x192xf32>) -> tensor<2x?x64xf32>
  %qh = "dynamo.reshape"(%q, %n) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x?x64xf32>, index) -> tensor<2x?x4x16xf32>
  %kh = "dynamo.reshape"(%k, %n) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x?x64xf32>, index) -> tensor<2x?x4x16xf32>
  %vh = "dynamo.reshape"(%v, %n) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x?x64xf32>, index) -> tensor<2x?x4x16xf32>
  %qt = "dynamo.permute"(%qh) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %kt = "dynamo.permute"(%kh) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %vt = "dynamo.permute"(%vh) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x?x4x16xf32>) -> tensor<2x4x?x16xf32>
  %o = "dynamo.attention"(%qt, %kt, %vt) {is_causal = 1 : i64, scale = 0.25 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>) -> tensor<2x4x?x16xf32>
  return %o : tensor<2x4x?x16xf32>
}
