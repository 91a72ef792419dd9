"""The host tools this target needs, and the Debian packages that provide them.

Generating LLVM IR and the object file needs nothing but llvmlite (its LLVM has the AArch64
backend). Linking the shared library needs the cross compiler; running it needs qemu's user-mode
emulator and the AArch64 C library the cross compiler brings (its sysroot).
"""

from __future__ import annotations

import os
import shutil

from dynamo_mlir.plugin import CompileError

TRIPLE = "aarch64-unknown-linux-gnu"
SYSROOT = "/usr/aarch64-linux-gnu"  # ld-linux-aarch64.so.1, libc, libm: qemu-aarch64 -L reads them here
CC = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64"

# tool (or path) -> the Debian package that installs it
PACKAGES = {
    CC: "gcc-aarch64-linux-gnu",
    QEMU: "qemu-user",
    SYSROOT: "libc6-arm64-cross",  # a dependency of gcc-aarch64-linux-gnu
}


def _present(tool: str) -> bool:
    return os.path.isdir(tool) if tool.startswith("/") else shutil.which(tool) is not None


def missing(tools=tuple(PACKAGES)) -> list[str]:
    return [tool for tool in tools if not _present(tool)]


def available() -> bool:
    """Whether this machine can link and run the target's code (Target.available)."""
    return not missing()


def require(stage: str, tools=tuple(PACKAGES)) -> None:
    """Raise a CompileError naming the Debian packages to install when a tool is absent."""
    absent = missing(tools)
    if absent:
        packages = " ".join(sorted({PACKAGES[t] for t in absent}))
        raise CompileError(stage, f"the aarch64 target needs {', '.join(absent)}, not found on this machine; "
                                  f"install them with `apt-get install {packages}`")
