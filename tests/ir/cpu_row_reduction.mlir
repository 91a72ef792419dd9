// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu -O parallel=false --stage loops | check --prefix LOOPS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix PAR

// The cpu rule for a float sum over the innermost dim (codegen/cpu/row_reduction.py): lane j of
// the [rows, 1, 16] partial sums x[r, s * 16 + j]; the lane loop (d3) is parallel and innermost,
// so it vectorizes; 64 lane steps (the reduction loop d2, sized by a tensor<64> window). Then the
// 16 lanes are summed.
// CHECK: #[[LANES:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 1024 + d2 * 16 + d3)>
// CHECK: #[[PART:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK: %[[P0:[0-9]+]] = linalg.fill ins(%{{cst[_0-9]*}} : f32) outs(%{{[0-9]+}} : tensor<2x1x16xf32>)
// CHECK: %[[PARTIAL:[0-9]+]] = linalg.generic {indexing_maps = [#[[LANES]], #{{map[0-9]*}}, #[[PART]]],
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%arg0, %{{[0-9]+}} : tensor<2x1024xf32>, tensor<64xf32>) outs(%[[P0]] : tensor<2x1x16xf32>)
// CHECK: arith.addf %out, %in : f32
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "reduction"]} ins(%[[PARTIAL]] : tensor<2x1x16xf32>)
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<2xf32>)
// Loops (codegen/cpu/lane_vectors.py): the lane loop is vector code: the lanes zeroed by one
// vector store; per row and lane step one vector<16> load of 16 consecutive elements of x (at
// step * 16), added to the 16 lanes; then the lanes summed one by one into the row's result.
// LOOPS: %[[ZERO:cst[_0-9]*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// LOOPS: %[[P:view[_0-9]*]] = memref.view %arg2[%c{{[0-9]+}}][] {dynamo_mlir.planned} : memref<{{[0-9]+}}xi8> to memref<2x1x16xf32>
// LOOPS: vector.store %[[ZERO]], %[[P]][%{{arg[0-9]+}}, %c0, %c0] : memref<2x1x16xf32>, vector<16xf32>
// LOOPS: scf.for %[[R:arg[0-9]+]] = %c0 to %c2 step %c1 {
// LOOPS-NEXT: scf.for %[[S:arg[0-9]+]] = %c0 to %c64 step %c1 {
// LOOPS-NEXT: %[[AT:[0-9]+]] = affine.apply #{{map[0-9]*}}(%[[S]])
// LOOPS-NEXT: %[[X:[0-9]+]] = vector.load %arg0[%[[R]], %[[AT]]] : memref<2x1024xf32>, vector<16xf32>
// LOOPS-NEXT: %[[ACC:[0-9]+]] = vector.load %[[P]][%[[R]], %c0, %c0] : memref<2x1x16xf32>, vector<16xf32>
// LOOPS-NEXT: %[[SUM:[0-9]+]] = arith.addf %[[ACC]], %[[X]] : vector<16xf32>
// LOOPS-NEXT: vector.store %[[SUM]], %[[P]][%[[R]], %c0, %c0] : memref<2x1x16xf32>, vector<16xf32>
// LOOPS: scf.for %{{arg[0-9]+}} = %c0 to %c16 step %c1 {
// LOOPS-NEXT: memref.load %[[P]]
// LOOPS-NEXT: memref.load %arg1
// LOOPS-NEXT: arith.addf {{.*}} : f32
func.func @main(%arg0: tensor<2x1024xf32>) -> tensor<2xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "sum"} : (tensor<2x1024xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----
// A long row (5000): blocks of 52 lane steps (832 elements, 52 the largest divisor of the 312
// lane steps in [32, 64]: no running sum adds more than 64 terms), the [3, 6, 16] block partials
// then cascaded; the 8 elements after the last whole lane step summed on their own and added.
// CHECK: #[[LANES:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 832 + d2 * 16 + d3)>
// CHECK: tensor.extract_slice %arg0[0, 0] [3, 4992] [1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[LANES]],
// CHECK-SAME: tensor<52xf32>) outs(%{{[0-9]+}} : tensor<3x6x16xf32>)
// CHECK: tensor.extract_slice %arg0[0, 4992] [3, 8] [1, 1]
// CHECK: arith.addf %in, %in_{{[0-9]+}} : f32
func.func @main(%arg0: tensor<3x5000xf32>) -> tensor<3xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "sum"} : (tensor<3x5000xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----
// A max takes one block of any length (exact in any order): 62 lane steps over the first 992
// of 1000, the 8 left combined with maximumf (NaN propagates whichever lane meets it).
// CHECK: #[[LANES:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 * 992 + d2 * 16 + d3)>
// CHECK: %[[NEGINF:cst[_0-9]*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32) outs(%{{[0-9]+}} : tensor<3x1x16xf32>)
// CHECK: tensor<62xf32>) outs(%{{[0-9]+}} : tensor<3x1x16xf32>)
// CHECK: arith.maximumf %out, %in : f32
// CHECK: tensor.extract_slice %arg0[0, 992] [3, 8] [1, 1]
// CHECK: arith.maximumf %in, %in_{{[0-9]+}} : f32
func.func @main(%arg0: tensor<3x1000xf32>) -> tensor<3xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "max"} : (tensor<3x1000xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----
// Short rows (under two lane steps) and integer sums keep the generic rule: one running value.
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x31xf32>)
// CHECK-NOT: tensor<4x1x16xf32>
func.func @main(%arg0: tensor<4x31xf32>) -> tensor<4xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x31xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----
// Rows of 1000 on the thread pool: the lane part and the rest are subviews of whole rows
// (columns 0..992 and 992..1000 of every row), so all the nests stay one row-aligned group: one
// torch_parallel_for, its body running them row block by row block.
// PAR: memref.subview %arg0[0, 0] [4096, 992] [1, 1]
// PAR: memref.subview %arg0[0, 992] [4096, 8] [1, 1]
// PAR: call @torch_parallel_for
// PAR-NOT: call @torch_parallel_for
// PAR: func.func private @torch_parallel_for
func.func @main(%arg0: tensor<4096x1000xf32>) -> tensor<4096xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 1>, kind = "max"} : (tensor<4096x1000xf32>) -> tensor<4096xf32>
  return %0 : tensor<4096xf32>
}

