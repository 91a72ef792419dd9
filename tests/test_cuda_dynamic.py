"""Symbolic sizes on the cuda target: elementwise work compiles once for every size
(codegen/gpu/tiled.py, kernel_abi.py, host_sizes.py). The first tests need no GPU (they read the
generated host schedule and PTX); the others run on one and compare with eager."""

import pytest
import torch

import dynamo_mlir
from dynamo_mlir.codegen.target import get_target
from helpers import assert_all_compiled, read_stage

TARGET = get_target("cuda")
on_gpu = pytest.mark.skipif(not TARGET.available(), reason="needs a CUDA GPU and cuda-bindings")


def bias_exp(x, b):
    return torch.exp(x + b) * 2


def test_a_symbolic_batch_is_one_kernel_set_whose_grid_reads_the_size(tmp_path):
    """Generated without a GPU: the launch grid and the kernels' size arguments are expressions of
    the input's size, evaluated per call; the kernels take bare pointers and `index` sizes."""
    dynamo_mlir.reset()
    x, b = torch.randn(5, 768), torch.randn(768)
    torch._dynamo.mark_dynamic(x, 0)
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    with pytest.raises(Exception, match="not a CUDA device"):  # the PTX was built; CPU tensors can't run it
        torch.compile(bias_exp, backend="mlir", options=options)(x, b)
    s = dynamo_mlir.stats()
    assert s["partitions_failed"] == 0 and s["fallback_ops"] == {} and s["ops_compiled"] == 3, dynamo_mlir.explain()
    host = read_stage(str(tmp_path), "host")
    assert "host main(%0: ?x768xfloat32, %1: 768xfloat32, %2: ?x768xfloat32)" in host
    # rows of 768 elements: a block per row (codegen/gpu/row_groups.py, over_long_rows)
    assert "grid=(dim(%0, 0), 1, 1) block=(256, 1, 1)" in host
    assert "dim(%0, 0):index" in host
    ptx = read_stage(str(tmp_path), "ptx")
    assert ".entry row_group_exp(" in ptx and ".param .u64 row_group_exp_param_1" in ptx  # a 64-bit size argument


def layer_norm_softmax(x, w, b):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b).softmax(-1)


def test_a_layer_norm_then_softmax_over_a_symbolic_row_count_is_one_block_per_row(tmp_path):
    """codegen/gpu/row_groups.py, generated without a GPU: the layer norm's mean and variance, its
    normalization, the softmax's max, exp, sum and division, and the fills and copies that set the
    reductions' outputs, all on the same rows, are one launch of a block per row (the grid is the
    row count, read per call); five gpu.all_reduce (the sum, the centered values' sum and their
    squares' of the corrected two-pass variance, the max, the exponentials' sum), a barrier
    between two ops. With
    cuda_row_vectors the group is built twice in the kernel: lane groups of 4 floats (16-byte
    vectors) where the call's buffers are aligned for them, one float a lane where not
    (row_reduce.row_vectors)."""
    dynamo_mlir.reset()
    x, w, b = torch.randn(5, 768), torch.randn(768), torch.randn(768)
    torch._dynamo.mark_dynamic(x, 0)
    for vectors, bodies in ((False, 1), (True, 2)):
        dump = tmp_path / str(vectors)
        options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(dump), "cache": False, "strict": True,
                   "cuda_row_vectors": vectors}
        torch._dynamo.reset()
        with pytest.raises(Exception, match="not a CUDA device"):
            torch.compile(layer_norm_softmax, backend="mlir", options=options)(x, w, b)
        host = read_stage(str(dump), "host")
        launches = [line for line in host.splitlines() if "launch " in line]
        assert len(launches) == 1 and "grid=(dim(%0, 0), 1, 1) block=(256, 1, 1)" in launches[0], host
        kernel = read_stage(str(dump), "gpu")
        assert kernel.count("gpu.all_reduce") == bodies * 5, kernel
        assert kernel.count("gpu.barrier") >= bodies * 6, kernel
        assert ("vector<4xf32>" in kernel) == vectors, kernel


