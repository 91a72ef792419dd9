"""Target-independent GPU code generation: what the cuda target (and a GPU plugin such as
examples/rocm_target) builds kernels from.

- `loopnest`: a structured op on buffers read as loops and accesses (the builders' common model);
- `kernels`: a kernel per op of static sizes (elementwise ops tiled to threads, vectorized where
  aligned; reductions a block or a warp per row, or a thread per output, its steps split among a
  block's threads where the outputs are few), `rowfuse` and `rowkernel`: a run of static ops
  on the same rows as one launch, a block per row with the row in registers;
- `capabilities`: what a GPU offers the strategies (warp size, threads per block, shared memory,
  widest access, tensor-core shapes), as data per architecture;
- `row_groups`: a reduction of symbolic sizes with the elementwise ops, fills and copies before
  and after it on the same rows (size classes say which sizes are equal, every access to a
  buffer the group writes must stay in its row), elementwise ops over long static rows, and
  rank-1 elementwise ops;
- `row_reduce`: their kernels, one block per row (threads stride over the row four elements a
  trip, gpu.all_reduce combines, a barrier between two ops), or chunks of a flat op;
- `tiled`: the other linalg ops with symbolic sizes tiled to blocks and threads by MLIR's own transforms
  (transform IR built here, applied by the transform interpreter, scf.parallel -> gpu.launch);
- `kernel_abi`: the operands of such a kernel as bare pointers plus `index` sizes, the
  convention every kernel of these targets is called with;
- `host_sizes`: the host schedule's sizes as expressions of its arguments' sizes, evaluated per
  call (grids, kernel arguments, allocations, library calls' views).
"""
