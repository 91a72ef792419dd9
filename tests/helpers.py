"""Shared test helpers: compile through backend="mlir" and read back what was compiled."""

import glob
import os

import torch

import dynamo_mlir


def compile_and_run(fn, *inputs, options=None, **compile_kwargs):
    compiled = torch.compile(fn, backend="mlir", options=options or {}, **compile_kwargs)
    return compiled(*inputs)


def assert_all_compiled(min_ops: int = 1, library: dict[str, int] | None = None) -> dict:
    """Every ATen op ran in our generated code (or, exactly as `library` says, {aten op: count},
    as a library call): no eager op, no failed partition, no call that a region sent to eager at
    run time, and at least `min_ops` ops compiled."""
    return assert_fallbacks({}, min_ops, library)


def assert_fallbacks(expected: dict[str, int], min_ops: int = 1, library: dict[str, int] | None = None) -> dict:
    """Exactly the eager ops `expected` ({aten op: count}) and the library calls `library`
    (default none); everything else compiled by us (at least `min_ops` ops)."""
    s = dynamo_mlir.stats()
    assert s["fallback_ops"] == expected, dynamo_mlir.explain()
    assert s["library_ops"] == (library or {}), dynamo_mlir.explain()
    assert s["partitions_failed"] == 0, dynamo_mlir.explain()
    assert s["runtime_fallback_calls"] == 0, dynamo_mlir.explain()
    assert s["ops_compiled"] >= min_ops, dynamo_mlir.explain()
    return s


def read_stage(dump_dir: str, stage: str) -> str:
    """The concatenated text of every `<graph>.<stage>.*` file in a dump folder."""
    paths = sorted(glob.glob(os.path.join(dump_dir, f"*.{stage}.*")))
    assert paths, f"no {stage} dump in {dump_dir}: {os.listdir(dump_dir)}"
    return "\n".join(open(p).read() for p in paths)
