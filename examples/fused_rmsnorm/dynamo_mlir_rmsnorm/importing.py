"""FX node `fused.rms_norm.default` -> `fused.rms_norm`; anything the op is not defined for is
left eager with the reason (the eager custom op still computes it). Static shapes only: the
core leaves a plugin op with symbolic sizes eager before its import rule runs."""

import torch
from torch_mlir import ir

from dynamo_mlir import plugin

from .dialect import RMSNormOp
from .op import rms_norm  # noqa: F401  (defines torch.ops.fused.rms_norm)

DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@plugin.import_rule(torch.ops.fused.rms_norm.default)
def import_rms_norm(ctx: plugin.ImportContext, node):
    a = plugin.bind(node)
    x, weight = ctx.tensor(a.x), ctx.tensor(a.weight)
    dtype = ctx.dtype_of(x)
    if dtype not in DTYPES:
        raise plugin.Unsupported(f"fused.rms_norm is compiled for {[str(d) for d in DTYPES]}, not {dtype}")
    if ctx.dtype_of(weight) != dtype:
        raise plugin.Unsupported(f"weight's dtype {ctx.dtype_of(weight)} differs from x's {dtype}")
    if len(ctx.shape_of(weight)) != 1:
        raise plugin.Unsupported(f"weight must be 1-d, got shape {ctx.shape_of(weight)}")
    eps = ir.FloatAttr.get(ir.F64Type.get(), float(a.eps))
    return RMSNormOp(x, weight, eps, out=ctx.out_type(node)).out
