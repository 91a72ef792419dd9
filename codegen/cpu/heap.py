"""glibc's malloc set to keep freed memory for reuse (cpu option `retain_freed_memory`).

Why. A compiled function used to allocate its intermediate buffers (memref.alloc -> malloc) and
free them before returning, every call; since memory_plan.py they live in a workspace kept between
calls (option plan_memory), but torch's kernels it calls (library_conv.py: the convolution's
result, oneDNN's reorder buffers and scratch) still allocate and free per call. glibc serves a block above its mmap threshold with a fresh
mmap and unmaps it on free, and gives the top of its heap back to the kernel (sbrk) once more than
the trim threshold is free there; both thresholds adapt to the sizes freed, but only up to 32 and
64 MiB, and a call that frees several megabytes at once at the heap's top still trims it. The next
call then touches fresh pages: each one a page fault and a zeroing. Measured 2026-11-24 (AMD
EPYC, torch 2.13) on the benchmark CNN (3x conv-bn-relu-pool on 8x3x64x64, 2 MiB buffers) compiled
alone in a fresh process, with inductor's and eager's calls interleaved in the same process, one
thread, CPU time of the calling thread per call, median of 60 (minor faults per call):

    default malloc:          mlir 9.06 (2811)   inductor 4.56 (24)   eager 12.10 (1062)
    this module's settings:  mlir 4.24 (0)      inductor 3.58 (0)    eager  8.75 (32)

(Those figures predate memory planning and channels-last chains. `python
benchmarks/cnn_page_faults.py --threads 2`, each configuration in its own process, 2026-11-24:
2496 faults a call with both off, 992 with memory planning (torch's NCHW convolutions' are left),
0 with channels-last chains too, inductor 0.)

In benchmarks/bench_models.py's process the same model ran as fast either way (mlir 3.26-3.55 ms
with the option, 3.33-3.55 without, `--threads 1 --only cnn`, 3 runs each), presumably because
the eager and inductor calls before had already raised glibc's adaptive thresholds: without the
settings, how a call performs depends on what the process allocated before; with them it does not.

They also explain why torch's NCHW convolution looked several times slower than channels-last here
(2.2 vs 0.3 ms for 8x3x64x64 -> 16 channels, 2 threads): with the settings below the two are
within 20% (0.38 vs 0.32 ms), the NCHW path's oneDNN reorder buffers having been the page faults.

Why off by default. The settings are the process's, not ours: eager torch and every other library
in it get them, they cannot be undone, and the process keeps up to 64 MiB it no longer uses. A
backend should not change that behind its user's back; a user who wants the steady calls can turn
the option on (or set glibc's MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ themselves).

What. mallopt(M_MMAP_THRESHOLD, 32 MiB) and mallopt(M_TRIM_THRESHOLD, 64 MiB): the ceilings
glibc's own adaptation would reach, fixed from the start (setting either turns the adaptation
off). Blocks below 32 MiB come from the heap and the process keeps up to 64 MiB free at its top,
so a steady sequence of calls reuses the same pages. The settings are process-wide (eager torch
in the same process gets them too): they are applied once, when the first function compiled with
the option loads; turning the option off later does not undo them. On a libc without mallopt
(not glibc) nothing is done.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("dynamo_mlir")

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h parameter numbers
SETTINGS = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 64 << 20))
_applied = False


def retain_freed_memory() -> None:
    """Apply SETTINGS once per process (glibc only)."""
    global _applied
    if _applied:
        return
    _applied = True
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        log.debug("dynamo-mlir: this libc has no mallopt; malloc left as it is")
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    for param, value in SETTINGS:
        if mallopt(param, value) != 1:  # mallopt returns 1 on success
            log.warning("dynamo-mlir: mallopt(%d, %d) failed; freed memory may go back to the kernel", param, value)