def test_a_mean_over_a_symbolic_row_length_takes_its_count_as_a_kernel_argument(tmp_path):
    """codegen/scalar_operands.py: the count a mean divides by (the row length made a float) is a
    scalar argument of the launch computed from the call's sizes, not a one-element buffer the
    host allocates and fills (a fill kernel) before the launch on every call."""
    dynamo_mlir.reset()
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    layer_norm = lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)  # noqa: E731
    with pytest.raises(Exception, match="not a CUDA device"):
        torch.compile(layer_norm, backend="mlir", options=options, dynamic=True)(
            torch.randn(5, 96), torch.randn(96), torch.randn(96))
    host = read_stage(str(tmp_path), "host")
    launches = [line for line in host.splitlines() if "launch " in line]
    # the layer norm's pair of launches (its row in shared memory or not, row_staging.py): no other
    assert len(launches) == 2 and all("sitofp(index_cast(dim(%0, 1))):f32" in line for line in launches), host
    assert "empty(1," not in host and "] = " not in host, host  # no one-element buffer, no host store


def _compile_for_cuda_on_cpu(fn, tmp_path, *args, **kw):
    """Compile `fn` for sm_90 on CPU tensors (no GPU: it raises once the PTX is built); the
    stages' dumps land in tmp_path."""
    dynamo_mlir.reset()
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    with pytest.raises(Exception, match="not a CUDA device"):
        torch.compile(fn, backend="mlir", options=options, **kw)(*args)


def test_a_softmax_over_rows_of_symbolic_length_reads_its_row_once_when_it_fits_in_shared_memory(tmp_path):
    """codegen/gpu/row_staging.py: the softmax's four ops (max, exp into the output, its sum, the
    division) read x and the output from a slot of shared memory after the first read; the output
    is stored to global memory once. Whether the row fits is a per-call test: the host has the
    staged launch and the plain one, with complementary grids."""
    _compile_for_cuda_on_cpu(lambda x: torch.softmax(x, -1), tmp_path, torch.randn(6, 300), dynamic=True)
    host = read_stage(str(tmp_path), "host")
    staged, plain = [line for line in host.splitlines() if "launch " in line]
    fits = "ule(muli(ceildivui(muli(dim(%0, 1), 4), 16), 16), 47104)"  # one f32 slot of a row: x, then the output
    assert f"grid=(select({fits}, dim(%0, 0), 0)" in staged and "shared=index_cast(" in staged, host
    assert f"grid=(select({fits}, 0, dim(%0, 0))" in plain and "shared=" not in plain, host
    gpu = read_stage(str(tmp_path), "gpu")
    kernels = gpu.split("gpu.func @")[1:]
    staged_kernel = next(k for k in kernels if "gpu.dynamic_shared_memory" in k)
    plain_kernel = next(k for k in kernels if "gpu.dynamic_shared_memory" not in k)

    def global_accesses(kernel, op):  # memref.load/store of a global buffer's row element
        return [line for line in kernel.splitlines() if f"{op} " in line and "workgroup" not in line
                and "memref<?x?xf32>" in line]

    # 4 lanes a trip: x loaded once (the max), the output stored once (the division)
    assert len(global_accesses(staged_kernel, "memref.load")) == 4, staged_kernel
    assert len(global_accesses(staged_kernel, "memref.store")) == 4, staged_kernel
    assert len(global_accesses(plain_kernel, "memref.load")) == 16, plain_kernel
    assert len(global_accesses(plain_kernel, "memref.store")) == 8, plain_kernel
    ptx = read_stage(str(tmp_path), "ptx")
    assert ".extern .shared .align 16 .b8 __dynamic_shmem__0[];" in ptx, ptx[:2000]


@pytest.mark.parametrize("row, launches", [(512, "shared=2048"), (16384, None)])
def test_a_row_of_static_length_is_staged_or_not_at_compile_time(tmp_path, row, launches):
    """Rows of a static length (a layer norm's over symbolic tokens): the slots' bytes are known,
    so one launch is built, staged where they fit (512 floats) and plain where not (16384)."""
    w, b = torch.randn(row), torch.randn(row)
    x = torch.randn(6, row)
    torch._dynamo.mark_dynamic(x, 0)
    _compile_for_cuda_on_cpu(lambda x, w, b: torch.nn.functional.layer_norm(x, (row,), w, b), tmp_path, x, w, b)
    host = read_stage(str(tmp_path), "host")
    found = [line for line in host.splitlines() if "launch " in line]
    assert len(found) == 1 and "grid=(dim(%0, 0), 1, 1)" in found[0], host
    assert (launches in found[0]) if launches else "shared=" not in found[0], host


