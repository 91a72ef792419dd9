"""cpu target: float32/float64 matmuls as calls to MKL's sgemm_/dgemm_ (codegen/cpu/library.py),
convolutions as calls to torch's own kernel (codegen/cpu/library_conv.py).

Numerics against eager for every shape the library is handed (matmul: plain, transposed, batched,
sliced operands, f64; convolution: stride, padding, dilation, groups, bias, batch 1 and 8, 1-d to
3-d, sliced and channels-last inputs, f64, the CNN), what is counted as a library call, what stays
in our loops (integers, dynamic shapes, the off switch), the call itself in the llvm stage's IR,
and a failed call raising."""

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import dynamo_mlir
from dynamo_mlir.codegen import config
from dynamo_mlir.codegen.target import get_target
from dynamo_mlir.frontend.compile import build_region
from dynamo_mlir.tools.models import cnn, randomize_batchnorm
from helpers import assert_all_compiled, assert_close_to_float32, compile_and_run, read_stage

MM = {"aten.mm.default": 1}
BMM = {"aten.bmm.default": 1}


def _check(fn, *inputs, library, options=None, rtol=None, atol=None):
    got = compile_and_run(fn, *inputs, options=options)
    torch.testing.assert_close(got, fn(*inputs), rtol=rtol, atol=atol)
    return assert_all_compiled(min_ops=0, library=library)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mm_matches_eager(dtype):
    a, b = torch.randn(37, 300, dtype=dtype), torch.randn(300, 53, dtype=dtype)
    _check(torch.mm, a, b, library=MM)


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_mm_transposed_inputs(which):
    """A transposed operand is read in place ('T'), not copied first."""
    a = torch.randn(40, 24) if which in ("a", "both") else torch.randn(24, 40)
    b = torch.randn(33, 40) if which in ("b", "both") else torch.randn(40, 33)

    def fn(x, y):
        return (x.t() if which in ("a", "both") else x) @ (y.t() if which in ("b", "both") else y)

    _check(fn, a, b, library=MM)


def test_mm_of_a_slice():
    """An operand that is a column slice of a wider tensor (ld larger than its width)."""
    def fn(x, y):
        return torch.mm(x[:, 3:67], y) + 1

    _check(fn, torch.randn(20, 80), torch.randn(64, 16), library=MM)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_bmm_matches_eager(dtype):
    a, b = torch.randn(3, 17, 29, dtype=dtype), torch.randn(3, 29, 11, dtype=dtype)
    _check(torch.bmm, a, b, library=BMM)


def test_bmm_transposed_input():
    """attention's q @ k^T: the transpose of the last two dims is read in place."""
    q, k = torch.randn(4, 16, 8), torch.randn(4, 16, 8)
    _check(lambda x, y: torch.bmm(x, y.transpose(1, 2)).softmax(-1), q, k, library=BMM)


def test_addmm_matches_eager():
    bias, a, b = torch.randn(16), torch.randn(8, 32), torch.randn(32, 16)
    _check(lambda c, x, y: torch.addmm(c, x, y, beta=0.5, alpha=2.0), bias, a, b, library=MM)  # addmm decomposes to mm, mul, add


def test_linear_matches_eager():
    lin = torch.nn.Linear(64, 48).double()
    s = _check(lin, torch.randn(10, 64, dtype=torch.float64), library=MM)  # addmm decomposes to mm, mul, add
    assert s["ops_library"] == 1


def test_integer_matmul_stays_in_our_loops():
    a, b = torch.randint(-5, 5, (6, 7)), torch.randint(-5, 5, (7, 3))
    _check(torch.mm, a, b, library={})


