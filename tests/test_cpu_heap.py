"""cpu option retain_freed_memory (codegen/cpu/heap.py): glibc's malloc keeps the pages a call
frees, so that steady calls of a compiled CNN touch no fresh pages.

Each case runs in a fresh interpreter: the mallopt settings are process-wide and cannot be undone,
so the `off` case would be meaningless in this one. The CNN (conv-bn-relu-pool x3 on 8x3x64x64,
2 MiB buffers freed together at each call's end) is the workload that faulted: with glibc's own
adaptive thresholds the heap's top is trimmed at every call's end."""

import ctypes
import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, resource, torch
import dynamo_mlir
from dynamo_mlir.tools.models import cnn, randomize_batchnorm
torch.manual_seed(0)
model = randomize_batchnorm(cnn(stages=3, image=64)).eval()
x = torch.randn(8, 3, 64, 64)
with torch.no_grad():
    compiled = torch.compile(model, backend="mlir", dynamic=False)
    for _ in range(5):
        got = compiled(x)
    torch.testing.assert_close(got, model(x))
    windows = []  # the steady state: the quietest of three windows (a collection of Python's own
    for _ in range(3):  # objects or a thread pool's growth lands in one of them, 100+ faults a call seen)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(10):
            compiled(x)
        windows.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
    faults = min(windows)
stats = dynamo_mlir.stats()
print(json.dumps({"faults": faults, "library": stats["library_ops"], "fallback": stats["ops_fallback"]}))
"""


def _faults_per_call(retain: bool) -> dict:
    env = {**os.environ, "DYNAMO_MLIR_RETAIN_FREED_MEMORY": "1" if retain else "0", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallopt"), reason="not glibc: no mallopt")
def test_steady_calls_touch_no_fresh_pages():
    on, off = _faults_per_call(True), _faults_per_call(False)
    for run in (on, off):  # the same program either way: three convolutions and the linear as torch/BLAS calls
        assert run["library"] == {"aten.convolution.default": 3, "aten.mm.default": 1} and run["fallback"] == 0
    # With the settings: Python's own pages only (0-26 a call measured). Without them the workload
    # faulted 2090 times a call here (glibc 2.36; each 2 MiB buffer is 512 pages); how much
    # depends on glibc's adaptive thresholds, so that side is compared only where it faulted.
    assert on["faults"] < 100, on
    if off["faults"] >= 100:
        assert on["faults"] < off["faults"] / 5, (on, off)
