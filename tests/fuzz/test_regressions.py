"""Programs the fuzzer found wrong, minimised, each kept as the fuzzer printed it (`check` compares
outputs, inputs after the call and gradients with eager, as in the fuzzing run)."""

import torch
import torch.nn.functional as F  # noqa: F401 - the pasted programs use it

from .check import check


def test_zero_size_output_with_dynamic_dims_and_a_workspace():
    """A static zero-size result (0x2) of a function with dynamic dims was widened to memref<1xf32>
    for the bare-pointer convention, which such a function does not use: the runtime lays out its
    descriptors by the signature's ranks, so the workspace descriptor after it was read from the
    wrong slots and the call wrote through a garbage pointer (segfault, heap corruption)."""
    def fn(x0, x1):
        v0 = x0.sum()
        v1 = x0[:0].reshape(0, 2) + x1
        return (v0, v1)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((3, 4), device=device), torch.randn((2,), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_zero_size_input_before_other_arguments_with_dynamic_dims():
    """The same widening on an input: every argument after it was read from shifted slots."""
    def fn(x0, x1, x2):
        return (x0.sum(0) * 2, x1 + 1, x2 * 3)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        # x1's dims are 0 and 1, which Dynamo specializes: a static zero-size argument
        return [torch.randn((3, 4), device=device), torch.randn((0, 1), device=device),
                torch.randn((5,), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_two_results_that_fusion_makes_one_value():
    """minimum(v, v) folds to v once fused, and v is returned beside it: the function returned
    one value twice when it reached buffer-results-to-out-params, which segfaulted (in the
    compiler, at compile time). Results are now made distinct right before bufferizing."""
    def fn(x0, x1):
        v0 = torch.minimum(x0, x1)
        v1 = torch.minimum(v0, v0)
        return (v0, v1)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((7,), device=device), torch.randn((7,), device=device)]

    check(fn, make_inputs, dynamic=False, grad=False)


def test_zero_size_result_beside_an_op_writing_into_its_empty():
    """Both results are zero-size: one folds to the `tensor.empty` the other is computed into,
    and one-shot-bufferize wrote that op in place into the empty's buffer, also returned: one
    buffer returned twice, and buffer-results-to-out-params segfaulted at compile time."""
    def fn(x0, x1):
        v0 = x0[:, :0]
        return (torch.where(x1, torch.exp(v0), 1.5), v0[0:2:2])

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((1, 3), device=device), torch.rand((1, 1), device=device) < 0.5]

    check(fn, make_inputs, dynamic=False, grad=False)


def test_dynamic_reshape_to_a_static_leading_dim():
    """[s24, s6, s0, s0] -> [24, 7, -1, 2]: every `?` of the result was taken for the operand's
    `?` at the same place (a unit-dim reshape, judged without the sizes), so the region computed
    a [24, s6, s0, s0] result into a smaller output buffer: heap corruption."""
    def fn(x0, x1):
        v0 = x0 + x1
        v1 = v0.reshape(24, 7, -1, 2)
        return (v1,)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((7, 6, 6), device=device), torch.randn((4, 7, 6, 6), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_dynamic_reshape_that_swaps_two_sizes():
    """[s0, s1] -> [s1, s0] looked like no reshape at all (`?` x `?` both ways): the sum over
    dim 1 then ran over s1 elements of rows of s0 (values off by 1e21). Found with the above."""
    def fn(x0):
        return (x0.view(x0.shape[1], x0.shape[0]).sum(1),)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((3, 5), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_sum_over_a_dynamic_dim_of_a_zero_size_tensor():
    """A [0, s1] sum over s1 is split into blocks and a tail (slice_dim): tensor.extract_slice
    with offset 0 into the static 0 dim failed the verifier, and the region ran eagerly."""
    def fn(x0):
        return (torch.sum(x0, dim=1),)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((0, 5), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_sign_of_nan_is_zero():
    """torch.sign(NaN) is 0 in eager on CPU and CUDA ((0 < x) - (x < 0)); the lowering kept the
    NaN. Found as var() of one element (NaN) through sign and atan2: 0.477 eager, NaN compiled."""
    def fn(x0):
        v0 = torch.var(x0, correction=1)
        return (torch.sign(v0), torch.sign(x0))

    def make_inputs(device="cpu"):
        return [torch.tensor([float("nan"), -0.0, 0.0, 2.0, float("-inf")], device=device)[:1]]

    check(fn, make_inputs, dynamic=False, grad=False)


def test_matmul_of_a_k_blocked_matmul_with_dynamic_sizes():
    """With a dynamic K the cpu matmul is K-blocked (a loop over chunks of 128, then the rest);
    the rest's `total + tile` read the total as its init, and linalg's elementwise fusion fused
    it into the next matmul, which reads the sum for every column: bufferized in place, the
    tile was added once per column (results doubled and more)."""
    def fn(x0, x1, x2):
        v0 = F.linear(x0, x1, None)
        v1 = torch.matmul(v0, x2)
        return (v1,)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        x0 = torch.randn((2, 2, 2), device=device).transpose(0, 1)
        return [x0, torch.randn((1, 2), device=device), torch.randn((2, 1, 2), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_dynamic_operand_that_broadcasts_against_another_dynamic_dim():
    """x0 + x0[:, 0:-1:2] with x0 of [1, s0, s0]: the slice is [1, s0 // 2, s0], which Dynamo
    guarded to be 1 (s0 = 2) and broadcasts. Both dims being `?`, the add read the slice as if it
    were [1, s0, s0]: past its end (values off by 1e18)."""
    def fn(x0):
        v0 = x0[:, 0:-1:2]
        v1 = x0.add_(2.0)
        return (v1 + v0,)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((1, 2, 2), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_relu_keeps_negative_zero():
    """relu(-0.0) is -0.0 in eager (x < 0 ? 0 : x), so 1 / relu(-relu(x)) is -inf where x <= 0;
    lowered as maximumf(x, 0) it was +0.0 and the reciprocal +inf."""
    def fn(x0):
        v0 = -torch.relu(x0)
        return (torch.reciprocal(torch.relu(v0)),)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((2, 2), dtype=torch.float32, device=device)]

    check(fn, make_inputs, dynamic=False, grad=False)


def test_a_view_of_a_mutated_channels_last_input_with_dynamic_dims():
    """A flatten of a channels-last input, multiplied in place, returned (seed 7 program 104,
    minimised): AOTAutograd regenerates that view of the input after the call and, its views
    taking symbolic sizes, from the size and strides of the tensor the graph returned for it, a
    contiguous one: the NHWC input was read as NCHW (frontend/output_layouts.py)."""
    def fn(x0):
        v0 = torch.flatten(x0, 2, 3)
        v1 = v0.mul_(v0)
        return (v1, v0 + 1)

    def make_inputs(device="cpu"):
        torch.manual_seed(5603)
        return [torch.randn((2, 7, 1, 5), dtype=torch.float32, device=device).to(memory_format=torch.channels_last)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_a_single_row_matmul_operand_whose_row_stride_torch_left_at_1():
    """linear of a 1-element vector in training with dynamic dims (seed 7 program 157,
    minimised): the backward's mm reads the output gradient as a [1, s0] matrix whose row
    stride, read at run time as BLAS's ld, was 1 (torch calls a [1, n] tensor of strides (1, 1)
    contiguous). MKL refused the call ("Parameter 10 was incorrect on entry to SGEMM") and the
    gradient was left unwritten (codegen/cpu/library.py _run_time_layout)."""
    def fn(x0, x1):
        return (F.linear(torch.exp(x0), x1, None),)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((1,), device=device), torch.randn((3, 1), device=device)]

    check(fn, make_inputs, dynamic=True, grad=True)


def test_a_0d_input_returned_as_its_mean_beside_its_in_place_square():
    """mean of a 0-d input is the input itself, returned beside x.mul_(x) (seed 13 program 220,
    minimised): the region returned the argument it also wrote in place, which one-shot
    bufferization refused, and ran eagerly; the old value is now copied at the entry
    (codegen/written_inputs.py)."""
    def fn(x0, x1):
        v0 = torch.mean(x0)
        v1 = x0.mul_(x0)
        return (v0, v1, x1 * 2)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((), device=device), torch.randn((4, 5), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_a_transposed_input_written_in_place_and_returned_twice():
    """x.t().relu_() returned beside its transpose back, with dynamic dims (seed 29 program 289,
    minimised; seed 7 program 265, an integer clamp_ whose new value is returned, is the same
    case): after canonicalization the input's new value is also another result, and written
    into the input while returned it failed to bufferize ("cannot avoid RaW conflict"), so the
    region ran eagerly. A copy of it now goes into the input (codegen/written_inputs.py)."""
    def fn(x0):
        v0 = x0.transpose(1, 0)
        v2 = v0.relu_()
        return (v2, v0.transpose(0, -1))

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((3, 5), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_a_view_of_a_strided_input_returned_with_dynamic_dims():
    """reshape(-1) of a strided bool input ([1::2] of 7) returned, with dynamic dims (seed 37
    program 258, minimised): the output is a view of the input, which AOTAutograd regenerates
    from the input with the size, strides and offset of the tensor the graph returned. The
    region returned a contiguous copy, so the input was read at stride 1 from offset 0: 2 of 3
    elements wrong. The view is now taken eagerly (output_layouts.py)."""
    def fn(x0, x1):
        return (x0.reshape(-1), x1 * 2)

    def make_inputs(device="cpu"):
        torch.manual_seed(7305)
        return [(torch.rand((7,), device=device) < 0.5)[1::2], torch.randn(3, device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_a_symbolic_size_broadcast_against_a_static_one():
    """reshape(3, -1, 1, 5) of a [s0, s1] input has the size (s0*s1)//15, 1 in the example;
    its squeeze broadcast against the view makes that dim 3 (seed 37 program 6, minimised).
    The operand's `?` dim read as the result's 3 was read past its end (values of 1e37); an
    operand's symbolic size broadcast against a different static one is 1 (Dynamo guarded it
    so), pinned to 1 before the broadcast (importer._stretched)."""
    def fn(x0):
        v1 = x0.reshape(3, -1, 1, 5)
        return (v1.squeeze(2) * v1,)

    def make_inputs(device="cpu"):
        torch.manual_seed(874)
        return [torch.randn((5, 3), device=device)]

    check(fn, make_inputs, dynamic=True, grad=False)


def test_a_matmul_over_an_empty_slice_of_symbolic_length():
    """addmm of a slice that comes out empty at run time (x3[-3:1:2] of a [4, 1] input with
    dynamic dims: K = 0 in the gradient of the third operand; seed 79 program 156, minimised).
    The leading dimension BLAS got was read off that empty dim, 0, which MKL refuses ("Parameter
    10 was incorrect on entry to SGEMM"), leaving the gradient unwritten: garbage where eager
    gives zeros. Run-time leading dimensions are now at least 1 (codegen/cpu/library.py _ld)."""
    def fn(x3, x5, x6):
        return (torch.addmm(x5, x3[-3:1:2], x6),)

    def make_inputs(device="cpu"):
        torch.manual_seed(5617)
        x3 = torch.randn((4, 1), dtype=torch.float32, device=device)
        x5 = torch.randn((7,), dtype=torch.float32, device=device)[1::2]
        x6 = torch.randn((1, 1), dtype=torch.float32, device=device).expand(1, 3)
        return [x3, x5, x6]

    check(fn, make_inputs, dynamic=True, grad=True)


def test_an_input_size_settled_by_a_later_reshape():
    """fuzz seed 29 program 265: reshape(5, 1, 7) makes Dynamo guard x1's first size to 7 after
    x1's placeholder was made, so the placeholder kept a SymInt (whose expression is 7) while the
    ops after it had int 7: x1 was imported as `?x5`, the layer norm's mean came out `?x1` where
    its node said `7x1`, and the whole forward region ran eagerly."""
    def fn(x1):
        v6 = x1.reshape(5, 1, 7)
        v8 = F.layer_norm(x1, (5,), None, None)
        return (v6, v8)

    def make_inputs(device="cpu"):
        torch.manual_seed(0)
        return [torch.randn((7, 5), dtype=torch.float32, device=device)]

    check(fn, make_inputs, dynamic=True, grad=True)