@pytest.mark.parametrize("fn", [torch.mm, torch.bmm], ids=["mm", "bmm"])
def test_dynamic_shapes_call_blas_with_sizes_and_strides_read_at_run_time(fn, tmp_path):
    """Every size `?` (dynamic=True): m, n, k, the leading dimensions and a batch's stride are
    read off the buffers when the call runs (memref.dim, extract_strided_metadata)."""
    compiled = torch.compile(fn, backend="mlir", dynamic=True, options={"dump_dir": str(tmp_path)})
    batch = (3,) if fn is torch.bmm else ()
    for m, k, n in ((5, 12, 7), (9, 4, 11), (64, 33, 2)):
        a, b = torch.randn(*batch, m, k), torch.randn(*batch, k, n)
        torch.testing.assert_close(compiled(a, b), fn(a, b))
    assert_all_compiled(min_ops=0, library=MM if fn is torch.mm else BMM)
    assert dynamo_mlir.stats()["graphs"] == 1, dynamo_mlir.explain()
    loops = read_stage(str(tmp_path), "loops")
    assert "call @sgemm_(" in loops and "extract_strided_metadata" in loops and "memref.dim" in loops, loops


def test_library_call_is_listed_by_explain():
    compile_and_run(torch.mm, torch.randn(8, 8), torch.randn(8, 8))
    assert "aten.mm.default x1 (1 as library call)" in dynamo_mlir.explain()


@pytest.mark.parametrize("on", [True, False])
def test_switch_in_the_llvm_stage(tmp_path, on):
    """library_matmul on: one sgemm_ call in the llvm stage; off: our own loops, no call."""
    a, b = torch.randn(16, 200), torch.randn(200, 24)
    _check(torch.mm, a, b, options={"dump_dir": str(tmp_path), "library_matmul": on}, library=MM if on else {})
    llvm = read_stage(str(tmp_path), "llvm")
    assert ("llvm.call @sgemm_(" in llvm) == on
    assert ("llvm.func @sgemm_(" in llvm) == on


def test_batch_matmul_calls_once_per_batch(tmp_path):
    """A batch matmul is a loop around one dgemm_ call."""
    _check(torch.bmm, torch.randn(5, 4, 6, dtype=torch.float64), torch.randn(5, 6, 3, dtype=torch.float64),
           options={"dump_dir": str(tmp_path)}, library=BMM)
    loops = read_stage(str(tmp_path), "loops")
    assert loops.count("call @dgemm_(") == 1 and "scf.for" in loops


# ----------------------------------------------------------------------------- convolution
# Float convolutions as torch's own kernel through its C shim (codegen/cpu/library_conv.py).

CONV = {"aten.convolution.default": 1}


def _check_conv(fn, *inputs, library=CONV, options=None):
    return _check(fn, *inputs, library=library, options=options, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), ((2, 1), (0, 3), (1, 2), 1), (1, 1, 1, 2), (2, 1, 1, 4)])
def test_conv2d_matches_eager(batch, bias, stride, padding, dilation, groups):
    x, w = torch.randn(batch, 8, 13, 15), torch.randn(12, 8 // groups, 3, 3)
    b = torch.randn(12) if bias else None

    def conv(x, w):
        return F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)

    _check_conv(conv, x, w)


def test_depthwise_conv2d_matches_eager():
    conv = torch.nn.Conv2d(16, 16, 5, padding=2, groups=16)
    _check_conv(conv, torch.randn(4, 16, 20, 20))


def test_conv2d_of_a_channels_last_input():
    conv = torch.nn.Conv2d(6, 10, 3, padding=1)
    _check_conv(conv, torch.randn(2, 6, 9, 11).to(memory_format=torch.channels_last))


def test_conv2d_of_a_slice_reads_it_in_place(tmp_path):
    """A strided view (a slice of a wider input) is described to torch by its strides, not copied."""
    def fn(x, w):
        return F.conv2d(x[:, :, 2:18, 1:19], w, stride=2, padding=1, groups=2)

    s = _check_conv(fn, torch.randn(2, 6, 20, 20), torch.randn(4, 3, 3, 3), options={"dump_dir": str(tmp_path)})
    assert s["compiled_ops"] == {"aten.slice.Tensor": 2}
    loops = read_stage(str(tmp_path), "loops")
    assert "memref.copy" not in loops and "strided<[2400, 400, 20, 1], offset: 41>" in loops


