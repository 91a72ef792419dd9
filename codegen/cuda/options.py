"""The cuda target's own options (see codegen/options.py): an option added here is an option of
`torch.compile(..., options={...})`, of `DYNAMO_MLIR_<NAME>` and of the CLI, with nothing else
to edit. Names keep their `cuda_` prefix where they mean nothing to another target."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..options import TargetOptions, option

_ARCH = re.compile(r"sm_\d+[a-z]?$")
# [GRAPH:]LO-HI; GRAPH starts with a letter, so an old call number ("0:1-2") is refused.
_ROW_ENTRY = re.compile(r"(?:(?P<graph>[A-Za-z]\w*):)?(?P<lo>\d+)-(?P<hi>\d+)$")


def _arch(value: str) -> str | None:
    return None if _ARCH.match(value) else f"a PTX architecture is sm_<number> (sm_80, sm_90a, ...), got {value!r}"


class RowSelection:
    """`cuda_rowfuse_only`: which row-fused groups a graph keeps, a bisection aid for wrong results.

    Entries `[GRAPH:]LO-HI`, comma-separated: groups LO..HI-1, numbered from 0 within each
    compiled graph (over its host functions, in order), of the graphs whose name contains
    GRAPH as whole `_`-separated words (forward, backward, inference, forward_fused_1, or a full
    name such as g3_forward_fused_0); without GRAPH, of every graph. A graph no entry names keeps
    none. Keyed on the graph, not on a process-wide count, so the output does not depend on what
    the process compiled before."""

    def __init__(self, spec: str):
        self.entries = []
        for part in filter(None, (p.strip() for p in spec.split(","))):
            match = _ROW_ENTRY.match(part)
            if match is None or int(match["lo"]) > int(match["hi"]):
                raise ValueError(f"row selection entry {part!r} is not [GRAPH:]LO-HI with LO <= HI "
                                 "(e.g. 0-4, backward:2-3)")
            self.entries.append((match["graph"], range(int(match["lo"]), int(match["hi"]))))

    def keeps(self, graph: str, index: int) -> bool:
        return any(index in groups and (key is None or f"_{key}_" in f"_{graph}_") for key, groups in self.entries)


def _row_selection(value: str) -> str | None:
    try:
        RowSelection(value)
    except ValueError as e:
        return str(e)
    return None


@dataclass(frozen=True)
class CUDAOptions(TargetOptions):
    cuda_arch: str | None = option(None, "PTX architecture (sm_90, ...); default: the GPU's, else sm_90.", _arch)
    cuda_fuse_rows: bool = option(True, "Fuse a row's reductions and the elementwise ops around them into one "
                                        "kernel (one block per row).")
    cuda_row_vectors: bool = option(True, "Rows of symbolic length (one block per row) also built in lane groups "
                                          "of 16-byte vectors, taken per call where the rows' length, stride and "
                                          "first address allow (codegen/gpu/row_reduce.row_vectors); off: one "
                                          "element a lane only (benchmarks/row_vectors.py measures both).")
    cuda_graphs: bool = option(True, "Replay the host schedule as a CUDA graph in mode=reduce-overhead (and in the "
                                     "default mode with cuda_graphs_in_default_mode); off: never.")
    cuda_graphs_in_default_mode: bool = option(True, "Replay the host schedule as a CUDA graph in the default "
                                                      "mode too (the same replays as reduce-overhead: outputs "
                                                      "never shared with a caller still holding them).")
    library_matmul: bool = option(True, "Run matmul/conv/pooling as library calls through torch (cuBLAS/cuDNN; "
                                        "stats: ops_library); off: in our own generated kernels.")
    channels_last: bool = option(True, "With library_matmul: run chained 2-d convolutions of at least 64 output "
                                       "channels (one's result reaching the next through batch norm, relu, pooling, "
                                       "...) channels-last, NHWC, and the ops between them too, so cuDNN runs its NHWC "
                                       "kernels and no transpose sits between them (codegen/channels_last.py); off: "
                                       "every convolution NCHW.")
    cuda_padded_matmuls: bool = option(True, "With library_matmul: a half-precision 2-D matmul with a dim of at least 128 "
                                             "that is not a multiple of 8 (a 50257-token vocabulary) computed in the "
                                             "graph on operands zero-padded to multiples of 8, written padded by the "
                                             "kernels that make them, its product read through a slice "
                                             "(frontend/padded_matmuls.py); off: the library call pads and copies per "
                                             "call.")
    cuda_library_attention: bool = option(True, "Run F.scaled_dot_product_attention as one torch call (its fused "
                                                "flash/efficient/cuDNN kernel; stats: ops_library), and in training "
                                                "its backward as one call of that kernel's backward: the attention "
                                                "matrix never in memory; off: the math form (matmuls, softmax) in "
                                                "our kernels. Dropout and grouped-query attention in training take "
                                                "the math form.")
    cuda_rowfuse_only: str | None = option(None, "Debugging: keep only these row-fused groups, '[GRAPH:]LO-HI,...' "
                                                 "(e.g. 'backward:0-3'; see codegen/cuda/options.py); "
                                                 "benchmarks/rowfuse_bisect.py bisects with it.", _row_selection,
                                           affects_code="per graph")

    def keeps_fused_attention(self, symbolic: bool = False, half: bool = False, training: bool = False) -> bool:
        """Whether a graph keeps F.scaled_dot_product_attention whole (frontend/backend.py)."""
        return self.cuda_library_attention

    def retakes_saved_views(self) -> bool:
        """Yes: a saved view written out is a copy kernel (q, k, v out of the qkv projection, the
        padded logits' slice)."""
        return True

    def matmul_padding(self, dtype) -> tuple[int, int] | None:
        """cuBLAS's half-precision kernels for dims that are multiples of 8, where torch runs the
        matmul (library_matmul): the sizes codegen/cuda/library.py pads to at run time."""
        if not (self.library_matmul and self.cuda_padded_matmuls):
            return None
        from .library import MIN_PADDED, PAD_TO  # torch, imported only when a graph is compiled

        multiple = PAD_TO.get(dtype)
        return None if multiple is None else (multiple, MIN_PADDED)

    def gpu_arch(self) -> str:
        """The architecture the kernels are built for: what codegen/gpu's strategies read the
        capabilities of (codegen/gpu/capabilities.py)."""
        from .ptx import arch_of

        return arch_of(self.cuda_arch)

    def row_selection(self) -> RowSelection | None:
        return RowSelection(self.cuda_rowfuse_only) if self.cuda_rowfuse_only is not None else None
