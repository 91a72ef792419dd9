"""torch's copy_ against codegen/cuda/library.py's copy_lines (cuMemcpy2DAsync) on the copies a
padded half-precision matmul makes: GPT-2's [4096, 50257] bf16 logits cut out of a padded
[4096, 50264] result, their gradient padded row-major, and its transpose padded column-major.
Median of 20 timed calls each (CUDA events, bench_cuda.median_ms), and a check that both copies agree.

    python benchmarks/pitched_copy.py [--rows 4096] [--cols 50257]
"""

import argparse

import torch

from bench_cuda import median_ms
from dynamo_mlir.codegen.cuda.library import copy_lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=50257)
    args = parser.parse_args(argv)
    r, c = args.rows, args.cols
    padded = -(-c // 8) * 8
    x = torch.randn(r, padded, device="cuda", dtype=torch.bfloat16)
    cases = {  # case -> (dst, src)
        "result cut out of the padded one": (torch.empty(r, c, device="cuda", dtype=torch.bfloat16), x[:, :c]),
        "row-major operand padded": (torch.empty(r, padded, device="cuda", dtype=torch.bfloat16)[:, :c], x[:, :c].contiguous()),
        "column-major operand padded": (torch.empty(r, padded, device="cuda", dtype=torch.bfloat16)[:, :c].t(),
                                        x[:, :c].contiguous().t()),
    }
    print(f"| copy ({r} x {c} bf16, {torch.cuda.get_device_name()}) | torch copy_ ms | copy_lines ms | ratio |")
    print("|---|---|---|---|")
    for name, (dst, src) in cases.items():
        dst.zero_()
        copy_lines(dst, src)
        assert torch.equal(dst, src), name
        base, mine = median_ms(lambda: dst.copy_(src)), median_ms(lambda: copy_lines(dst, src))
        print(f"| {name} | {base:.3f} | {mine:.3f} | {base / mine:.2f} |")


if __name__ == "__main__":
    main()
