"""Per op: the dynamo-dialect IR and its linalg lowering (printed, checked) and numerics vs eager.

Each case compiles through torch.compile(backend="mlir") with a dump folder, so the IR checked is
exactly the IR that ran.
"""

import pytest
import torch
import torch.nn.functional as F

from helpers import assert_all_compiled, assert_close_to_float32, read_stage

r = torch.randn


def _pos(*shape):
    return torch.rand(*shape) + 0.1


# id, function, input factory, op expected in the dynamo IR, text expected in the linalg IR
CASES = [
    ("add", lambda a, b: a + b, lambda: (r(4, 8), r(4, 8)), '"dynamo.add"', "arith.addf"),
    ("sub_broadcast", lambda a, b: a - b, lambda: (r(4, 8), r(8)), '"dynamo.broadcast"', "arith.subf"),
    ("mul_scalar", lambda a: a * 3.0, lambda: (r(16),), '"dynamo.mul"', "arith.mulf"),
    ("div", lambda a, b: a / b, lambda: (r(4, 8), _pos(4, 8)), '"dynamo.div"', "arith.divf"),
    ("int_promotion", lambda a, b: a + b, lambda: (torch.randint(0, 9, (6,)), r(6)), '"dynamo.cast"', "arith.sitofp"),
    ("lt", lambda a, b: a < b, lambda: (r(5, 3), r(5, 3)), '"dynamo.compare"', "arith.cmpf olt"),
    ("where", lambda c, a, b: torch.where(c > 0, a, b), lambda: (r(4, 4), r(4, 4), r(4, 4)), '"dynamo.select"', "arith.select"),
    ("cast_bf16_roundtrip", lambda a: a.to(torch.bfloat16).to(torch.float32), lambda: (r(32),), '"dynamo.cast"', "arith.truncf"),
    ("exp", torch.exp, lambda: (r(64),), '"dynamo.exp"', "math.exp"),
    ("log", torch.log, lambda: (_pos(64),), '"dynamo.log"', "math.log"),
    ("tanh", torch.tanh, lambda: (r(64),), '"dynamo.tanh"', "math.tanh"),
    ("sigmoid", torch.sigmoid, lambda: (r(64),), '"dynamo.sigmoid"', "math.exp"),
    ("relu", torch.relu, lambda: (r(64),), '"dynamo.relu"', "arith.cmpf olt"),
    ("gelu", F.gelu, lambda: (r(64),), '"dynamo.gelu"', "math.erf"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda: (r(64),), '"dynamo.gelu_tanh"', "math.tanh"),
    ("sqrt", torch.sqrt, lambda: (_pos(64),), '"dynamo.sqrt"', "math.sqrt"),
    ("rsqrt", torch.rsqrt, lambda: (_pos(64),), '"dynamo.rsqrt"', "math.rsqrt"),
    ("pow", lambda a: torch.pow(a, 3.5), lambda: (_pos(64),), '"dynamo.pow"', "math.powf"),
    ("logaddexp2", torch.logaddexp2, lambda: (r(64) * 10, r(64) * 10), '"dynamo.logaddexp2"', "math.exp2"),
    # the cpu target's own matmul rule (library_matmul off): a generic with loops (i, k, j), see
    # codegen/cpu/rules.py
    ("matmul", torch.matmul, lambda: (r(16, 32), r(32, 8)), '"dynamo.matmul"', '"parallel", "reduction", "parallel"'),
    ("bmm", torch.bmm, lambda: (r(3, 16, 32), r(3, 32, 8)), '"dynamo.matmul"', '"parallel", "parallel", "reduction", "parallel"'),
    ("linear", F.linear, lambda: (r(4, 10), r(6, 10), r(6)), '"dynamo.matmul"', '"parallel", "reduction", "parallel"'),
    # with library_matmul (the default): the named ops, which become MKL calls (codegen/cpu/library.py)
    ("matmul_mkl", torch.matmul, lambda: (r(16, 32), r(32, 8)), '"dynamo.matmul"', "linalg.matmul"),
    ("bmm_mkl", torch.bmm, lambda: (r(3, 16, 32), r(3, 32, 8)), '"dynamo.matmul"', "linalg.batch_matmul"),
    ("linear_mkl", F.linear, lambda: (r(4, 10), r(6, 10), r(6)), '"dynamo.matmul"', "linalg.matmul"),
    ("sum", lambda a: a.sum(dim=1), lambda: (r(8, 16),), '"dynamo.reduce"', "reduction"),
    ("mean_keepdim", lambda a: a.mean(dim=-1, keepdim=True), lambda: (r(8, 16),), '"dynamo.reduce"', "reduction"),
    ("amax", lambda a: a.amax(dim=0), lambda: (r(8, 16),), '"dynamo.reduce"', "arith.maximumf"),
    ("max_dim", lambda a: a.max(dim=1), lambda: (r(8, 16),), '"dynamo.arg_reduce"', "linalg.index"),
    ("argmax", lambda a: a.argmax(dim=1), lambda: (r(8, 16),), '"dynamo.arg_reduce"', "linalg.index"),
    ("softmax", lambda a: torch.softmax(a, dim=-1), lambda: (r(8, 16),), '"dynamo.reduce"', "math.exp"),
    # SDPA's math form: rows 2 and 5 fully masked give zeros (their maximum is -inf)
    ("safe_softmax", lambda a: torch.ops.aten._safe_softmax(a.index_fill(0, torch.tensor([2, 5]), float("-inf")), -1),
     lambda: (r(8, 16),), '"dynamo.select"', "math.exp"),
    ("layer_norm", lambda a, w, b: F.layer_norm(a, (16,), w, b), lambda: (r(8, 16), r(16), r(16)), '"dynamo.rsqrt"', "math.rsqrt"),
    ("reshape", lambda a: a.reshape(4, 32) * 2, lambda: (r(8, 16),), '"dynamo.reshape"', "tensor.reshape"),
    ("transpose", lambda a: a.t() + 1, lambda: (r(8, 16),), '"dynamo.permute"', "linalg.transpose"),
    ("permute", lambda a: a.permute(2, 0, 1) * 1.5, lambda: (r(2, 3, 4),), '"dynamo.permute"', "linalg.transpose"),
    ("slice", lambda a: a[:, 2:10:2] + 1, lambda: (r(4, 16),), '"dynamo.slice"', "tensor.extract_slice"),
    ("select", lambda a: a[1] * 2, lambda: (r(4, 16),), '"dynamo.slice"', "tensor.extract_slice"),
    ("cat", lambda a, b: torch.cat([a, b], dim=1) * 2, lambda: (r(4, 3), r(4, 5)), '"dynamo.concat"', "tensor.insert_slice"),
    # an empty block last: nothing of it is inserted (at offset 3 of 3 the verifier refuses an insert)
    ("block_diag_empty", lambda a, b: torch.block_diag(a, b) * 2, lambda: (r(4, 3), r(0, 2)), '"dynamo.concat"',
     "tensor.insert_slice"),
    ("expand", lambda a: a.expand(4, 8) + 0, lambda: (r(1, 8),), '"dynamo.broadcast"', "linalg.generic"),
    ("pad", lambda a: F.pad(a, (1, 2)), lambda: (r(3, 4),), '"dynamo.pad"', "tensor.pad"),
    ("full", lambda a: a + torch.full((4,), 2.5), lambda: (r(4),), '"dynamo.constant"', "arith.constant"),
    ("arange", lambda a: a + torch.arange(8), lambda: (torch.randint(0, 5, (8,)),), '"dynamo.iota"', "linalg.index"),
    # our own convolution loops (library_matmul off); with it on, torch's kernel (codegen/cpu/library_conv.py)
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda: (r(2, 3, 8, 8), r(4, 3, 3, 3), r(4)),
     '"dynamo.conv2d"', "linalg.conv_2d_nchw_fchw"),
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, stride=2, groups=2), lambda: (r(2, 4, 9, 9), r(6, 2, 3, 3)),
     '"dynamo.conv2d"', "linalg.conv_2d_ngchw_gfchw"),
    ("conv2d_library", lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda: (r(2, 3, 8, 8), r(4, 3, 3, 3), r(4)),
     '"dynamo.conv2d"', "call @aoti_torch_cpu_convolution("),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda: (r(2, 3, 8, 8),), '"dynamo.pool2d"', "linalg.pooling_nchw_max"),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), lambda: (r(2, 3, 8, 8),), '"dynamo.pool2d"', "linalg.pooling_nchw_sum"),
    ("embedding", lambda w, i: F.embedding(i, w), lambda: (r(20, 6), torch.randint(0, 20, (3, 5))),
     '"dynamo.gather"', "tensor.extract"),
    ("gather", lambda x, i: torch.gather(x, 1, i), lambda: (r(4, 6), torch.randint(0, 6, (4, 3))),
     '"dynamo.gather_along"', "tensor.extract"),
    ("batch_norm_inference", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
     lambda: (r(2, 3, 4, 4), r(3), _pos(3), r(3), r(3)), '"dynamo.rsqrt"', "math.rsqrt"),
]