def test_a_flat_elementwise_op_of_symbolic_size_runs_in_chunks_of_8192(tmp_path):
    dynamo_mlir.reset()
    x, y = torch.randn(1000), torch.randn(1000)
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    with pytest.raises(Exception, match="not a CUDA device"):
        torch.compile(lambda x, y: torch.relu(torch.exp(x) * y + x), backend="mlir", options=options, dynamic=True)(x, y)
    launches = [line for line in read_stage(str(tmp_path), "host").splitlines() if "launch " in line]
    assert len(launches) == 1 and "grid=(ceildivui(dim(%0, 0), 8192), 1, 1) block=(256, 1, 1)" in launches[0], launches


def column_normalize(x):
    return x / x.sum(0) + x.softmax(-1)


def test_ops_on_other_rows_or_reading_other_rows_stay_out_of_a_row_group(tmp_path):
    """A sum over the row count (columns) is not on the softmax's rows: dividing by it reads every
    row's sum from every block, so it stays a launch of its own; the softmax is one group."""
    dynamo_mlir.reset()
    x = torch.randn(5, 64)
    torch._dynamo.mark_dynamic(x, 0)
    options = {"target": "cuda", "cuda_arch": "sm_90", "dump_dir": str(tmp_path), "cache": False, "strict": True}
    with pytest.raises(Exception, match="not a CUDA device"):
        torch.compile(column_normalize, backend="mlir", options=options)(x)
    host = read_stage(str(tmp_path), "host")
    launches = [line for line in host.splitlines() if "launch " in line]
    per_row = [line for line in launches if "grid=(dim(%0, 0), 1, 1)" in line]
    assert len(per_row) == 1, host  # the softmax's group
    assert len(launches) >= 3, host  # the column sum and the division apart from it


def test_a_target_compiles_only_the_ops_its_dynamic_shape_ops_name_with_symbolic_sizes():
    """Target.dynamic_shape_ops: a target (here the cuda one, narrowed to multiplication) leaves
    every other op of symbolic sizes eager, saying so."""
    import dataclasses

    from dynamo_mlir.codegen.target import register_target

    register_target(dataclasses.replace(TARGET, dynamic_shape_ops=frozenset({torch.ops.aten.mul})), override=True)
    try:
        dynamo_mlir.reset()
        x = torch.randn(6, 32)
        torch._dynamo.mark_dynamic(x, 0)
        f = lambda x: torch.softmax(x * 2, dim=-1)  # noqa: E731
        options = {"target": "cuda", "cuda_arch": "sm_90", "cache": False}
        with pytest.raises(Exception, match="not a CUDA device"):  # the multiplication compiled
            torch.compile(f, backend="mlir", options=options)(x)
    finally:
        register_target(TARGET, override=True)
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {"aten._softmax.default": 1} and s["ops_compiled"] == 1, dynamo_mlir.explain()
    reasons = dict(s["fallback_reasons"])
    assert "compiles this op with static shapes only" in reasons["aten._softmax.default"], reasons


