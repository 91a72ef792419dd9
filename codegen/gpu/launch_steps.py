"""A host schedule's launches and allocations run on a GPU, whatever its driver.

The cuda runtime (cuLaunchKernel) and a GPU plugin's (the rocm example: hipModuleLaunchKernel)
run the same host schedule (codegen/cuda/schedule.py, plain data): a launch is a kernel, a grid,
a block and arguments; an allocation is a torch.empty. Either may be known only per call, as an
expression of the call's sizes (host_sizes.py), and so may a launch's dynamic shared memory. What
differs is the driver call, handed in as `launcher(function, grid, shared_bytes, launch, stream,
params_ptr)` (launch: the schedule's Launch, for its block and kernel name), which raises on
failure.
"""

from __future__ import annotations

import ctypes
from typing import Callable

import torch

from . import host_sizes

SCALARS = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
           "i1": ctypes.c_bool, "index32": ctypes.c_int32, "index64": ctypes.c_int64}


class LaunchStep:
    """A launch with a prebuilt kernelParams array; per call only pointers (and sizes known per
    call) are rewritten. `max_grid`: the driver's blocks per grid dimension, checked before a
    launch of a grid computed per call (None: left to the driver), raising `error`."""

    def __init__(self, launch, function, index_bits: int, launcher: Callable, max_grid: tuple | None = None,
                 error: type[Exception] = RuntimeError):
        self.launch, self.function, self.launcher = launch, function, launcher
        self.max_grid, self.error = max_grid, error
        self.values, self.ptr_slots, self.sizes = [], [], []
        for i, (kind, value) in enumerate(launch.args):
            if kind == "ptr":
                self.values.append(ctypes.c_void_p(0))
                self.ptr_slots.append((i, value))
            else:
                key = f"index{index_bits}" if kind == "index" else kind
                static = not host_sizes.is_expression(value)
                self.values.append(SCALARS[key](value if static else 0))
                if not static:
                    self.sizes.append((i, value))
        self.params = (ctypes.c_void_p * max(len(self.values), 1))(*[ctypes.addressof(v) for v in self.values])
        self.params_ptr = ctypes.addressof(self.params)
        self.grid = launch.grid if host_sizes.is_static(*launch.grid) else None
        self.shared = launch.shared if host_sizes.is_static(launch.shared) else None
        # The sizes, then the grid and the shared memory (when known per call), from one
        # generated function.
        per_call = [size for _, size in self.sizes] + ([] if self.grid else list(launch.grid)) \
            + ([] if self.shared is not None else [launch.shared])
        self.size_slots = [i for i, _ in self.sizes]
        self.evaluate = host_sizes.evaluator(per_call) if per_call else None

    def __call__(self, bufs, stream) -> None:
        values = self.values
        for i, slot in self.ptr_slots:
            values[i].value = bufs[slot].data_ptr()
        grid, shared = self.grid, self.shared
        if self.evaluate is not None:
            computed = self.evaluate(bufs)
            for i, value in zip(self.size_slots, computed):
                values[i].value = value
            rest = computed[len(self.size_slots):]
            if grid is None:
                grid, rest = self._grid(rest[:3]), rest[3:]
                # no element to compute (a dynamic size of 0), or the other launch of a pair
                # chosen per call (codegen/gpu/row_staging.py): no launch
                if 0 in grid:
                    return
            if shared is None:
                shared = rest[0]
        self.launcher(self.function, grid, shared, self.launch, stream, self.params_ptr)

    def _grid(self, grid: tuple) -> tuple:
        """The grid of a launch over symbolic sizes, for this call's sizes; one the driver would
        refuse is an error naming the kernel (before any launch, not a failed one)."""
        if self.max_grid and any(g > m for g, m in zip(grid, self.max_grid)):
            raise self.error(f"dynamo-mlir: kernel {self.launch.kernel} needs a grid of {grid} blocks for these "
                               f"sizes, above the driver's {self.max_grid}; compile with dynamic=False")
        return grid


def alloc_step(step, device) -> Callable:
    """torch.empty for a host schedule's Alloc, of a size known now or per call."""
    dtype, slot, numel = getattr(torch, step.dtype), step.slot, step.numel

    def run(bufs, stream):
        bufs[slot] = torch.empty(numel, dtype=dtype, device=device)

    if host_sizes.is_static(numel):
        return run
    size = host_sizes.evaluator([numel])

    def run_sized(bufs, stream):
        bufs[slot] = torch.empty(size(bufs)[0], dtype=dtype, device=device)

    return run_sized
