"""The rocm target's own options: `options={"rocm_arch": "gfx942"}`, DYNAMO_MLIR_ROCM_ARCH, or
the CLI's `-O rocm_arch=gfx942`."""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_mlir.plugin import TargetOptions, option

# The gfx architectures this target has been checked to produce code objects for (llvmlite's
# AMDGPU backend knows many more; each needs its e_flags value in code_object.py to be accepted).
ARCHES = ("gfx90a", "gfx942")


def _arch(value: str) -> str | None:
    return None if value in ARCHES else f"rocm_arch must be one of {', '.join(ARCHES)}, got {value!r}"


@dataclass(frozen=True)
class ROCmOptions(TargetOptions):
    rocm_arch: str = option("gfx90a", "AMD GPU architecture of the code object (gfx90a: MI200, gfx942: MI300).", _arch)
    rocm_fuse_rows: bool = option(True, "Fuse a row's reductions and the elementwise ops around them into one "
                                        "kernel (one workgroup per row).")

    def gpu_arch(self) -> str:
        """The architecture codegen/gpu's kernel strategies read the capabilities of."""
        return self.rocm_arch