def test_size_expressions_fold_what_is_static_and_evaluate_per_call():
    """codegen/gpu/host_sizes.py: an op on ints folds; x * 1 and x + 0 are x; an affine map's
    ceildiv / floordiv / mod read as MLIR defines them (mod non-negative, divisions rounding
    toward -inf / +inf), on the sizes of the tensors in the slots and the `index` arguments."""
    from torch_mlir import ir

    from dynamo_mlir.codegen.gpu import host_sizes as hs

    assert hs.apply("arith.muli", (6, 7)) == 42
    n = hs.Dim(0, 1)
    assert hs.apply("arith.muli", (n, 1)) is n and hs.apply("arith.addi", (0, n)) is n
    bufs = [torch.empty(2, 1000, device="meta"), -7]
    with ir.Context():
        d0, s0 = ir.AffineDimExpr.get(0), ir.AffineSymbolExpr.get(0)
        floor = ir.AffineFloorDivExpr.get(d0, ir.AffineConstantExpr.get(256))
        expr = hs.affine_apply(floor + s0 % 8, [n], [hs.Arg(1)])
        ceil = hs.affine_apply(ir.AffineCeilDivExpr.get(d0, ir.AffineConstantExpr.get(256)), [n], [])
    assert hs.evaluate(expr, bufs) == 1000 // 256 + (-7) % 8  # 3 + 1
    assert hs.evaluate(ceil, bufs) == 4 and hs.is_expression(ceil) and not hs.is_expression(4)
    assert hs.evaluate(hs.apply("arith.divsi", (hs.Arg(1), 2)), bufs) == -3  # toward zero, as arith.divsi
    # The generated function a launch runs per call computes the same values (a float for sitofp).
    exprs = [expr, ceil, 5, hs.apply("arith.divsi", (hs.Arg(1), 2)), hs.apply("arith.sitofp", (n,)),
             hs.apply("arith.cmpi.slt", (n, hs.Arg(1)))]
    assert hs.evaluator(exprs)(bufs) == tuple(hs.evaluate(x, bufs) for x in exprs) == (4, 4, 5, -3, 1000.0, 0)
    assert type(hs.evaluator(exprs)(bufs)[4]) is float


def test_only_reshapes_that_certainly_split_dims_become_expansions():
    """codegen/sliced_reshapes.py's grouping: static dims by equal products, one symbolic dim
    facing one symbolic dim, trailing unit dims in the last group; anything else (a merge, two
    symbolic dims, products that do not line up) is left a reshape (None)."""
    from dynamo_mlir.codegen.sliced_reshapes import DYN, split_groups

    assert split_groups([8, DYN, 768], [8, DYN, 12, 64]) == [[0], [1], [2, 3]]
    assert split_groups([1, 8], [1, 1, 8]) == [[0], [1, 2]]
    assert split_groups([6], [2, 3, 1]) == [[0, 1, 2]]
    for source, result in (([4, 6], [2, 3, 4]), ([DYN, DYN], [DYN, DYN, 1]), ([8, DYN], [8, 2, DYN]),
                           ([DYN, 64], [DYN, 8, 8, 2]), ([2, 64], [128])):
        assert split_groups(source, result) is None, (source, result)


def test_a_grid_above_the_drivers_limits_for_this_calls_sizes_is_an_error_naming_the_kernel():
    """A launch over symbolic sizes whose grid, for one call's sizes, exceeds CUDA's limits (65535
    blocks in y and z) raises before the launch (no GPU needed: the check precedes the driver)."""
    from dynamo_mlir.codegen.cuda.runtime import CudaError, launch_step
    from dynamo_mlir.codegen.cuda.schedule import Launch
    from dynamo_mlir.codegen.gpu.host_sizes import Dim

    step = launch_step(Launch("main_kernel_3", (Dim(0, 0), Dim(0, 1), 1), (256, 1, 1), ()), None, 64)
    with pytest.raises(CudaError, match=r"main_kernel_3 needs a grid of \(2, 70000, 1\)"):
        step([torch.empty(2, 70000, device="meta")], stream=0)


def test_a_launch_evaluates_its_grid_and_sizes_per_call_and_skips_an_empty_grid(monkeypatch):
    """codegen/gpu/launch_steps.py through the cuda runtime, the driver replaced by a recorder (no
    GPU): each call's grid, dynamic shared memory and `index` argument come from that call's tensor."""
    import ctypes

    from dynamo_mlir.codegen.cuda import runtime
    from dynamo_mlir.codegen.cuda.schedule import Launch
    from dynamo_mlir.codegen.gpu.host_sizes import Apply, Dim

    calls = []

    class Recorder:
        def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            size_at = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[1]
            calls.append(((gx, gy, gz), bx, shared, stream,
                          ctypes.cast(size_at, ctypes.POINTER(ctypes.c_int64)).contents.value))
            return (0,)

    monkeypatch.setattr(runtime, "driver", lambda: Recorder())
    grid = (Apply("arith.ceildivui", (Dim(0, 0), 256)), 1, 1)
    shared = Apply("arith.muli", (Dim(0, 0), 4))  # a row group's slots (row_staging.py): bytes per call
    step = runtime.launch_step(Launch("main_kernel", grid, (256, 1, 1), (("ptr", 0), ("index", Dim(0, 0))), shared),
                               None, 64)
    for n in (1000, 0, 70):
        step([torch.empty(n)], 7)
    assert calls == [((4, 1, 1), 256, 4000, 7, 1000), ((1, 1, 1), 256, 280, 7, 70)]


