"""The cpu target's own options (see codegen/options.py): an option added here is an option of
`torch.compile(..., options={...})`, of `DYNAMO_MLIR_<NAME>` and of the CLI, with nothing else
to edit."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import TargetOptions, option


GEMM_LIBRARIES = ("auto", "mkl", "onednn")


def _gemm_library(value: str) -> str | None:
    return None if value in GEMM_LIBRARIES else f"gemm_library is one of {GEMM_LIBRARIES}, got {value!r}"


def _opt_level(value: int) -> str | None:
    return None if 0 <= value <= 3 else f"an LLVM optimisation level is 0-3, got {value}"


@dataclass(frozen=True)
class CPUOptions(TargetOptions):
    opt_level: int = option(2, "LLVM optimisation level of the JIT (0-3); 2 runs as fast as 3 here and JITs "
                               "~40% sooner.", _opt_level)
    library_matmul: bool = option(True, "Run float32/float64 matmul, batch matmul and convolution with static shapes "
                                        "as library calls into libtorch_cpu: MKL's sgemm_/dgemm_, torch's convolution "
                                        "(oneDNN), and an inference graph's attention as torch's fused CPU kernel "
                                        "(stats: ops_library); off: in our own loops.")
    gemm_library: str = option("auto", "With library_matmul: which library runs a large float32 matmul whose left "
                                       "operand is row-major: mkl (MKL's sgemm_, what eager and inductor call), "
                                       "onednn (torch's oneDNN linear, 1.1-2x faster than MKL on an AMD EPYC, level "
                                       "on an Intel Xeon: benchmarks/cpu_gemm_providers.py; in a torch without "
                                       "oneDNN the region runs eagerly, saying why), or auto: onednn on "
                                       "CPUs not made by Intel, mkl on Intel's (codegen/cpu/library_linear.py).",
                                _gemm_library)
    channels_last: bool = option(True, "With library_matmul: run chained 2-d convolutions (one's result reaching the "
                                       "next through batch norm, relu, pooling, ...) channels-last, NHWC, and the "
                                       "ops between them too, so no transpose sits between them "
                                       "(codegen/channels_last.py); off: every convolution NCHW.")
    channels_last_training: float = option(0.7, "With channels_last: a training graph (a forward saving activations, "
                                                "a backward with convolution gradients) runs channels-last when its "
                                                "convolutions' activations have at least this many times as many "
                                                "elements as their weights (each weight is made channels-last, and its "
                                                "gradient NCHW again, once a step; benchmarks/channels_last_training.py, "
                                                "ResNet-50 steps: 11% slower at a ratio of 0.47, batch 1; 4% faster at "
                                                "0.95 and 7% at 3.8, batches 2 and 8); 0: always; inf: never.",
                                           lambda v: None if v >= 0 else "must be 0 or more")
    hand_over_results: bool = option(True, "With library_matmul: a convolution's result (or gradient) that is itself a "
                                           "result of the compiled function is handed to the caller as torch's own "
                                           "tensor (copied only where torch chose other strides than the promised "
                                           "ones) instead of copied into a buffer of ours: a training step's saved "
                                           "activations and weight gradients (codegen/cpu/handed_results.py); off: "
                                           "copied.")
    parallel: bool = option(True, "Run large loop nests of linalg ops on torch's intra-op thread pool "
                                  "(torch_parallel_for; torch.set_num_threads applies; codegen/cpu/parallel.py); "
                                  "off: every loop on the calling thread.")
    fast_math: bool = option(True, "Compute float32 (and bfloat16/float16) exp, expm1, log, log1p, tanh and erf "
                                   "with our own branch-free polynomials (lowering/math/approx.py, within 2 ulp) "
                                   "so that loops using them vectorize; off: a libm call per element.")
    plan_memory: bool = option(True, "Place a function's static intermediate buffers at offsets of one workspace "
                                     "chosen at compile time (buffers not live at once share bytes), kept between "
                                     "calls: no malloc and no page fault per call (codegen/cpu/memory_plan.py); "
                                     "off: a malloc and a free per buffer per call.")
    retain_freed_memory: bool = option(False, "Set glibc's malloc to keep freed memory for the next call (mallopt: mmap "
                                              "threshold 32 MiB, trim threshold 64 MiB; process-wide and not undone, "
                                              "applied when a function loads; codegen/cpu/heap.py): no page faults on "
                                              "each call's buffers, at the price of up to 64 MiB kept; off (default): "
                                              "malloc left as it is.")

    def keeps_fused_attention(self, symbolic: bool = False, half: bool = False, training: bool = False) -> bool:
        """With library_matmul, an inference graph of static float32/float64 shapes keeps SDPA
        whole: its attention runs torch's fused CPU kernel (library_attention.py), eager's. With
        symbolic sizes (the call takes static shapes), half inputs (frontend/half_attention.py
        follows eager's roundings in the math form) or in training (the backward is compiled
        from the math form) the math form compiles."""
        return self.library_matmul and not symbolic and not half and not training
