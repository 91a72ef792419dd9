"""The half types on a CPU without AVX-512 (issue 22: bf16 std/var/index_reduce killed the
process on AVX2-only EPYCs, `JIT session error: Symbols not found: [ __truncsfbf2 ]`).

This project's machines are AVX-512 or AVX2-only EPYCs; CI runs on whichever it gets. To run
the other kind here, the cases (tests/emulated_avx2_cases.py) run under qemu's user-mode
emulation of a Haswell (AVX2, no AVX-512): torch and LLVM's JIT both read the CPU from CPUID, so
eager's kernels and our machine code are both chosen for that CPU. qemu-user is installed by
`make toolchains`; without it the test skips."""

import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
QEMU = shutil.which("qemu-x86_64")


@pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 not found: apt-get install qemu-user (make toolchains)")
def test_half_types_compile_and_match_eager_on_an_avx2_cpu():
    script = os.path.join(HERE, "emulated_avx2_cases.py")
    run = subprocess.run([QEMU, "-cpu", "Haswell", sys.executable, script], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "PYTHONPATH": HERE})
    assert run.returncode == 0, run.stderr[-3000:]  # a crash (SIGSEGV: rc -11) fails here
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["cpu"] == "AVX2", result  # the emulation hid AVX-512 from torch
    for name, case in result["cases"].items():
        assert case["eager"] == {}, (name, case)
        assert case["compiled"] >= 1, (name, case)
        assert case["error"] <= 0.0625, (name, case)  # a bf16 ulp at the values' scale (|x| < 8)
