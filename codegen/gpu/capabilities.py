"""What a GPU offers the kernel strategies, as data (tinygrad's renderers declare theirs the same
way): a strategy reads the numbers here instead of a constant of its own, so one strategy serves
every architecture a descriptor exists for."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuCapabilities:
    name: str
    warp_size: int                 # threads that run in lock step (a warp, a wavefront)
    max_threads_per_block: int
    shared_memory_bytes: int       # per block, without opting in to more
    vector_bytes: int              # the widest load or store one thread makes
    # Tensor-core tiles (m, n, k) per operand type, for a contraction strategy.
    mma_shapes: tuple[tuple[str, tuple[int, int, int]], ...] = ()

    @property
    def block_threads(self) -> int:
        """Threads per block of an elementwise kernel: 8 warps (a wavefront of 64 makes 4)."""
        return min(self.max_threads_per_block, 8 * 32)


_HALF_MMA = (("f16", (16, 8, 16)), ("bf16", (16, 8, 16)), ("tf32", (16, 8, 8)))

NVIDIA = {
    "sm_80": GpuCapabilities("sm_80", 32, 1024, 48 * 1024, 16, _HALF_MMA),
    "sm_89": GpuCapabilities("sm_89", 32, 1024, 48 * 1024, 16, _HALF_MMA),
    "sm_90": GpuCapabilities("sm_90", 32, 1024, 48 * 1024, 16, _HALF_MMA),
}
AMD = {
    "gfx90a": GpuCapabilities("gfx90a", 64, 1024, 64 * 1024, 16),
    "gfx942": GpuCapabilities("gfx942", 64, 1024, 64 * 1024, 16),
}
_ALL = {**NVIDIA, **AMD}


def capabilities_for(arch: str) -> GpuCapabilities:
    """The descriptor of `arch` (sm_90a reads as sm_90; an unknown NVIDIA arch as the newest
    known one not above it)."""
    base = arch.rstrip("af") if arch.startswith("sm_") else arch
    if base in _ALL:
        return _ALL[base]
    if base.startswith("sm_") and base[3:].isdigit():
        known = sorted((int(k[3:]), k) for k in NVIDIA)
        older = [k for n, k in known if n <= int(base[3:])]
        if older:
            return NVIDIA[older[-1]]
    raise KeyError(f"no GPU capabilities for architecture {arch!r} (known: {', '.join(sorted(_ALL))})")
