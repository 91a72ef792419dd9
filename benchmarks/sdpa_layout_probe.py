"""Which layout torch's CUDA SDPA returns for the LLaMA-1B scale workload's attention (bf16,
4 x 32 heads x 512 x 64, an additive mask 4 x 1 x 512 x 512), and which kernels it runs: whether
the schedule can take its result as the buffer (codegen/cuda/library.py _write) or must copy it.

    python benchmarks/sdpa_layout_probe.py     (GPU machine)
"""

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(4, 32, 512, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    mask = torch.randn(4, 1, 512, 512, device="cuda", dtype=torch.bfloat16, generator=g)
    for name, m in (("mask 4x1x512x512", mask), ("no mask", None)):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            F.scaled_dot_product_attention(q, k, v, attn_mask=m)
            torch.cuda.synchronize()
        kernels = [(e.key[:90], e.count) for e in p.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(f"{name}: result strides {out.stride()}; kernels {kernels}")


if __name__ == "__main__":
    main()
