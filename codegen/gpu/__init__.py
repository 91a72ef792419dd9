"""Target-independent GPU code generation: what the cuda target (and a GPU plugin such as
examples/rocm_target) builds kernels from.

- `capabilities`: what a GPU offers the strategies (warp size, threads per block, shared memory,
  widest access, tensor-core shapes), as data per architecture;
- `row_reduce`: reductions over rows of symbolic count or length, one block per row (threads
  stride over the row, gpu.all_reduce combines), a fill or copy of the output folded in;
- `tiled`: the other linalg ops with symbolic sizes tiled to blocks and threads by MLIR's own transforms
  (transform IR built here, applied by the transform interpreter, scf.parallel -> gpu.launch);
- `kernel_abi`: the operands of such a kernel as bare pointers plus `index` sizes, the
  convention every kernel of these targets is called with;
- `host_sizes`: the host schedule's sizes as expressions of its arguments' sizes, evaluated per
  call (grids, kernel arguments, allocations, library calls' views).
"""
