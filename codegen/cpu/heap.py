"""glibc's malloc set to keep freed memory for reuse (cpu option `retain_freed_memory`).

Why. A compiled function allocates its intermediate buffers (memref.alloc -> malloc) and frees
them before returning, every call; torch's kernels it calls (library_conv.py: the convolution's
result, oneDNN's scratch) do the same. glibc serves a block above its mmap threshold with a fresh
mmap and unmaps it on free, and gives the top of its heap back to the kernel (sbrk) once more than
the trim threshold is free there; both thresholds adapt to the sizes freed, but only up to 32 and
64 MiB, and a call that frees several megabytes at once at the heap's top still trims it. The next
call then touches fresh pages: each one a page fault and a zeroing. The CNN benchmark (3x conv-bn-
relu-pool on 8x3x64x64, 2 MiB buffers) took 850-2100 minor faults per call in the compiled
function, ~1000 in eager, ~0-24 in inductor's (which reuses its buffers across a call), and
those faults were most of the difference with inductor: median ms of 80 interleaved calls, 2
threads, one process (/tmp script, see docs/results.md for the benchmark itself):

    default malloc:          mlir 6.1-7.2  inductor 3.8  eager 8.5   (mlir faults/call 850-2100)
    this module's settings:  mlir 2.7      inductor 2.4  eager 5.6   (faults/call 0 for all three)

They also explain why torch's NCHW convolution looked several times slower than channels-last here
(2.2 vs 0.3 ms for 8x3x64x64 -> 16 channels): with the settings below the two are within 20%
(0.38 vs 0.32 ms), the NCHW path's oneDNN reorder buffers having been the page faults.

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
