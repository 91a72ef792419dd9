"""Host-schedule steps that run through torch: matmul (cuBLAS), convolution (cuDNN; a
`torch.convolution` call pads as it reads and writes its buffer itself) and its input and
weight gradients (cuDNN's backward kernels, copied into the step's buffer), pooling, index_put,
scatter and attention.

Each linalg op accumulates into its output; `overwrite` says the accumulator was a zero fill
that the gpu stage dropped, so the library result is written instead of added.

index_put and scatter (library_calls.py) update their output, a copy of dest made by a kernel
before them, in place with torch's own CUDA kernels: `index_put_` (accumulate or not),
`scatter_` (reduce "assign") and `scatter_reduce_` (sum, prod, mean, amax, amin, include_self
either way). Negative and duplicate indices are torch's to handle, as in eager; none of these
synchronizes with the host, so a schedule holding them can be captured as a CUDA graph.

attention runs torch's F.scaled_dot_product_attention on views of q, k, v (and the additive
bias, broadcastable: [B, 1, 1, S] for a padding mask), which picks the fused kernel eager
would (flash, memory-efficient or cuDNN attention), then copies the result into the step's
output buffer (SDPA has no out= form). Neither synchronizes with the host either.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..gpu import host_sizes
from .schedule import Library, View


def view_of(bufs, v: View) -> torch.Tensor:
    base = bufs[v.slot]
    return base.as_strided(v.shape, v.strides, base.storage_offset() + v.offset)


def view_getter(v: View):
    """view_of, or for a view whose sizes, strides or offset are known per call
    (codegen/gpu/host_sizes.py) a function computing them first; chosen once for the step."""
    if host_sizes.is_static(*v.shape, *v.strides, v.offset):
        return view_of
    rank = len(v.shape)
    sizes = host_sizes.evaluator([*v.shape, *v.strides, v.offset])

    def sized_view_of(bufs, v: View) -> torch.Tensor:
        values = sizes(bufs)
        return view_of(bufs, View(v.slot, values[:rank], values[rank:2 * rank], values[-1]))

    return sized_view_of


def _accumulate(out: torch.Tensor, value: torch.Tensor, overwrite: bool) -> None:
    if overwrite:
        out.copy_(value.view(out.shape))
    else:
        out.add_(value.view(out.shape))


# cuBLAS runs a half-precision matmul with a dim that is not a multiple of 8 (a 50257-token
# vocabulary: GPT-2's logits and both their gradients) with its align-1 kernels, 3-5x slower than
# the aligned ones on an H200 (benchmarks/gemm_alignment.py). Such a matmul runs on operands
# zero-padded to multiples of 8 (the padding adds zeros to the sums, and rows and columns the
# result drops) and its result is copied out of the padded one; inductor pads them too. Padding
# only the rows' stride is not enough: the kernels' vectorized stores need the dims aligned.
# float32 kernels gain nothing from it, and below MIN_PADDED in any dim the copies' launches
# cost about what the slow kernel loses.
PAD_TO = {torch.bfloat16: 8, torch.float16: 8}
MIN_PADDED = 128


def _padded(t: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """t [..., r, c] copied into a [..., rows, cols] matrix of t's majorness, zeros around it."""
    r, c = t.shape[-2:]
    if (r, c) == (rows, cols):
        return t
    if t.stride(-1) == 1:
        p = t.new_empty(*t.shape[:-2], rows, cols)
    else:
        p = t.new_empty(*t.shape[:-2], cols, rows).transpose(-1, -2)
    copy_lines(p[..., :r, :c], t)
    p[..., r:, :].zero_()
    p[..., :r, c:].zero_()
    return p


# At least this many bytes for a copy to go through the driver's pitched copy (its host cost is a
# few microseconds more than torch's copy_).
PITCHED_MIN_BYTES = 1 << 20


