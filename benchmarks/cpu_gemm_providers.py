"""torch's two CPU float32 GEMM providers on this host, for the linear layers of issue 27's CPU
table: MKL (what torch.addmm and F.linear call, eager and inductor's default mode alike) and
oneDNN's matmul (torch.ops.mkldnn._linear_pointwise, inductor's freezing path; reached from
generated code through the C shim's aoti_torch_cpu__linear_pointwise). Median ms of 30 calls
after 3, interleaved per shape; x (m, k) @ w (n, k).T + b, w scaled by 1/sqrt(k); and each one's
RMSE against the float64 product, oneDNN's over MKL's.

    python benchmarks/cpu_gemm_providers.py [--threads 2,1]
"""

import argparse
import platform
import statistics
import time

import torch

SHAPES = {  # (m, k, n): where the table's models use them
    "GPT-2 4l qkv (1x128)": (128, 768, 2304),
    "GPT-2 4l MLP up": (128, 768, 3072),
    "GPT-2 4l MLP down": (128, 3072, 768),
    "GPT-2 LM head (50257)": (128, 768, 50257),
    "BERT 4l (2x128) projection": (256, 768, 768),
    "BERT 4l MLP up": (256, 768, 3072),
    "ViT 4l (2x197) MLP up": (394, 768, 3072),
    "MLP 10-64 (batch 64)": (64, 10, 64),
}


def _median_ms(fn, calls: int = 30) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default=f"{torch.get_num_threads()},1")
    args = ap.parse_args()
    print(f"{_cpu_name()}, torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}")
    for threads in map(int, args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"\n{threads} thread(s): ms a call\n\n| linear | m x k x n | MKL addmm | oneDNN linear | MKL / oneDNN "
              "| oneDNN's error / MKL's |\n|---|---|---|---|---|---|")
        ratios = []
        for name, (m, k, n) in SHAPES.items():
            x, w, b = torch.randn(m, k), torch.randn(n, k) / k ** 0.5, torch.randn(n)
            mkl = _median_ms(lambda: torch.addmm(b, x, w.t()))
            dnnl = _median_ms(lambda: torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], ""))
            ratios.append(mkl / dnnl)
            exact = torch.addmm(b.double(), x.double(), w.double().t())
            errors = [(y.double() - exact).pow(2).mean().sqrt().item() for y in
                      (torch.addmm(b, x, w.t()), torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], ""))]
            print(f"| {name} | {m}x{k}x{n} | {mkl:.3f} | {dnnl:.3f} | {mkl / dnnl:.2f} | {errors[1] / errors[0]:.2f} |")
        print(f"| **geomean** | | | | **{statistics.geometric_mean(ratios):.2f}** | |")


if __name__ == "__main__":
    main()