@on_gpu
@pytest.mark.cuda
def test_marked_dynamic_batch_compiles_once_and_matches_eager_at_every_size():
    dynamo_mlir.reset()
    torch._dynamo.reset()
    b = torch.randn(768, device="cuda")
    compiled = torch.compile(bias_exp, backend="mlir")
    for rows in (5, 17, 1000, 3):
        x = torch.randn(rows, 768, device="cuda")
        torch._dynamo.mark_dynamic(x, 0)
        before = x.clone()
        torch.testing.assert_close(compiled(x, b), bias_exp(x, b))
        assert torch.equal(x, before)
    s = assert_all_compiled(min_ops=3)
    assert s["graphs"] == 1, dynamo_mlir.explain()


REDUCTIONS = {
    "layer_norm_softmax": (layer_norm_softmax, lambda n: (torch.randn(n, 768), torch.randn(768), torch.randn(768))),
    "sum_max_last_two": (lambda x: x.sum((-1, -2)) + x.amax((-1, -2)), lambda n: (torch.randn(3, n, 7, 33),)),
    "mean_keepdim_of_view": (lambda x: x.transpose(0, 1).mean(-1, keepdim=True) * 2, lambda n: (torch.randn(n, 4, 50),)),
    "int_sum": (lambda x: x.sum(-1, dtype=torch.int32), lambda n: (torch.randint(-5, 5, (n, 300), dtype=torch.int32),)),
    "log_softmax_row_of_symbolic_length": (lambda x: torch.log_softmax(x, -1), lambda n: (torch.randn(4, n),)),
    # rows kept in shared memory (row_staging.py) where they fit (1500, 600, 11100 floats) and not
    # where they do not (300000): the staged launch or the plain one, chosen per call
    "softmax_rows_in_and_past_shared_memory": (lambda x: torch.softmax(x * 2, -1),
                                               lambda n: (torch.randn(3, n * 300),)),
    "rms_norm_rows_in_and_past_shared_memory": (lambda x, w: x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * w,
                                                lambda n: (torch.randn(2, n * 300), torch.randn(n * 300))),
    # lane groups of 4 floats (row_reduce.row_vectors) where this call's rows allow them: rows of
    # a length not a multiple of 4 (log_softmax above at n = 5, 37), a row starting past a 16-byte
    # boundary (the slice from 1), a row stride not a multiple of 4 (66) take one float a lane
    "softmax_of_rows_starting_past_a_vector_boundary": (lambda x: torch.softmax(x[:, 1:], -1),
                                                        lambda n: (torch.randn(3, n * 4 + 1),)),
    "layer_norm_of_rows_of_an_odd_stride": (lambda x, w: torch.nn.functional.layer_norm(x[:, :64], (64,), w),
                                            lambda n: (torch.randn(n, 66), torch.randn(64))),
    # row groups (codegen/gpu/row_groups.py): a residual add and layer norm on [2, n, 96] rows,
    # an RMS norm, a masked softmax over a symbolic row, and ops that must stay out of a group
    "residual_layer_norm": (lambda x, r, w, b: torch.nn.functional.layer_norm(x + r, (96,), w, b) * 2,
                            lambda n: (torch.randn(2, n, 96), torch.randn(2, n, 96), torch.randn(96), torch.randn(96))),
    "rms_norm": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                 lambda n: (torch.randn(3, n, 200), torch.randn(200))),
    "masked_softmax": (lambda s, m: torch.softmax(s.masked_fill(m, -1e4), -1),
                       lambda n: (torch.randn(2, 3, n, n), torch.rand(1, 1, n, n) > 0.7)),
    "column_normalize": (column_normalize, lambda n: (torch.randn(n, 64),)),
    # not a reduction: a rank-1 elementwise op in blocks of 8192 elements (row_reduce.chunk_launch)
    "flat_elementwise": (lambda x, y: torch.relu(torch.exp(x) * y + x), lambda n: (torch.randn(n * 999), torch.randn(n * 999))),
}