def copy_lines(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst.copy_(src) for matrices of one shape and dtype whose lines (rows, or both columns) are
    contiguous but whose line strides differ: the padded operands of a matmul and the result
    cut out of a padded one. torch copies such a strided pair element by element with 64-bit
    index arithmetic (an odd line length rules out vector accesses): 1.0-1.9 ms for GPT-2's
    [4096, 50257] bf16 logits and their gradient on an H200. cuMemcpy2DAsync copies the lines
    at their pitches, on torch's stream (capturable in a CUDA graph). Anything else: copy_."""
    lines = _lines(dst, src)
    if lines is None:
        dst.copy_(src)
        return
    width, height, dst_pitch, src_pitch = lines
    from .runtime import check, driver  # the runtime imports this module

    drv = driver()
    copy = drv.CUDA_MEMCPY2D()
    copy.srcMemoryType = copy.dstMemoryType = drv.CUmemorytype.CU_MEMORYTYPE_DEVICE
    copy.srcDevice, copy.srcPitch = src.data_ptr(), src_pitch
    copy.dstDevice, copy.dstPitch = dst.data_ptr(), dst_pitch
    copy.WidthInBytes, copy.Height = width, height
    check(drv.cuMemcpy2DAsync(copy, torch.cuda.current_stream(dst.device).cuda_stream), "cuMemcpy2DAsync")


def _lines(dst: torch.Tensor, src: torch.Tensor) -> tuple[int, int, int, int] | None:
    """(line bytes, lines, dst pitch, src pitch) of a pair copy_lines copies pitched, else None."""
    if dst.dim() != 2 or dst.shape != src.shape or dst.dtype != src.dtype or not dst.is_cuda \
            or dst.device != src.device or dst.numel() * dst.element_size() < PITCHED_MIN_BYTES:
        return None
    inner = 1 if dst.stride(1) == 1 and src.stride(1) == 1 else 0 if dst.stride(0) == 1 and src.stride(0) == 1 else None
    if inner is None:
        return None
    size = dst.element_size()
    line, lines = dst.shape[inner], dst.shape[1 - inner]
    return line * size, lines, dst.stride(1 - inner) * size, src.stride(1 - inner) * size


def _matmul(step: Library, a, b, c):
    *_, m, k = a.shape
    n, multiple = b.shape[-1], PAD_TO.get(a.dtype)
    if multiple is None or min(m, k, n) < MIN_PADDED or not (m % multiple or k % multiple or n % multiple):
        return _matmul_into(a, b, c, step.overwrite)
    up = lambda size: -(-size // multiple) * multiple  # noqa: E731
    out = c.new_empty(*c.shape[:-2], up(m), up(n))
    _matmul_into(_padded(a, up(m), up(k)), _padded(b, up(k), up(n)), out, overwrite=True)
    if step.overwrite:
        copy_lines(c, out[..., :m, :n])
    else:
        c.add_(out[..., :m, :n])


def _matmul_into(a, b, c, overwrite: bool):
    if a.dtype != c.dtype:  # half operands, float32 sums (dialects/matmul.py): cuBLAS's mixed kernels
        op = torch.ops.aten.mm if c.dim() == 2 else torch.ops.aten.bmm
        if overwrite:
            op.dtype_out(a, b, c.dtype, out=c)
        else:
            c.add_(op.dtype(a, b, c.dtype))
    elif overwrite:
        torch.matmul(a, b, out=c)
    elif c.dim() == 2:
        c.addmm_(a, b)
    else:
        c.baddbmm_(a, b)


def _conv(step: Library, x, w, y):
    attrs = dict(step.attrs)
    out = F.conv2d(x, w, stride=attrs.get("strides", (1, 1)), dilation=attrs.get("dilations", (1, 1)))
    _accumulate(y, out, step.overwrite)


def _grouped_conv(step: Library, x5, w5, y5):
    # N,G,C/G,H,W and G,F/G,C,kh,kw views: torch's grouped conv takes the flattened forms.
    attrs = dict(step.attrs)
    groups = x5.shape[1]
    x = x5.reshape(x5.shape[0], -1, *x5.shape[3:])
    w = w5.reshape(-1, *w5.shape[2:])
    out = F.conv2d(x, w, stride=attrs.get("strides", (1, 1)), dilation=attrs.get("dilations", (1, 1)), groups=groups)
    _accumulate(y5, out, step.overwrite)


def _max_pool(step: Library, x, window, y):
    attrs = dict(step.attrs)
    out = F.max_pool2d(x, tuple(window.shape), stride=attrs.get("strides"), dilation=attrs.get("dilations", (1, 1)))
    if step.overwrite:
        y.copy_(out)
    else:
        torch.maximum(y, out, out=y)


def _sum_pool(step: Library, x, window, y):
    attrs = dict(step.attrs)
    if tuple(attrs.get("dilations", (1, 1))) != (1, 1):
        raise NotImplementedError("dilated sum pooling on the cuda target")
    kh, kw = window.shape
    out = F.avg_pool2d(x, (kh, kw), stride=attrs.get("strides")) * (kh * kw)
    _accumulate(y, out, step.overwrite)


def _long(index: torch.Tensor) -> torch.Tensor:
    """An index tensor as torch's scatter kernels take it (int64; a uint8 index would be a mask)."""
    return index if index.dtype == torch.int64 else index.long()


def _index_put(step: Library, values, *indices_then_out):
    *indices, out = indices_then_out
    accumulate = bool(dict(step.attrs)["accumulate"])
    out.index_put_(tuple(_long(i) for i in indices), values, accumulate=accumulate)


def _scatter(step: Library, index, src, out):
    attrs = dict(step.attrs)
    if attrs["reduce"] == "assign":
        out.scatter_(attrs["dim"], _long(index), src)
    else:
        out.scatter_reduce_(attrs["dim"], _long(index), src, attrs["reduce"], include_self=bool(attrs["include_self"]))


def _cudnn_writes(x: torch.Tensor, w: torch.Tensor, groups: int) -> bool:
    """Whether cuDNN's convolution takes these operands into our buffer as eager would run them:
    cuDNN on, a float type it has, and not a depthwise convolution (eager runs those with its own
    kernels)."""
    depthwise = groups > 1 and groups == x.shape[1] and w.shape[0] % groups == 0
    return torch.backends.cudnn.enabled and x.dtype in (torch.float32, torch.float16, torch.bfloat16) \
        and not depthwise


def _convolution(step: Library, x, w, out):
    """torch.convolution's cuDNN kernel writing `out` itself (cudnn_convolution.out: no copy),
    with torch's cuDNN settings read at the call, as eager reads them; otherwise torch's
    convolution, copied into `out`."""
    a = dict(step.attrs)
    stride, padding, dilation, groups = a["stride"], a["padding"], a["dilation"], a["groups"]
    if _cudnn_writes(x, w, groups):
        cudnn = torch.backends.cudnn
        torch.ops.aten.cudnn_convolution.out(x, w, padding, stride, dilation, groups, cudnn.benchmark,
                                             cudnn.deterministic, cudnn.allow_tf32, out=out)
    else:
        out.copy_(torch.ops.aten.convolution(x, w, None, stride, padding, dilation, False, [0] * len(stride), groups))


def _convolution_nhwc(step: Library, x, w, out):
    """_convolution on NHWC input and result buffers: their NCHW views are channels-last
    strided, which makes cuDNN pick its NHWC kernels (the weight it converts as eager does)."""
    _convolution(step, x.permute(0, 3, 1, 2), w, out.permute(0, 3, 1, 2))


def _conv_grad(step: Library, grad, given, out, which: int):
    """Gradient `which` (0: input, 1: weight) of the convolution by torch's convolution_backward,
    which runs cuDNN's backward-data or backward-filter kernel as eager does. The operand whose
    gradient is asked for only lends its shape (as torch.nn.grad's functions do): `out` has it."""
    a = dict(step.attrs)
    x, w = (out, given) if which == 0 else (given, out)
    mask = [which == 0, which == 1, False]
    result = torch.ops.aten.convolution_backward(grad, x, w, None, a["stride"], a["padding"], a["dilation"], False,
                                                 [0] * len(a["stride"]), a["groups"], mask)[which]
    out.copy_(result)


def _attention(step: Library, q, k, v, *bias_then_out):
    *bias, out = bias_then_out
    attrs = dict(step.attrs)
    # Returned, not copied into `out`: the step takes torch's tensor as the buffer where it can.
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias[0] if bias else None,
                                          is_causal=bool(attrs["is_causal"]), scale=attrs["scale"])


def _attention_grad(step: Library, grad, q, k, v, *bias_then_outs):
    """dq, dk, dv of attention by the fused kernel's backward: the op a training graph's attention
    backward was traced as (frontend/attention_call.py), registered with torch when it was traced."""
    *bias, dq, dk, dv = bias_then_outs
    attrs = dict(step.attrs)
    grads = torch.ops.dynamo_mlir.attention_grad(grad, q, k, v, bias[0] if bias else None, bool(attrs["is_causal"]),
                                          attrs["scale"])
    for out, result in zip((dq, dk, dv), grads):
        out.copy_(result)


def _addmm(step: Library, a, b, bias, out):
    """out = a @ b + bias by cuBLASLt, the bias added in the GEMM's epilogue (matmul_bias.py). A
    float32 bias of a half product is rounded to the half type first, as the graph does."""
    torch.addmm(bias.to(out.dtype), a, b, out=out)


RUNNERS = {
    "linalg.matmul": _matmul,
    "linalg.batch_matmul": _matmul,
    "linalg.conv_2d_nchw_fchw": _conv,
    "linalg.conv_2d_ngchw_gfchw": _grouped_conv,
    "linalg.pooling_nchw_max": _max_pool,
    "linalg.pooling_nchw_sum": _sum_pool,
    "torch.index_put": _index_put,
    "torch.scatter": _scatter,
    "torch.attention": _attention,
    "torch.attention_grad": _attention_grad,
    "torch.addmm": _addmm,
    "torch.convolution": _convolution,
    "torch.convolution_nhwc": _convolution_nhwc,
    "torch.conv_grad_input": lambda step, grad, w, out: _conv_grad(step, grad, w, out, 0),
    "torch.conv_grad_weight": lambda step, grad, x, out: _conv_grad(step, grad, x, out, 1),
}


def step(lib: Library, intermediates: frozenset = frozenset()):
    """The library call `lib` as a host step. A runner that returns its result (one torch op that
    allocates it, as attention does) has it written to its last operand; where that operand is
    the whole of an intermediate buffer (a slot in `intermediates`, the schedule's allocations)
    laid out as torch's result, the result becomes the buffer, with no copy."""
    runner = RUNNERS[lib.op]
    views = [(view_getter(v), v) for v in lib.operands]
    out = lib.operands[-1]
    adoptable = out.slot in intermediates and out.offset == 0

    def run(bufs, stream):
        args = [get(bufs, v) for get, v in views]
        result = runner(lib, *args)
        if result is not None:
            _write(bufs, out.slot if adoptable else None, args[-1], result)

    return run


def _write(bufs, slot: int | None, out: torch.Tensor, result: torch.Tensor) -> None:
    if slot is not None:
        base = bufs[slot]
        # `out`, a view an op writes (no element twice), covers the buffer: with its strides,
        # torch's result is dense in the buffer's layout.
        if (result.dtype == out.dtype and result.shape == out.shape and result.stride() == out.stride()
                and out.numel() == base.numel()):
            bufs[slot] = result.as_strided((base.numel(),), (1,), result.storage_offset())
            return
    out.copy_(result)


def store_step(store):
    """A host-computed value into one element: a fill kernel on torch's stream (no host-to-device
    copy, so the schedule can still be captured as a CUDA graph)."""

    get = view_getter(store.view)

    def run(bufs, stream):
        get(bufs, store.view).fill_(host_sizes.evaluate(store.value, bufs))

    return run
