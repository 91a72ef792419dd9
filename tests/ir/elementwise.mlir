// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage loops | check --prefix LOOPS
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage llvm | check --prefix LLVM
// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage llvm | check --prefix NO-BF16

// An f32 add is one all-parallel linalg.generic whose body adds the two inputs' elements.
// CHECK: #[[MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[INIT:[0-9]+]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[MAP]], #[[MAP]], #[[MAP]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%[[INIT]] : tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[A:in[_0-9]*]]: f32, %[[B:in[_0-9]*]]: f32, %out: f32):
// CHECK-NEXT: %[[SUM:[0-9]+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[SUM]] : f32
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----
// Integers take the integer table: addi, and floor division rounds toward -inf (floordivsi).
// CHECK: ^bb0(%[[A:in[_0-9]*]]: i32, %[[B:in[_0-9]*]]: i32, %out: i32):
// CHECK-NEXT: arith.addi %[[A]], %[[B]] : i32
// CHECK: arith.floordivsi %{{.*}}, %{{.*}} : i32
// CHECK-NOT: arith.divsi
func.func @main(%arg0: tensor<4x8xi32>, %arg1: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %0 = "dynamo.add"(%arg0, %arg1) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  %1 = "dynamo.floordiv"(%0, %arg1) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  return %1 : tensor<4x8xi32>
}

