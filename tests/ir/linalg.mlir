// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// Cholesky (lower, per batch): column j's diagonal is sqrt(a_jj - sum_k l_jk^2), the entries
// below it (a_ij - sum_k l_ik l_jk) / l_jj; info records the first column whose pivot is not
// positive (ule, so NaN counts too), 1-based, only while it is still 0.
// CHECK: %[[L0:[0-9]+]] = linalg.generic
// CHECK: scf.for %[[J:arg[0-9]+]] = %c0 to %c4 step %c1 iter_args(%[[L:arg[0-9]+]] = %[[L0]], %[[INFO:arg[0-9]+]] = %c0_i32) -> (tensor<1x4x4xf64>, i32)
// CHECK-NEXT: %[[AJJ:extracted[_0-9]*]] = tensor.extract %arg0[%c0, %[[J]], %[[J]]]
// CHECK-NEXT: %[[D:[0-9]+]] = scf.for %{{arg[0-9]+}} = %c0 to %[[J]] step %c1 iter_args(%{{arg[0-9]+}} = %[[AJJ]]) -> (f64)
// CHECK: arith.mulf %[[LJK:extracted[_0-9]*]], %[[LJK]] : f64
// CHECK: %[[BAD:[0-9]+]] = arith.cmpf ule, %[[D]], %{{cst[_0-9]*}} : f64
// CHECK: arith.cmpi eq, %[[INFO]], %c0_i32 : i32
// CHECK: %[[PIVOT:[0-9]+]] = math.sqrt %[[D]] : f64
// CHECK-NEXT: tensor.insert %[[PIVOT]] into %[[L]][%c0, %[[J]], %[[J]]]
// CHECK: arith.divf %{{[0-9]+}}, %[[PIVOT]] : f64
func.func @main(%arg0: tensor<1x4x4xf64>) -> (tensor<1x4x4xf64>, tensor<1xi32>) {
  %0:2 = "dynamo.cholesky"(%arg0) : (tensor<1x4x4xf64>) -> (tensor<1x4x4xf64>, tensor<1xi32>)
  return %0#0, %0#1 : tensor<1x4x4xf64>, tensor<1xi32>
}

// -----
// Lower-triangular solve by forward substitution, per right-hand-side column, on a copy of B:
// x_i = (b_i - sum_{k<i} a_ik x_k) / a_ii.
// CHECK: %[[X0:[0-9]+]] = bufferization.alloc_tensor() copy(%arg1) : tensor<1x4x2xf64>
// CHECK: scf.for %[[C:arg[0-9]+]] = %c0 to %c2
// CHECK-NEXT: scf.for %[[I:arg[0-9]+]] = %c0 to %c4 step %c1 iter_args(%[[X:arg[0-9]+]] =
// CHECK-NEXT: %[[B:extracted[_0-9]*]] = tensor.extract %[[X]][%c0, %[[I]], %[[C]]]
// CHECK-NEXT: %[[R:[0-9]+]] = scf.for %[[K:arg[0-9]+]] = %c0 to %[[I]] step %c1
// CHECK-NEXT: tensor.extract %arg0[%c0, %[[I]], %[[K]]]
// CHECK: %[[AII:extracted[_0-9]*]] = tensor.extract %arg0[%c0, %[[I]], %[[I]]]
// CHECK-NEXT: %[[XI:[0-9]+]] = arith.divf %[[R]], %[[AII]] : f64
// CHECK-NEXT: tensor.insert %[[XI]] into %[[X]][%c0, %[[I]], %[[C]]]
func.func @main(%arg0: tensor<1x4x4xf64>, %arg1: tensor<1x4x2xf64>) -> tensor<1x4x2xf64> {
  %0 = "dynamo.triangular_solve"(%arg0, %arg1) {unitriangular = 0 : i64, upper = 0 : i64} : (tensor<1x4x4xf64>, tensor<1x4x2xf64>) -> tensor<1x4x2xf64>
  return %0 : tensor<1x4x2xf64>
}

// -----
// LU with partial pivoting: the pivot row is the first row of largest |a_ij| (strict ogt),
// stored 1-based; rows swapped; a zero pivot leaves its column unscaled and sets info.
// CHECK: scf.for %[[J:arg[0-9]+]] = %c0 to %c4 step %c1 iter_args(%{{arg[0-9]+}} = %{{[0-9]+}}, %[[PIV:arg[0-9]+]] = %{{[0-9]+}}, %{{arg[0-9]+}} = %c0_i32)
// CHECK: %[[P:[0-9]+]]:2 = scf.for %{{arg[0-9]+}} = %[[J]] to %c4 step %c1
// CHECK: math.absf
// CHECK-NEXT: arith.cmpf ogt
// CHECK: %[[ONEBASED:[0-9]+]] = arith.addi %[[P]]#0, %c1 : index
// CHECK-NEXT: %[[P32:[0-9]+]] = arith.index_cast %[[ONEBASED]] : index to i32
// CHECK-NEXT: tensor.insert %[[P32]] into %[[PIV]][%c0, %[[J]]] : tensor<1x4xi32>
// CHECK: %[[ZERO:[0-9]+]] = arith.cmpf oeq, %{{extracted[_0-9]*}}, %{{cst[_0-9]*}} : f64
// CHECK: %[[Q:[0-9]+]] = arith.divf
// CHECK-NEXT: arith.select %[[ZERO]], %{{extracted[_0-9]*}}, %[[Q]] : f64
func.func @main(%arg0: tensor<1x4x4xf64>) -> (tensor<1x4x4xf64>, tensor<1x4xi32>, tensor<1xi32>) {
  %0:3 = "dynamo.lu_factor"(%arg0) : (tensor<1x4x4xf64>) -> (tensor<1x4x4xf64>, tensor<1x4xi32>, tensor<1xi32>)
  return %0#0, %0#1, %0#2 : tensor<1x4x4xf64>, tensor<1x4xi32>, tensor<1xi32>
}
