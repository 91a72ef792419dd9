"""Warm starts: the first call of a compiled model in a new process, with the compile caches empty
(cold) and filled by an earlier process (warm), dynamo-mlir against inductor in the same run.

    python benchmarks/compile_cache.py [--device cpu|cuda] [--models mlp,cnn,...] [--warm 2]

Every number is one new process's first call (Dynamo, AOTAutograd and the backend's compile,
then the call); warm figures are the median of --warm processes. The Dynamo floor is the same
first call with backend="eager": no cache of a backend goes below it. dynamo-mlir's cache is
DYNAMO_MLIR_CACHE_DIR, inductor's TORCHINDUCTOR_CACHE_DIR (its FX graph and AOTAutograd caches
on), each a fresh folder per model. A warm dynamo-mlir process must find every region in the
cache (checked through stats()).

Python bytecode: torch's modules come compiled (site-packages holds their .pyc files), and so
do a pip-installed dynamo-mlir's; an editable install under PYTHONDONTWRITEBYTECODE (this
project's machines set it) would compile ~90 of our source files again in every new process,
~0.2 s that no installed copy pays. The script compiles the package's bytecode first, as pip does.
"""

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch


def _models(device):
    from dynamo_mlir.tools.models import cnn, mlp, randomize_batchnorm, transformer_block

    def gpt2_small():  # GPT-2 small's shape (12 layers of 768, 12 heads), random weights
        import transformers

        cfg = transformers.GPT2Config(use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
        batch = (1, 128) if device == "cpu" else (8, 512)
        return (lambda ids: model(input_ids=ids).logits), model, (torch.randint(0, 50257, batch),)

    def resnet50():  # transformers' ResNet-50 (its default config), random weights and statistics
        import transformers

        model = randomize_batchnorm(transformers.ResNetForImageClassification(transformers.ResNetConfig()))
        batch = 1 if device == "cpu" else 32
        return (lambda x: model(pixel_values=x).logits), model, (torch.randn(batch, 3, 224, 224),)

    def module(build, *shape):
        return lambda: (lambda m: (m, m, (torch.randn(*shape),)))(build())

    return {"mlp": module(mlp, 64, 10), "cnn": module(cnn, 2, 3, 32, 32),
            "transformer_block": module(transformer_block, 8, 16, 64), "gpt2_small": gpt2_small, "resnet50": resnet50}


def child(model_name: str, backend: str, device: str) -> None:
    """One process: build the model, time the first compiled call, print JSON."""
    torch.manual_seed(0)
    fn, model, inputs = _models(device)[model_name]()
    model.eval().to(device)
    inputs = [t.to(device) for t in inputs]
    compiled = torch.compile(fn, backend=backend)
    with torch.no_grad():
        t0 = time.perf_counter()
        compiled(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        first = time.perf_counter() - t0
    out = {"first_call_s": first}
    if backend == "mlir":
        import dynamo_mlir

        s = dynamo_mlir.stats()
        out.update(cache=s["cache"], partitions=s["partitions"], ops_compiled=s["ops_compiled"],
                   compile_s=s["compile_seconds"], stage_s={k: round(v, 4) for k, v in s["stage_seconds"].items()})
    print(json.dumps(out))


def _run(model: str, backend: str, device: str, env: dict) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", model, backend, device], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{model} {backend}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(model: str, backend: str, device: str, warm: int) -> tuple[float, float, list]:
    folder = tempfile.mkdtemp(prefix=f"cache-{backend}-{model}-")
    env = ({"DYNAMO_MLIR_CACHE_DIR": folder} if backend == "mlir" else
           {"TORCHINDUCTOR_CACHE_DIR": folder, "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"})
    cold = _run(model, backend, device, env)
    warms = [_run(model, backend, device, env) for _ in range(warm)]
    if backend == "mlir":
        for w in warms:  # a warm process compiles nothing: every region came from disk
            assert w["cache"]["disk_hits"] == w["partitions"] and w["cache"]["misses"] == 0, w
    if os.environ.get("RAW"):  # every process's JSON, for where the time went
        print(json.dumps({"model": model, "backend": backend, "runs": [cold, *warms]}), file=sys.stderr)
    return cold["first_call_s"], statistics.median(w["first_call_s"] for w in warms), [cold, *warms]


def _compile_bytecode() -> None:
    """The package's .pyc files, as `pip install` writes them (see the docstring)."""
    import importlib.util

    for name in ("dynamo_mlir", "dynamo_mlir.frontend", "dynamo_mlir.dialects", "dynamo_mlir.lowering",
                 "dynamo_mlir.codegen", "dynamo_mlir.tools"):  # the installed folders (pyproject's package-dir)
        for root in importlib.util.find_spec(name).submodule_search_locations:
            compileall.compile_dir(root, quiet=1, rx=re.compile(r"/\.[^/]*/"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="mlp,cnn,transformer_block,gpt2_small,resnet50")
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "BACKEND", "DEVICE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    _compile_bytecode()
    print(f"# first call in a new process, {args.device}, torch {torch.__version__}, "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} cores\n")
    print("Dynamo floor: the first call with backend=\"eager\" (Dynamo's trace and guards, then the "
          "graph run eagerly): what no backend's cache removes.\n")
    print("| model | mlir cold s | mlir warm s | warm / cold | inductor cold s | inductor warm s | "
          "mlir warm / inductor warm | mlir cold / inductor cold | dynamo floor s | floor / mlir cold |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        mc, mw, _ = measure(model, "mlir", args.device, args.warm)
        ic, iw, _ = measure(model, "inductor", args.device, args.warm)
        floor = _run(model, "eager", args.device, {})["first_call_s"]
        print(f"| {model} | {mc:.2f} | {mw:.2f} | {mw / mc:.2f} | {ic:.2f} | {iw:.2f} | {mw / iw:.2f} | {mc / ic:.2f} "
              f"| {floor:.2f} | {floor / mc:.2f} |", flush=True)


if __name__ == "__main__":
    main()