def test_conv2d_float64_matches_eager():
    x, w = torch.randn(3, 4, 10, 10, dtype=torch.float64), torch.randn(5, 4, 3, 3, dtype=torch.float64)
    _check_conv(lambda x, w: F.conv2d(x, w, padding=1), x, w)


def test_conv1d_and_conv3d_match_eager():
    _check_conv(torch.nn.Conv1d(4, 6, 5, stride=2, padding=2, dilation=3), torch.randn(3, 4, 40))
    torch._dynamo.reset()
    dynamo_mlir.reset()
    _check_conv(torch.nn.Conv3d(4, 6, 3, stride=(1, 2, 2), padding=1, groups=2), torch.randn(2, 4, 6, 8, 8))


def test_bfloat16_conv_computes_in_float32():
    """Half types are converted to float32 by the importer: that float32 convolution is the library's."""
    x, w = torch.randn(2, 4, 9, 9), torch.randn(6, 4, 3, 3)
    got = compile_and_run(lambda x, w: F.conv2d(x, w, padding=1), x.bfloat16(), w.bfloat16())
    assert_close_to_float32(got, F.conv2d(x.bfloat16().float(), w.bfloat16().float(), padding=1), magnitude_rtol=1e-5)
    assert_all_compiled(min_ops=0, library=CONV)


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 1, 1), (2, 3, 1), (1, 2, 2)])
def test_conv_backward_is_torch_convolution_backward(stride, padding, dilation, tmp_path):
    """The input and weight gradients of a float32 convolution are torch's convolution_backward,
    one call each (library_conv.py), not convolutions of our own or torch's forward kernel, and
    give eager's gradients."""
    torch.manual_seed(0)
    x, w = torch.randn(4, 3, 13, 13, requires_grad=True), torch.randn(8, 3, 3, 3, requires_grad=True)
    fn = lambda x, w: F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation).tanh().sum()  # noqa: E731
    compiled = torch.compile(fn, backend="mlir", options={"strict": True, "dump_dir": str(tmp_path)})
    got = torch.autograd.grad(compiled(x, w), (x, w))
    want = torch.autograd.grad(fn(x, w), (x, w))
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
    s = dynamo_mlir.stats()
    assert s["library_ops"] == {"aten.convolution.default": 1, "aten.convolution_backward.default": 1}, dynamo_mlir.explain()
    backward = "".join(open(p).read() for p in tmp_path.glob("*backward*.linalg.*"))
    assert backward.count("call @aoti_torch_cpu_convolution_backward(") == 2, backward
    assert "call @aoti_torch_cpu_convolution(" not in backward and "linalg.conv" not in backward, backward


@pytest.mark.parametrize("stride,padding,dilation", [(2, 1, 1), (2, 3, 1), (1, 2, 2), (3, 4, 1)])
def test_conv_backward_generic_rule_matches_eager(stride, padding, dilation):
    """Without the library the gradients are the generic rule's convolutions in our own loops
    (lowering/rules/conv.py), padding beyond the window's reach included (the spread gradient
    cut instead of padded)."""
    torch.manual_seed(0)
    x, w = torch.randn(2, 3, 13, 13, requires_grad=True), torch.randn(4, 3, 3, 3, requires_grad=True)
    fn = lambda x, w: F.conv2d(x, w, stride=stride, padding=padding, dilation=dilation).tanh().sum()  # noqa: E731
    compiled = torch.compile(fn, backend="mlir", options={"strict": True, "library_matmul": False})
    got = torch.autograd.grad(compiled(x, w), (x, w))
    want = torch.autograd.grad(fn(x, w), (x, w))
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0 and s["library_ops"] == {}, dynamo_mlir.explain()
    assert s["compiled_ops"].get("aten.convolution_backward.default") == 1, dynamo_mlir.explain()


def test_integer_conv_stays_in_our_loops():
    x, w = torch.randint(-3, 3, (1, 2, 6, 6)), torch.randint(-3, 3, (3, 2, 3, 3))
    got = compile_and_run(lambda x, w: torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                          x, w)
    torch.testing.assert_close(got, F.conv2d(x.double(), w.double(), padding=1).long())
    s = assert_all_compiled(library={})
    assert "aten.convolution.default" in s["compiled_ops"]


