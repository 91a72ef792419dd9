"""The aarch64 target's runtime: each call runs the region's shared library under qemu-aarch64.

A small C runner (runner.c, cross-compiled once and cached) dlopens the library, reads each
input tensor from a raw file, calls `<entry>_packed(void **args)` (inputs, then outputs) and
writes the outputs to files, which Python reads back into tensors it allocated from the
signature. On an AArch64 device the same runner and library run natively.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import tempfile
from importlib import resources

import numpy as np
import torch

from dynamo_mlir.plugin import CompileError, Signature

from . import toolchain
from .pipeline import PACKED_SUFFIX

log = logging.getLogger("dynamo_mlir")

DEFAULT_DIR = os.path.join(os.path.expanduser("~"), ".cache", "dynamo-mlir-edge")


def artifact_dir(options) -> str:
    folder = options.target_options.aarch64_artifact_dir or DEFAULT_DIR
    os.makedirs(folder, exist_ok=True)
    return folder


def _write_atomically(path: str, data: bytes) -> None:
    """Another process may read the same cached file: it sees it whole or not at all."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def runner(folder: str) -> str:
    """The runner binary, compiled once per version of runner.c (the file name holds its hash)."""
    source = resources.files(__package__).joinpath("runner.c").read_bytes()
    path = os.path.join(folder, f"runner-{hashlib.sha256(source).hexdigest()[:12]}")
    if os.path.exists(path):
        return path
    with tempfile.TemporaryDirectory(prefix="dynamo-mlir-edge-") as build:
        src, exe = os.path.join(build, "runner.c"), os.path.join(build, "runner")
        with open(src, "wb") as f:
            f.write(source)
        cc = subprocess.run([toolchain.CC, "-O2", "-o", exe, src, "-ldl"], capture_output=True, text=True)
        if cc.returncode != 0:
            raise CompileError("load", f"{toolchain.CC} failed to build the runner: {cc.stderr.strip()}")
        with open(exe, "rb") as f:
            _write_atomically(path, f.read())
    os.chmod(path, 0o755)
    log.info("dynamo-mlir: aarch64 runner built: %s", path)
    return path


def save_library(library: bytes, options) -> str:
    """The deploy artifact on disk, `<graph>-<hash>.so`: one file per distinct library."""
    name = f"{options.graph_name}-{hashlib.sha256(library).hexdigest()[:12]}.so"
    path = os.path.join(artifact_dir(options), name)
    if not os.path.exists(path):
        _write_atomically(path, library)
    return path


def _to_file(t: torch.Tensor, path: str) -> None:
    t.contiguous().reshape(-1).view(torch.uint8).numpy().tofile(path)  # bytes as they are (bf16 too)


def _from_file(out: torch.Tensor, path: str) -> None:
    data = np.fromfile(path, dtype=np.uint8)
    out.reshape(-1).view(torch.uint8).copy_(torch.from_numpy(data))


class QemuFunction:
    """A callable over CPU tensors that runs one region's AArch64 library under qemu."""

    def __init__(self, library_path: str, runner_path: str, signature: Signature):
        self.library_path, self.signature = library_path, signature
        self._command = [toolchain.QEMU, "-L", toolchain.SYSROOT, runner_path, library_path,
                         signature.name + PACKED_SUFFIX, str(len(signature.inputs))]
        self._outputs = [(spec.shape, spec.dtype) for spec in signature.outputs]

    def __call__(self, *inputs: torch.Tensor) -> list[torch.Tensor]:
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in self._outputs]
        with tempfile.TemporaryDirectory(prefix="dynamo-mlir-edge-") as folder:
            in_paths = [os.path.join(folder, f"in{i}.bin") for i in range(len(inputs))]
            out_paths = [os.path.join(folder, f"out{j}.bin") for j in range(len(outputs))]
            for t, path in zip(inputs, in_paths):
                _to_file(t, path)
            sizes = [str(t.numel() * t.element_size()) for t in outputs]
            command = [*self._command, *in_paths, *[a for pair in zip(out_paths, sizes) for a in pair]]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"dynamo-mlir: the aarch64 region {self.library_path} failed under qemu "
                                   f"(exit {run.returncode}): {run.stderr.strip()}")
            for t, path in zip(outputs, out_paths):
                _from_file(t, path)
        return outputs


def load(library: bytes, signature: Signature, options) -> QemuFunction:
    if not signature.is_static:
        raise CompileError("load", "the aarch64 target runs static shapes only (compile with dynamic=False)")
    toolchain.require("load")
    folder = artifact_dir(options)
    return QemuFunction(save_library(library, options), runner(folder), signature)
