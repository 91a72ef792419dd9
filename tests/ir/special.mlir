// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// lgamma: computed in f64 and rounded once to f32. x < 0 reflects to 1 - x; the argument is
// shifted up to 10 (unrolled steps, their product divided out through its log), then
// Stirling's series; the reflection uses sin(pi (x - round(x))), exactly 0 at integers; +-inf
// gives +inf.
// CHECK-DAG: %[[INF:cst[_0-9]*]] = arith.constant 0x7FF0000000000000 : f64
// CHECK-DAG: %[[PI:cst[_0-9]*]] = arith.constant 3.1415926535897931 : f64
// CHECK-DAG: %[[TEN:cst[_0-9]*]] = arith.constant 1.000000e+01 : f64
// CHECK: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %[[X:[0-9]+]] = arith.extf %in : f32 to f64
// CHECK-NEXT: %[[NEG:[0-9]+]] = arith.cmpf olt, %[[X]], %{{cst[_0-9]*}} : f64
// CHECK: arith.cmpf olt, %{{[0-9]+}}, %[[TEN]] : f64
// CHECK: math.log
// CHECK: %[[R:[0-9]+]] = math.roundeven %[[X]] : f64
// CHECK-NEXT: %[[FRAC:[0-9]+]] = arith.subf %[[X]], %[[R]] : f64
// CHECK-NEXT: %[[ARG:[0-9]+]] = arith.mulf %[[FRAC]], %[[PI]] : f64
// CHECK-NEXT: math.sin %[[ARG]] : f64
// CHECK: arith.select %[[NEG]], %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK: arith.cmpf oeq, %{{[0-9]+}}, %[[INF]] : f64
// CHECK: %[[Y:[0-9]+]] = arith.truncf %{{[0-9]+}} : f64 to f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.lgamma"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----
// nextafter: integer steps on the bit pattern in the element's own width (no f64), with the
// smallest subnormal carrying y's sign from 0, y itself when x == y, NaN when either is NaN.
// CHECK-DAG: %[[ONE:c1_i32]] = arith.constant 1 : i32
// CHECK-DAG: %[[SIGN:c-2147483648_i32]] = arith.constant -2147483648 : i32
// CHECK: ^bb0(%[[X:in]]: f32, %[[Y:in_0]]: f32, %out: f32):
// CHECK-NEXT: %[[XBITS:[0-9]+]] = arith.bitcast %[[X]] : f32 to i32
// CHECK-NEXT: %[[YBITS:[0-9]+]] = arith.bitcast %[[Y]] : f32 to i32
// CHECK-NEXT: %[[YSIGN:[0-9]+]] = arith.andi %[[YBITS]], %[[SIGN]] : i32
// CHECK-NEXT: arith.ori %[[YSIGN]], %[[ONE]] : i32
// CHECK: %[[UP:[0-9]+]] = arith.addi %[[XBITS]], %[[ONE]] : i32
// CHECK-NEXT: %[[DOWN:[0-9]+]] = arith.subi %[[XBITS]], %[[ONE]] : i32
// CHECK: arith.cmpf oeq, %[[X]], %[[Y]] : f32
// CHECK: arith.cmpf uno, %[[X]], %[[Y]] : f32
// CHECK-NOT: f64
func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.nextafter"(%arg0, %arg1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----
// erfinv: Newton steps in f64 (unrolled, no loop), from erfc's log in the tails.
// CHECK: arith.extf %in : f32 to f64
// CHECK: math.erfc
// CHECK: math.erf
// CHECK-NOT: scf.
// CHECK: arith.truncf %{{[0-9]+}} : f64 to f32
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.erfinv"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