def test_cnn_convolutions_are_library_calls_and_the_rest_compiled():
    torch.manual_seed(0)
    model = randomize_batchnorm(cnn()).eval()
    with torch.no_grad():
        s = _check(model, torch.randn(8, 3, 32, 32), library={"aten.convolution.default": 2, "aten.mm.default": 1},
                   rtol=1e-4, atol=1e-5)
    assert s["ops_fallback"] == 0 and s["ops_library"] == 3
    compiled = s["compiled_ops"]
    assert compiled["aten.relu.default"] == 2 and compiled["aten.max_pool2d_with_indices.default"] == 2


def test_cnn_with_the_switch_off_is_all_our_loops():
    torch.manual_seed(0)
    model = randomize_batchnorm(cnn()).eval()
    with torch.no_grad():
        s = _check(model, torch.randn(2, 3, 32, 32), library={}, options={"library_matmul": False},
                   rtol=1e-4, atol=1e-5)
    assert s["ops_library"] == 0 and s["ops_fallback"] == 0
    assert s["compiled_ops"]["aten.convolution.default"] == 2


@pytest.mark.parametrize("on", [True, False])
def test_conv_switch_in_the_llvm_stage(tmp_path, on):
    """library_matmul on: the final LLVM module calls torch's convolution; off: our loops, no call."""
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    _check_conv(conv, torch.randn(2, 3, 12, 12), options={"dump_dir": str(tmp_path), "library_matmul": on},
                library=CONV if on else {})
    llvm = read_stage(str(tmp_path), "llvm")
    assert ("llvm.call @aoti_torch_cpu_convolution(" in llvm) == on
    assert ("llvm.func @aoti_torch_cpu_convolution(" in llvm) == on
    assert ("linalg.conv_2d_nchw_fchw" in read_stage(str(tmp_path), "linalg")) != on


def _loaded_conv_region():
    """The cpu target's callable for one aten.convolution graph, as build_region loads it."""
    def conv(x, w):
        return torch.ops.aten.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)

    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    target = get_target("cpu")
    return build_region(make_fx(conv)(x, w), target, config.resolve({"target": "cpu"}), "conv"), x, w, conv(x, w)


def test_a_failed_library_call_raises():
    """A call whose status is not success (torch has logged the C++ exception) raises after the
    call, once: the runtime reads the status the generated code or-ed into the module's global."""
    region, x, w, want = _loaded_conv_region()
    torch.testing.assert_close(region(x, w)[0], want, rtol=1e-4, atol=1e-5)
    region._status.value = 1  # as a failed call leaves it
    with pytest.raises(RuntimeError, match="torch library call of the compiled code failed"):
        region(x, w)
    torch.testing.assert_close(region(x, w)[0], want, rtol=1e-4, atol=1e-5)  # the status was reset


class TwoHeads(torch.nn.Module):
    """Two linears of one output shape off one input: CSE shares their zero accumulator."""

    def __init__(self):
        super().__init__()
        self.k, self.v = torch.nn.Linear(64, 32), torch.nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.k(x)) + self.v(x).sigmoid()


def test_linears_over_a_dynamic_row_count_call_sgemm(tmp_path):
    """Rows `?`, features static: the sizes go to sgemm_ at run time (a memref.dim each), the
    strides are static; one graph serves every row count."""
    torch.manual_seed(0)
    model = TwoHeads().eval()
    compiled = torch.compile(model, backend="mlir", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        for n in (5, 9, 300):
            x = torch.randn(n, 64)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    s = assert_all_compiled(min_ops=0, library={"aten.mm.default": 2})
    assert s["graphs"] == 1, dynamo_mlir.explain()
    loops = read_stage(str(tmp_path), "loops")
    assert "tensor<?x64xf32>" in read_stage(str(tmp_path), "linalg")
    assert loops.count("call @sgemm_(") == 2 and "memref.dim" in loops, loops