@on_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("vectors", [False, True], ids=["scalar_lanes", "row_vectors"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_over_symbolic_sizes_match_eager_at_every_size(name, vectors):
    """Row reductions with a symbolic row count or row length (one block per row), over several
    sizes (from 2: Dynamo specializes 0 and 1), compiled once; with cuda_row_vectors, each call
    taking the vector body or the scalar one by its rows' length, stride and address."""
    f, make = REDUCTIONS[name]
    dynamo_mlir.reset()
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="mlir", dynamic=True, options={"cuda_row_vectors": vectors})
    for n in (5, 1000, 2, 37):
        torch.manual_seed(n)
        args = [a.cuda() for a in make(n)]
        before = [a.clone() for a in args]
        torch.testing.assert_close(compiled(*args), f(*args), rtol=1e-5, atol=1e-5)
        assert all(torch.equal(a, c) for a, c in zip(args, before))
    s = assert_all_compiled(min_ops=1)
    assert s["graphs"] == 1, dynamo_mlir.explain()


@on_gpu
@pytest.mark.cuda
def test_automatic_dynamic_shapes_compile_at_most_twice_with_nothing_eager():
    """PyTorch's default: the second size recompiles with that dim symbolic, the third reuses it."""
    dynamo_mlir.reset()
    torch._dynamo.reset()
    f = lambda x, y: torch.where(x > 0, x * y, torch.tanh(y)) - 1  # noqa: E731
    compiled = torch.compile(f, backend="mlir")
    for length in (128, 192, 256, 320):
        x, y = torch.randn(8, length, 64, device="cuda"), torch.randn(8, length, 64, device="cuda")
        torch.testing.assert_close(compiled(x, y), f(x, y))
    s = assert_all_compiled(min_ops=4)
    assert s["graphs"] <= 2, dynamo_mlir.explain()


@on_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("model", ["gpt2", "bert"])
def test_a_language_model_over_changing_lengths_compiles_once_more_with_nothing_eager(model):
    """A transformers model (2 layers of 128, random weights) at four sequence lengths with
    PyTorch's automatic dynamic shapes: the second length recompiles with symbolic sizes, which
    serves the rest; every op in our kernels or as a library call, each length matching eager."""
    import transformers

    torch.manual_seed(0)
    dynamo_mlir.reset()
    torch._dynamo.reset()
    if model == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=2, use_cache=False)
        net = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                                      intermediate_size=512)
        net = transformers.BertForMaskedLM(cfg)
    net = net.cuda().eval()
    fn = lambda ids: net(input_ids=ids).logits  # noqa: E731
    compiled = torch.compile(fn, backend="mlir")
    with torch.no_grad():
        for length in (32, 48, 64, 80):
            ids = torch.randint(0, cfg.vocab_size, (2, length), device="cuda")
            torch.testing.assert_close(compiled(ids), fn(ids), rtol=1e-4, atol=1e-4)
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == {} and s["partitions_failed"] == 0 and s["runtime_fallback_calls"] == 0, \
        dynamo_mlir.explain()
    assert s["graphs"] <= 2 and s["ops_compiled"] > 50, dynamo_mlir.explain()
    # each layer's attention one torch call at symbolic sizes, its kernel picked per call
    # (frontend/attention_call.py), not the math form's two bmm and softmax
    assert s["library_ops"].get("dynamo_mlir.attention.default") == 2, dynamo_mlir.explain()


@on_gpu
@pytest.mark.cuda
def test_a_slice_by_a_symbolic_bound_reads_the_bound_per_call():
    dynamo_mlir.reset()
    torch._dynamo.reset()
    table = torch.randn(64, 32, device="cuda")
    f = lambda x, k: table[k : k + 4] * 2 + x  # noqa: E731
    compiled = torch.compile(f, backend="mlir", dynamic=True)
    x = torch.randn(4, 32, device="cuda")
    for k in (3, 11, 60):
        torch.testing.assert_close(compiled(x, k), f(x, k))
    s = assert_all_compiled(min_ops=2)
    assert s["graphs"] == 1, dynamo_mlir.explain()
