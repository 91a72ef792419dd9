"""Shared test helpers: compile through backend="mlir" and read back what was compiled."""

import glob
import os

import torch

import dynamo_mlir


def compile_and_run(fn, *inputs, options=None, **compile_kwargs):
    compiled = torch.compile(fn, backend="mlir", options=options or {}, **compile_kwargs)
    return compiled(*inputs)


def assert_all_compiled(min_ops: int = 1) -> dict:
    """No eager fallback, no failed partition, and at least `min_ops` ATen ops compiled by us."""
    s = dynamo_mlir.stats()
    assert s["ops_fallback"] == 0, dynamo_mlir.explain()
    assert s["partitions_failed"] == 0, dynamo_mlir.explain()
    assert s["ops_compiled"] >= min_ops, dynamo_mlir.explain()
    return s


def read_stage(dump_dir: str, stage: str) -> str:
    """The concatenated text of every `<graph>.<stage>.*` file in a dump folder."""
    paths = sorted(glob.glob(os.path.join(dump_dir, f"*.{stage}.*")))
    assert paths, f"no {stage} dump in {dump_dir}: {os.listdir(dump_dir)}"
    return "\n".join(open(p).read() for p in paths)
