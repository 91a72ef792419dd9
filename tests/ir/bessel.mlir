// RUN: dynamo-mlir dump %s --from dynamo --target cpu --stage linalg | check

// J0: in f64; below the switch (|x| <= 18) the power series runs in an scf.while until a term
// is negligible (1e-17 relative); above, the Hankel expansion (another while) with
// cos/sin of x - pi/4 and sqrt(2 / (pi x)); one rounding to f32 at the end.
// CHECK-DAG: %[[EPS:cst[_0-9]*]] = arith.constant 1.000000e-17 : f64
// CHECK-DAG: %[[SWITCH:cst[_0-9]*]] = arith.constant 1.800000e+01 : f64
// CHECK: ^bb0(%in: f32, %out: f32):
// CHECK-NEXT: %[[X:[0-9]+]] = arith.extf %in : f32 to f64
// CHECK-NEXT: %[[ABS:[0-9]+]] = math.absf %[[X]] : f64
// CHECK-NEXT: arith.cmpf ole, %[[ABS]], %[[SWITCH]] : f64
// CHECK: scf.while (%{{arg[0-9]+}} = %c0_i64, %[[TERM:arg[0-9]+]] = %{{[a-z_0-9]+}}, %[[SUM:arg[0-9]+]] =
// CHECK-NEXT: %[[T:[0-9]+]] = math.absf %[[TERM]] : f64
// CHECK-NEXT: %[[S:[0-9]+]] = math.absf %[[SUM]] : f64
// CHECK-NEXT: %[[TOL:[0-9]+]] = arith.mulf %[[S]], %[[EPS]] : f64
// CHECK-NEXT: arith.cmpf ole, %[[T]], %[[TOL]] : f64
// CHECK: scf.condition
// CHECK: } do {
// CHECK: scf.yield
// CHECK: scf.while
// CHECK: math.cos
// CHECK-NEXT: math.sin
// CHECK: math.sqrt
// CHECK: %[[Y:[0-9]+]] = arith.truncf %{{[0-9]+}} : f64 to f32
// CHECK-NEXT: linalg.yield %[[Y]] : f32
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.bessel_j0"(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----
// Chebyshev T_n(x): n as C's int64 conversion (out of range -> INT64_MIN), the cases n < 0,
// |x| == 1, n > 6 with |x| < 1 (cos(n acos x)), n == 0, n == 1; else the recurrence
// T_{k+1} = 2x T_k - T_{k-1} in an scf.while from k = 2 that stops at n or on NaN, each step
// fused in f64 and rounded to f32 (eager's FMA-contracted kernel).
// CHECK: ^bb0(%[[X:in]]: f32, %[[N:in_[0-9]+]]: f32, %out: f32):
// CHECK: %[[NI:[0-9]+]] = arith.fptosi %{{[0-9]+}} : f32 to i64
// CHECK: math.acos %[[X]] : f32
// CHECK: scf.while (%[[K:arg[0-9]+]] = %c2_i64, %[[PREV:arg[0-9]+]] = %{{cst[_0-9]*}}, %[[CUR:arg[0-9]+]] = %[[X]]) : (i64, f32, f32)
// CHECK: arith.cmpi slt, %[[K]], %{{[0-9]+}} : i64
// CHECK: arith.cmpf uno, %[[CUR]], %[[CUR]] : f32
// CHECK: } do {
// CHECK: %[[TWOX:[0-9]+]] = arith.addf %[[X]], %[[X]] : f32
// CHECK: %[[P:[0-9]+]] = arith.mulf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK-NEXT: %[[S:[0-9]+]] = arith.addf %[[P]], %{{[0-9]+}} : f64
// CHECK-NEXT: %[[NEXT:[0-9]+]] = arith.truncf %[[S]] : f64 to f32
// CHECK-NEXT: scf.yield %{{[0-9]+}}, %[[CUR]], %[[NEXT]] : i64, f32, f32
func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "dynamo.chebyshev_polynomial_t"(%arg0, %arg1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
