"""Two CUDA differences from issue 22, measured: where do they come from?

    python benchmarks/cuda_trust_checks.py        (needs a CUDA GPU)

1. `F.conv_transpose3d` float32: every OpInfo sample, compiled against eager (cuDNN with TF32,
   torch's default for convolutions), eager with TF32 off, and a float64 reference.
2. `aten._flash_attention_forward` (half types, no dropout): what its third output, rng_state,
   holds in eager over repeated calls, and what the compiled call returns.
"""

import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import dynamo_mlir


def _err(a, b) -> float:
    return (a.double() - b.double()).abs().max().item()


def conv_transpose3d() -> None:
    op = next(o for o in op_db if o.name == "nn.functional.conv_transpose3d")
    print("conv_transpose3d float32: max |x - float64| per sample")
    print("sample | compiled | eager (tf32 on) | eager (tf32 off) | compiled vs eager")
    for i, s in enumerate(op.sample_inputs("cuda", torch.float32)):
        fn = lambda x, *a: F.conv_transpose3d(x, *a, **s.kwargs)
        args = [s.input, *s.args]
        ref = F.conv_transpose3d(*[a.double() if isinstance(a, torch.Tensor) else a for a in args], **s.kwargs)
        eager = fn(*args)  # torch's default: cuDNN may use TF32 for float32 convolutions
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            eager32 = fn(*args)
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="mlir")(*args)
        print(f"{i} | {_err(compiled, ref):.2e} | {_err(eager, ref):.2e} | {_err(eager32, ref):.2e} | "
              f"{_err(compiled, eager):.2e}")
    print("stats of the last:", dynamo_mlir.stats()["library_ops"], dynamo_mlir.stats()["compiled_ops"])


def flash_rng_state() -> None:
    q = torch.randn(1, 64, 2, 32, device="cuda", dtype=torch.float16)
    call = lambda q: torch.ops.aten._flash_attention_forward(q, q, q, None, None, 64, 64, 0.0, False, False)
    print("flash attention forward, dropout 0: rng_state (output 2) of consecutive eager calls")
    for _ in range(3):
        print("  eager   ", call(q)[2].tolist())
    torch._dynamo.reset()
    compiled = torch.compile(call, backend="mlir")
    for _ in range(2):
        print("  compiled", compiled(q)[2].tolist())
    print("  explain:", dynamo_mlir.stats()["compiled_ops"], dynamo_mlir.stats()["fallback_ops"])


if __name__ == "__main__":
    conv_transpose3d()
    flash_rng_state()
