"""A fixed, fast slice of the OpInfo coverage sweep (benchmarks/op_coverage.py), so op coverage
cannot regress silently: no op may mismatch or error, and the compiled count may not drop below
the floor recorded when the subset was chosen (raise it when coverage grows)."""

import os
import sys

import pytest

pytest.importorskip("expecttest")  # op_db needs it

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import op_coverage  # noqa: E402  (not "coverage": that name is the coverage.py package)

# Representative: elementwise, compare, reductions, shapes, movement, nn, creation, scans, norms.
SUBSET = [
    "add", "mul", "div.no_rounding_mode", "sub", "exp", "log10", "sigmoid", "tanh", "abs", "round.decimals_3",
    "eq", "where", "clamp", "sum", "mean", "amax", "argmax", "softmax", "cumsum", "linalg.vector_norm",
    "permute", "flip", "roll", "diagonal", "cat", "expand", "nn.functional.relu", "nn.functional.gelu",
    "nn.functional.layer_norm", "full_like", "linspace",
    # Families added for issue 6: special functions, sort/scan, scatter, 3-d conv/pool, distances.
    "lgamma", "digamma", "special.bessel_j0", "special.chebyshev_polynomial_t", "erfinv",
    "median", "searchsorted", "cummax", "scatter_add", "index_put", "nn.functional.conv3d",
    "nn.functional.avg_pool2d", "cdist", "frexp", "nn.functional.glu", "nonzero_static",
]
# 47 until float32 convolutions became torch calls (codegen/cpu/library_conv.py): conv3d's samples
# without a bias now run no op in generated code, which the sweep counts as "fallback", not "compiled".
COMPILED_FLOOR = 46
SAMPLES = 3


def test_subset_has_no_mismatch_or_error():
    pattern = "^(" + "|".join(n.replace(".", r"\.") for n in SUBSET) + ")$"
    names = op_coverage.op_names(pattern)
    assert len(names) >= len(SUBSET) - 1, names
    cfg = dict(dtype="float32", device="cpu", train=False, samples=SAMPLES)
    rows = op_coverage.run_pool(names, cfg, jobs=2, timeout=120)
    bad = [(r["name"], r["verdict"], r["reason"]) for r in rows if r["verdict"] in ("mismatch", "error")]
    assert not bad, bad
    compiled = sum(r["verdict"] == "compiled" for r in rows)
    assert compiled >= COMPILED_FLOOR, op_coverage.table(rows)


def test_compiled_means_generated_code_and_checked_values():
    """An entry with no op to generate code for (contiguous of a contiguous tensor) is not
    'compiled', nor one whose values cannot be compared (empty_like: uninitialized); exp is."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import coverage_sample

    by_name = {op_coverage._full_name(op): op for op in op_db}
    rows = {name: coverage_sample.run_op(by_name[name], torch.float32, "cpu", False, 1)
            for name in ("contiguous", "empty_like", "exp")}
    assert rows["exp"].verdict == "compiled"
    assert rows["contiguous"].verdict == "fallback" and "no op ran in generated code" in rows["contiguous"].reason
    assert rows["empty_like"].verdict == "unverified"
    text = op_coverage.markdown([dict(vars(r), name=n) for n, r in rows.items()], "float32 cpu", "cmd", 60.0, 1)
    assert "each entry ran its first 1 OpInfo sample(s)" in text and "3 samples over 3 entries" in text
    assert "compiled 1 (33.3%), unverified 1, fallback 1" in text


def test_the_sweep_compares_inputs_after_the_call(monkeypatch):
    """addmm/baddbmm's gemm accumulates into `self`: with arguments writable to bufferization
    (read_only_arguments made a no-op) the compiled call writes the caller's tensor, and the
    sweep must call that a mismatch even though the outputs agree; as compiled, it matches."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import coverage_sample
    from dynamo_mlir.codegen import stages

    by_name = {op_coverage._full_name(op): op for op in op_db}
    run = lambda name: coverage_sample.run_op(by_name[name], torch.float32, "cpu", False, 2)
    assert run("baddbmm").verdict != "mismatch"
    monkeypatch.setattr(stages, "read_only_arguments", lambda module, writable=frozenset(): None)
    monkeypatch.setenv("DYNAMO_MLIR_CACHE", "0")  # a patched compiler: nothing compiled before may be reused
    broken = run("baddbmm")
    assert broken.verdict == "mismatch" and broken.reason.startswith("input 0:"), broken
    assert "(after the call)" in broken.reason
