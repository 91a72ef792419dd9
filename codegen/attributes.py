"""The IR attributes that carry information from one pass to a later one, declared in one place.

A pass names the attributes it sets in `Pass.produces` and those it relies on in
`Pass.consumes` (codegen/passes.py); `dynamo-mlir passes` lists who writes and who reads each.
The modules that set or read an attribute import its name from here.
"""

# On a function argument: one-shot bufferization may not write it in place (the caller's tensor).
WRITABLE = "bufferization.writable"
# On a region's function: [[result, argument], ...], results that are mutated inputs' new
# values, to be computed into those arguments (codegen/written_inputs.py).
WRITTEN_INPUTS = "dynamo_mlir.written_inputs"
# On a region's function (the importer's): results whose caller takes them in any layout, a
# training forward's saved activations (codegen/channels_last.py returns them NHWC).
FREE_RESULTS = "dynamo_mlir.free_layout_results"
# On the module (channels_last.py's): the entry's results written NHWC, which the cpu runtime
# hands on as NCHW tensors with channels-last strides (object_code.CpuObject.nhwc_results).
NHWC_RESULTS = "dynamo_mlir.nhwc_results"
# On the module (cpu, handed_results.py): the entry's results that a library call may hand over as
# torch's own tensor (object_code.CpuObject.handed_results); the entry then takes one more argument,
# an int64 per result where the code leaves such a tensor's handle (0: the result is in its buffer).
HANDED_RESULTS = "dynamo_mlir.handed_results"
# On a region's function (cpu, call_library_convs's): how many inputs it has, so that a pass after
# buffer-results-to-out-params tells the out-params (the arguments after them) from the inputs.
INPUT_COUNT = "dynamo_mlir.input_count"
# On a function, set with the writes WRITTEN_INPUTS asked for: the arguments its code writes, for a
# runtime that may hand the code a copy of an input (the cuda target's CUDA-graph input buffers).
WRITTEN_ARGUMENTS = "dynamo_mlir.written_arguments"
# On a bufferization.to_buffer a library call reads: its number among its function's library
# reads, so that CSE cannot merge two reads of one tensor (codegen/buffer_reads.py).
READ = "dynamo_mlir.read"
# On a cuda library op whose accumulator was a zero fill folded away: it overwrites its output.
OVERWRITE = "dynamo_mlir.overwrite"
# On the module: the bytes of the workspace memory planning made (the cpu runtime allocates it).
WORKSPACE_BYTES = "dynamo_mlir.workspace_bytes"
# On a memref.view of the workspace memory planning placed a buffer at: the analyses of
# parallel.py, outline.py and lane_vectors.py treat it as a buffer of its own (memory_plan.planned_span).
PLANNED = "dynamo_mlir.planned"
# On a call that keeps its buffer argument alive past the call (library_conv's tensor handle over a
# buffer): the index of its operand pointing to the slot the handle is stored in; the buffer lives
# as long as that slot is used (memory_plan.py's live intervals).
RETAINS = "dynamo_mlir.retains"
# On the module, cuda target: the width of `index` in the kernels (32 where every buffer fits,
# else 64), which convert-gpu-to-nvvm lowers to and the host schedule passes kernel arguments at.
INDEX_BITWIDTH = "dynamo_mlir.index_bitwidth"
# On a func.call of the cuda target: which library op the call is (torch.index_put, ...).
LIBRARY_CALL = "dynamo_mlir.library_call"
# On a gpu.launch: what its kernel is named for, `<strategy>_<graph ops>` (row_fused_softmax),
# set by the builder of the launch; made unique and given to outlining (codegen/kernel_names.py).
KERNEL_NAME = "dynamo_mlir.kernel_name"
# On an outlined loop nest's pointer arguments: no two alias (LLVM may vectorize across them).
NOALIAS = "llvm.noalias"