// -----
// compare -> an i1 tensor from an ordered float predicate; select -> arith.select on it.
// CHECK: %[[MASK:[0-9]+]] = linalg.generic
// CHECK-SAME: outs(%{{[0-9]+}} : tensor<4x8xi1>)
// CHECK-NEXT: ^bb0(%[[A:in[_0-9]*]]: f32, %[[B:in[_0-9]*]]: f32, %out: i1):
// CHECK-NEXT: arith.cmpf ogt, %[[A]], %[[B]] : f32
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[MASK]], %arg0, %arg1 : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: ^bb0(%[[M:in[_0-9]*]]: i1, %[[X:in[_0-9]*]]: f32, %[[Y:in[_0-9]*]]: f32, %out: f32):
// CHECK-NEXT: arith.select %[[M]], %[[X]], %[[Y]] : f32
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.compare"(%arg0, %arg1) {predicate = "gt"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %1 = "dynamo.select"(%0, %arg0, %arg1) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----
// Unary bodies from the float table: sigmoid is 1 / (1 + exp(-x)), relu x < 0 ? 0 : x (as
// eager: -0.0 and NaN pass through).
// CHECK-DAG: %[[ZERO:cst[_0-9]*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:cst[_0-9]*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:[0-9]+]] = arith.negf %in : f32
// CHECK-NEXT: %[[EXP:[0-9]+]] = math.exp %[[NEG]] : f32
// CHECK-NEXT: %[[DEN:[0-9]+]] = arith.addf %[[EXP]], %[[ONE]] : f32
// CHECK-NEXT: arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK: %[[LT:[0-9]+]] = arith.cmpf olt, %in, %[[ZERO]] : f32
// CHECK-NEXT: arith.select %[[LT]], %[[ZERO]], %in : f32
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.sigmoid"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "dynamo.relu"(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----
// float -> int casts truncate toward zero (fptosi), as torch's .to(int) does.
// CHECK: ^bb0(%in: f32, %out: i32):
// CHECK-NEXT: arith.fptosi %in : f32 to i32
func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xi32> {
  %0 = "dynamo.cast"(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}

// -----
// Half precision as the frontend imports it: each op computes in f32 between explicit casts.
// At linalg, one generic per op; at loops, fused into one loop nest that still rounds the
// product to bf16 before exp reads it back (eager's rounding between the two ops); the f32 exp
// is expanded into arith (fast_math) and its result rounded to bf16 once.
// CHECK: arith.extf %in : bf16 to f32
// CHECK: arith.extf %in : bf16 to f32
// CHECK: arith.mulf %in, %in_0 : f32
// CHECK: arith.truncf %in : f32 to bf16
// CHECK: arith.extf %in : bf16 to f32
// CHECK: math.exp %in : f32
// CHECK: arith.truncf %in : f32 to bf16
// LOOPS: func.func @main(%arg0: memref<4x8xbf16>, %arg1: memref<4x8xbf16>, %arg2: memref<4x8xbf16>)
// LOOPS: scf.for %[[I:arg[0-9]+]] =
// LOOPS-NEXT: scf.for %[[J:arg[0-9]+]] =
// LOOPS: %[[P:[0-9]+]] = arith.mulf %{{[0-9]+}}, %{{[0-9]+}} : f32
// LOOPS-NEXT: %[[R:[0-9]+]] = arith.truncf %[[P]] : f32 to bf16
// LOOPS-NEXT: %[[W:[0-9]+]] = arith.extf %[[R]] : bf16 to f32
// LOOPS-NOT: math.exp
// LOOPS: math.fma
// LOOPS: %[[OUT:[0-9]+]] = arith.truncf %{{[0-9]+}} : f32 to bf16
// LOOPS-NEXT: memref.store %[[OUT]], %arg2[%[[I]], %[[J]]] : memref<4x8xbf16>
// LOOPS-NOT: scf.for
func.func @main(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = "dynamo.cast"(%arg0) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %1 = "dynamo.cast"(%arg1) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %2 = "dynamo.mul"(%0, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "dynamo.cast"(%2) : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %4 = "dynamo.cast"(%3) : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %5 = "dynamo.exp"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = "dynamo.cast"(%5) : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  return %6 : tensor<4x8xbf16>
}

// -----
// x86 has no bf16 arithmetic: the cpu llvm stage computes a bf16 op in f32 (widening by a
// 16-bit shift, rounding to nearest even with the 0x7FFF bias, NaN kept), never in bf16, and
// moves bf16 values as i16 bits (codegen/half_bits.py): no bf16 type is left for LLVM.
// LLVM: llvm.func @main(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr)
// LLVM: llvm.load %{{[0-9]+}} : !llvm.ptr -> i16
// LLVM: llvm.shl %{{[0-9]+}}, %{{[0-9]+}} : i32
// LLVM: %[[P:[0-9]+]] = llvm.fmul %{{[0-9]+}}, %{{[0-9]+}} : f32
// LLVM-NEXT: llvm.fcmp "une" %[[P]], %[[P]] : f32
// LLVM-NEXT: llvm.mlir.constant(32767 : i32) : i32
// LLVM: llvm.store %{{[0-9]+}}, %{{[0-9]+}} : i16, !llvm.ptr
// NO-BF16-NOT: bf16
func.func @main(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = "dynamo.mul"(%arg0, %arg1) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// -----
// logaddexp2 is max(a, b) + log2(1 + 2^-|a - b|), with Kahan's log1p (y where 1 + y rounds to 1,
// else log(1 + y) * y / ((1 + y) - 1)), and a itself where a == b is infinite (a - b is NaN).
// CHECK: ^bb0(%[[A:in[_0-9]*]]: f32, %[[B:in[_0-9]*]]: f32, %out: f32):
// CHECK-NEXT: %[[M:[0-9]+]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[D:[0-9]+]] = arith.subf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[ABS:[0-9]+]] = math.absf %[[D]] : f32
// CHECK-NEXT: %[[NEG:[0-9]+]] = arith.negf %[[ABS]] : f32
// CHECK-NEXT: %[[Y:[0-9]+]] = math.exp2 %[[NEG]] : f32
// CHECK: %[[LOG:[0-9]+]] = math.log %{{[0-9]+}} : f32
// CHECK: %[[LOG1P:[0-9]+]] = arith.select %{{[0-9]+}}, %[[Y]], %{{[0-9]+}} : f32
// CHECK-NEXT: %[[L2:[0-9]+]] = arith.mulf %[[LOG1P]], %{{cst[_0-9]*}} : f32
// CHECK-NEXT: %[[SUM:[0-9]+]] = arith.addf %[[M]], %[[L2]] : f32
// CHECK-NEXT: %[[EQ:[0-9]+]] = arith.cmpf oeq, %[[A]], %[[B]] : f32
// CHECK: %[[SAME_INF:[0-9]+]] = arith.andi %[[EQ]], %{{[0-9]+}} : i1
// CHECK-NEXT: %[[R:[0-9]+]] = arith.select %[[SAME_INF]], %[[A]], %[[SUM]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "dynamo.logaddexp2"(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