# Cases of our own matmul and convolution loops turn the library off; the library cases' matmuls
# run as MKL calls, their convolutions as torch's.
CASE_OPTIONS = {name: {"library_matmul": False} for name in ("matmul", "bmm", "linear", "conv2d", "conv2d_groups")}
CASE_LIBRARY = {"matmul_mkl": {"aten.mm.default": 1}, "bmm_mkl": {"aten.bmm.default": 1},
                "linear_mkl": {"aten.mm.default": 1},  # linear: addmm -> mm, then the bias in our loops
                "conv2d_library": {"aten.convolution.default": 1}}  # the bias in our loops


@pytest.mark.parametrize("name,fn,make_inputs,dialect_op,linalg_text", CASES, ids=[c[0] for c in CASES])
def test_op(tmp_path, name, fn, make_inputs, dialect_op, linalg_text):
    torch.manual_seed(0)
    inputs = make_inputs()
    expected = fn(*inputs)
    options = {"dump_dir": str(tmp_path), **CASE_OPTIONS.get(name, {})}
    got = torch.compile(fn, backend="mlir", options=options)(*inputs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    library = CASE_LIBRARY.get(name)
    assert_all_compiled(min_ops=0 if library else 1, library=library)
    assert dialect_op in read_stage(str(tmp_path), "dynamo")
    linalg = read_stage(str(tmp_path), "linalg")
    assert linalg_text in linalg
    assert '"dynamo.' not in linalg  # every dialect op was lowered


HALF_CASES = [
    ("amax_bf16", lambda x: x.amax(dim=1), torch.bfloat16),
    ("max_dim_bf16", lambda x: x.max(dim=1)[0], torch.bfloat16),
    ("min_f16", lambda x: x.amin(dim=0), torch.float16),
    ("bf16_to_f16", lambda x: x.half() * 2, torch.bfloat16),
    ("f16_to_bf16", lambda x: x.to(torch.bfloat16) + 1, torch.float16),
]


@pytest.mark.parametrize("name,fn,dtype", HALF_CASES, ids=[c[0] for c in HALF_CASES])
def test_half_precision_ops_compile_without_libcalls(name, fn, dtype):
    """x86 has no bf16/f16 arithmetic: these once reached the JIT as compiler-rt libcalls it
    cannot resolve, and the process crashed. They must compile and match eager exactly: each is
    a selection, a conversion or one operation rounded once, which has one answer on every CPU."""
    x = torch.randn(6, 10).to(dtype)
    got = torch.compile(fn, backend="mlir", options={"strict": True})(x)
    assert torch.equal(got, fn(x))
    assert_all_compiled()


EMPTY_SLICE_CASES = [
    ("split_with_empty_piece", lambda x: torch.split_with_sizes(x, [1, 4, 0], dim=1), (5, 5, 5)),
    ("glu_of_empty_batch", lambda x: torch.nn.functional.glu(x, 1), (0, 2)),
    ("circular_pad_of_empty_batch", lambda x: torch.nn.functional.pad(x, (1, 2), mode="circular"), (0, 3, 3)),
]


@pytest.mark.parametrize("name,fn,shape", EMPTY_SLICE_CASES, ids=[c[0] for c in EMPTY_SLICE_CASES])
def test_slices_with_no_elements_compile(name, fn, shape):
    """tensor.extract_slice rejects the offset of an empty slice of an empty dim (or one that
    starts at the end); such slices once failed the whole partition."""
    x = torch.randn(shape)
    got = torch.compile(fn, backend="mlir", options={"strict": True})(x)
    torch.testing.assert_close(got, fn(x))
    assert_all_compiled()


# Tiny arguments, where a formula like exp(x) - 1 or (e^x - e^-x) / 2 cancels to 0, and powers of
# two, which exp2 must give exactly: each once came out wrong (LLVM's expm1/log1p lowering and
# MLIR's math-expand-ops rewrite).
PRECISION_CASES = ["expm1", "log1p", "tanh", "sinh", "asinh", "atanh", "exp2", "sigmoid", "sin", "erf"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", PRECISION_CASES)
def test_math_is_accurate_to_an_ulp_or_two_including_tiny_arguments(name, dtype):
    fn = getattr(torch, name)
    x = torch.cat([torch.linspace(-0.99, 0.99, 397, dtype=dtype),
                   torch.tensor([1e-30, -1e-12, 1e-7, 0.0, -0.0], dtype=dtype)])
    if name == "exp2":
        x = torch.arange(-140, 128, dtype=dtype)
    got = torch.compile(fn, backend="mlir", options={"strict": True})(x)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got, fn(x), rtol=2 * eps, atol=0)
    if name == "exp2":
        assert torch.equal(got, fn(x))
    assert_all_compiled()


def test_frexp_is_exact_including_zero_inf_nan_and_subnormals():
    special = [float("inf"), -float("inf"), float("nan"), 0.0, -0.0, 1e-40, 2.0**-126, 3.4e38, -3.0, 0.5]
    x = torch.cat([torch.tensor(special), torch.randn(500) * 10.0 ** torch.randint(-30, 30, (500,))])
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        xd = x.to(dtype)
        mantissa, exponent = torch.compile(torch.frexp, backend="mlir", options={"strict": True})(xd)
        expected = torch.frexp(xd)
        assert torch.equal(exponent, expected.exponent)
        torch.testing.assert_close(mantissa, expected.mantissa, rtol=0, atol=0, equal_nan=True)
        assert_all_compiled()
        torch._dynamo.reset()


def test_double_to_bfloat16_rounds_through_float_like_c10():
    # fptrunc f64 -> bf16 once became a compiler-rt call (__truncdfbf2) missing from the JIT.
    x = torch.randn(1000, dtype=torch.float64) * 1e3
    fn = lambda x: (x * 3).to(torch.bfloat16)
    assert torch.equal(torch.compile(fn, backend="mlir", options={"strict": True})(x), fn(x))
    assert_all_compiled(min_ops=2)


NONZERO_STATIC_CASES = [
    (torch.tensor([[0, 1.0], [2, 0]]), 3, -1), (torch.tensor([[0, 1.0], [2, 0]]), 1, -1),
    (torch.tensor([1, 0, 3]), 5, 0), (torch.zeros(4), 2, -1), (torch.tensor(2.0), 2, -1),
]


@pytest.mark.parametrize("x,size,fill", NONZERO_STATIC_CASES)
def test_nonzero_static_matches_eager(x, size, fill):
    fn = lambda x: torch.nonzero_static(x, size=size, fill_value=fill)
    assert torch.equal(torch.compile(fn, backend="mlir", options={"strict": True})(x), fn(x))
    assert_all_compiled()


def test_nonzero_static_of_a_random_3d_tensor_is_compiled():
    x = torch.randn(3, 4, 5).round()  # about a third zeros
    fn = lambda x: torch.nonzero_static(x, size=40, fill_value=7)
    assert torch.equal(torch.compile(fn, backend="mlir")(x), fn(x))
    assert_all_compiled()


def test_movement_of_a_transposed_value_compiles():
    """diagonal/flip read a value, whatever its strides (a column-major LU factor's diagonal in
    det's backward ran eagerly)."""
    x = r(4, 5)
    by_value = lambda x: (x.mT.diagonal(1) * 2, x.mT.flip(0) + 1)
    for a, e in zip(torch.compile(by_value, backend="mlir", dynamic=False)(x), by_value(x)):
        torch.testing.assert_close(a, e)
    s = assert_all_compiled(min_ops=4)
    assert {"aten.diagonal.default", "aten.flip.default"} <= set(s["compiled_ops"]), s["compiled_ops"]


def test_logaddexp2_matches_eager_including_nan_inf_and_half_types(tmp_path):
    """dynamo.logaddexp2 (not torch's decomposition): NaN wherever eager has one, the same
    infinities (equal infinities give themselves), and max(a, b) + log2(1 + 2^-|a - b|) within two
    ulps of the larger operand (eager cancels the same way where the result is near 0). Half
    types: against the float32 computation rounded once."""
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([inf, -inf, nan, 0.0, -0.0, 1.0, -1.0, 100.0, -100.0, 1e-30, 3e38, -3e38, 30.0])
    pairs = torch.cartesian_prod(special, special)
    torch.manual_seed(0)
    a = torch.cat([pairs[:, 0], r(1000) * 10, r(200) * 1e-3, torch.linspace(-60, 60, 241)])
    b = torch.cat([pairs[:, 1], r(1000) * 10, r(200) * 1e-3, torch.linspace(60, -60, 241)])
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        torch._dynamo.reset()
        x, y = a.to(dtype), b.to(dtype)
        dump = tmp_path / str(dtype)
        got = torch.compile(torch.logaddexp2, backend="mlir", options={"strict": True, "dump_dir": str(dump)})(x, y)
        assert_all_compiled()
        assert '"dynamo.logaddexp2"' in read_stage(str(dump), "dynamo")
        expected = torch.logaddexp2(x, y)
        assert torch.equal(got.isnan(), expected.isnan())
        inf_mask = expected.isinf()
        assert torch.equal(got[inf_mask], expected[inf_mask])
        finite = expected.isfinite()
        if dtype == torch.bfloat16:
            assert_close_to_float32(got[finite], torch.logaddexp2(x.float(), y.float())[finite], magnitude_rtol=1e-5)
            continue
        scale = torch.maximum(torch.maximum(x.abs(), y.abs()), expected.abs())[finite]
        err = (got - expected).abs()[finite]
        assert (err <= 2 * torch.finfo(dtype).eps * scale).all(), float((err / scale).max())
