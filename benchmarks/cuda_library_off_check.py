"""library_matmul on vs off on the cuda target: numerics against eager and where the ops ran.

    python benchmarks/cuda_library_off_check.py              # on a GPU: max errors vs eager
    python benchmarks/cuda_library_off_check.py --ptx-only   # no GPU: PTX for both, checked by ptxas

With `library_matmul` on, the host schedule hands matmul/conv/pooling to torch (cuBLAS/cuDNN);
off, they are generalized and run in our own generated kernels. For each model, inference and
one training step (gradients of the parameters), both settings, the script prints the largest
absolute and relative error against eager and the op counts of dynamo_mlir.stats()
(compiled = generated code, library = library calls, eager). It exits 1 if an error is over the
tolerance, a region failed to compile, or library off still made a library call other than the
scatter writes, which the cuda target always hands to torch (ops that run
eagerly, unsupported on the cuda target, are listed but are not a failure of this check).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn

import dynamo_mlir
from dynamo_mlir.tools.models import TinyGPT, cnn, mlp, randomize_batchnorm, transformer_block

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from helpers import zeros_runtime  # noqa: E402  (the tests' stages-without-a-GPU loader)

TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 5e-2}  # per tensor: max |error| / max |eager value|
# ... or at most this absolute error: gradients that are rounding noise in eager too (a conv bias
# followed by batch norm has a true gradient of 0) have no meaningful relative error.
ABSOLUTE = 1e-5
# ATen ops the cuda target runs as torch calls whatever library_matmul says (the scatter writes:
# codegen/cuda/library_calls.py); library off may still call torch for these.
ALWAYS_TORCH = {"aten.index_put.default", "aten._unsafe_index_put.default", "aten.put.default", "aten.scatter.src",
                "aten.scatter.value", "aten.scatter.reduce", "aten.scatter.value_reduce", "aten.scatter_add.default",
                "aten.scatter_reduce.two", "aten.index_reduce.default"}


def library_off_ok(s: dict) -> bool:
    """With library_matmul off: no library call but the scatter writes."""
    return set(s["library_ops"]) <= ALWAYS_TORCH


def odd_cnn() -> nn.Module:
    """Strided, dilated and grouped convolutions, average pooling: the other conv/pool forms."""
    return nn.Sequential(nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, dilation=2, groups=4),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8 * 2 * 2, 5))


MODELS = {  # name -> (model factory, example input factory)
    "mlp": (mlp, lambda: torch.randn(64, 10)),
    "cnn": (lambda: randomize_batchnorm(cnn()), lambda: torch.randn(4, 3, 32, 32)),
    "odd_cnn": (odd_cnn, lambda: torch.randn(2, 4, 16, 16)),
    "transformer_block": (transformer_block, lambda: torch.randn(2, 16, 64)),
    "tiny_gpt": (TinyGPT, lambda: torch.randint(0, 256, (2, 32))),
}


def run(model, x, train: bool, options: dict):
    """Outputs (and parameter gradients with `train`) of eager, then of the compiled model."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    results = []
    for fn in (model, torch.compile(model, backend="mlir", options=options)):
        model.zero_grad(set_to_none=True)
        with torch.set_grad_enabled(train):
            out = fn(x)
            if train:
                out.float().square().mean().backward()
        results.append([out.detach()] + ([p.grad for p in model.parameters() if p.grad is not None] if train else []))
    return results


def max_errors(want: list, got: list) -> tuple[float, float]:
    """Largest absolute error, and largest error relative to its tensor's largest eager value
    (over the tensors whose error is above ABSOLUTE)."""
    errors = [((g.float() - w.float()).abs().max().item(), w.float().abs().max().item() or 1.0)
              for w, g in zip(want, got)]
    return max(e for e, _ in errors), max([e / scale for e, scale in errors if e > ABSOLUTE] or [0.0])