// -----
// A sum over H and W of an NHWC tensor (a channels-last batch norm's per-channel sums) keeps the
// channels innermost: loops (n, h, w, c), the reduced dims between the kept ones, so the inner
// loop walks memory contiguously into one accumulator row (vector code), and the outer loop is
// parallel (the nest runs on the thread pool). The generic rule's order, (n, c, h, w), walked
// the tensor with a stride of C. The second sum, over N alone, has no kept dim before it: the
// usual order (c, n).
// CHECK: #[[IN:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK: #[[ACC:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[ACC]]], iterator_types = ["parallel", "reduction", "reduction", "parallel"]}
// CHECK-SAME: ins(%arg0 : tensor<8x7x7x256xf32>) outs(%{{[0-9]+}} : tensor<8x256xf32>)
// CHECK: iterator_types = ["parallel", "reduction"]} ins(%{{[0-9]+}} : tensor<8x256xf32>) outs(%{{[0-9]+}} : tensor<256xf32>)
// LOOPS: memref.store %cst, %view[%{{.*}}] : memref<8x256xf32>
// LOOPS: scf.for %[[N:.*]] = %c0 to %c8
// LOOPS-NEXT: scf.for %[[H:.*]] = %c0 to %c7
// LOOPS-NEXT: scf.for %[[W:.*]] = %c0 to %c7
// LOOPS-NEXT: scf.for %[[C:.*]] = %c0 to %c256
// LOOPS-NEXT: memref.load %arg0[%[[N]], %[[H]], %[[W]], %[[C]]]
func.func @main(%arg0: tensor<8x7x7x256xf32>) -> tensor<256xf32> {
  %0 = "dynamo.reduce"(%arg0) {dims = array<i64: 0, 1, 2>, kind = "sum"} : (tensor<8x7x7x256xf32>) -> tensor<256xf32>
  return %0 : tensor<256xf32>
}
