"""Models for the `dynamo-mlir` CLI (MODEL syntax `path/to/rmsnorm_models.py:name`): factories
returning (callable, example inputs)."""

import torch

import dynamo_mlir_rmsnorm

ROWS, HIDDEN = 64, 4096


def rms_norm():
    """One fused RMSNorm over 64 rows of 4096 (float32)."""
    fn = lambda x, w: dynamo_mlir_rmsnorm.rms_norm(x, w, 1e-6)  # noqa: E731
    return fn, (torch.randn(ROWS, HIDDEN), torch.randn(HIDDEN))


def rms_norm_bf16():
    fn, (x, w) = rms_norm()
    return fn, (x.bfloat16(), w.bfloat16())