def check(name: str, train: bool, library: bool, dtype, device: str) -> bool:
    factory, inputs = MODELS[name]
    torch.manual_seed(0)
    model = factory().to(device).train(train)
    model = model.to(dtype) if dtype is not torch.float32 else model
    x = inputs().to(device)
    x = x.to(dtype) if x.is_floating_point() else x
    # library off: SDPA in our kernels too (its fused library call has an option of its own)
    options = {"target": "cuda", "library_matmul": library, "cuda_library_attention": library}
    want, got = run(model, x, train, options)
    s = dynamo_mlir.stats()
    absolute, relative = max_errors(want, got)
    ok = relative <= TOLERANCE[dtype] and s["partitions_failed"] == 0 and (library or library_off_ok(s))
    print(f"{name:18} {'train' if train else 'infer':5} {str(dtype)[6:]:8} library={'on ' if library else 'off'} "
          f"max abs err {absolute:.2e}, rel {relative:.2e}; ops compiled {s['ops_compiled']}, "
          f"library {s['ops_library']} {sorted(s['library_ops'])}, eager {s['ops_fallback']}{_eager(s)}  {'ok' if ok else 'FAIL'}")
    return ok


def ptx_only(name: str, train: bool, library: bool) -> bool:
    """No GPU: generate every stage for the cuda target on CPU tensors and assemble the PTX."""
    factory, inputs = MODELS[name]
    torch.manual_seed(0)
    model, x = factory().train(train), inputs()
    folder = tempfile.mkdtemp(prefix="dynamo_mlir_ptx_")
    torch._dynamo.reset()
    dynamo_mlir.reset()
    compiled = torch.compile(model, backend="mlir", options={"target": "cuda", "library_matmul": library,
                                                             "cuda_library_attention": library,
                                                             "cuda_arch": "sm_90", "dump_dir": folder})
    with zeros_runtime("cuda"), torch.set_grad_enabled(train):
        out = compiled(x)
        if train:
            out.float().square().mean().backward()
    s = dynamo_mlir.stats()
    ptx = sorted(glob.glob(os.path.join(folder, "*.ptx.ptx")))
    assembled = [_ptxas(p) for p in ptx] if shutil.which("ptxas") else []
    ok = s["partitions_failed"] == 0 and (library or library_off_ok(s)) and all(assembled)
    print(f"{name:18} {'train' if train else 'infer':5} library={'on ' if library else 'off'} {len(ptx)} PTX file(s), "
          f"ptxas {'ok' if all(assembled) else 'FAILED'}{'' if assembled else ' (not run: no ptxas)'}; "
          f"ops compiled {s['ops_compiled']}, library {s['ops_library']}, eager {s['ops_fallback']}{_eager(s)}, "
          f"failed partitions {s['partitions_failed']}  {'ok' if ok else 'FAIL'}")
    shutil.rmtree(folder)
    return ok


def _eager(s: dict) -> str:
    return f" {sorted(s['fallback_ops'])}" if s["fallback_ops"] else ""


def _ptxas(path: str) -> bool:
    done = subprocess.run(["ptxas", "-arch=sm_90", "-o", os.devnull, path], capture_output=True, text=True)
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return done.returncode == 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    p.add_argument("--ptx-only", action="store_true", help="no GPU: generate PTX and run ptxas only")
    p.add_argument("--no-train", action="store_true", help="inference only")
    p.add_argument("--bf16", action="store_true", help="also run inference in bfloat16 (GPU only)")
    args = p.parse_args(argv)
    if not args.ptx_only and not torch.cuda.is_available():
        p.error("no CUDA GPU here: run with --ptx-only, or on a GPU machine")
    cases = [(name, train, library) for name in args.models.split(",") for train in ([False] if args.no_train else [False, True])
             for library in (True, False)]
    if args.ptx_only:
        results = [ptx_only(*case) for case in cases]
    else:
        results = [check(name, train, library, torch.float32, "cuda") for name, train, library in cases]
        if args.bf16:
            results += [check(name, False, library, torch.bfloat16, "cuda") for name in args.models.split(",")
                        for library in (True, False)]
    print(f"{sum(results)} of {len(results)} ok")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
