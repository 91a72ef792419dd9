"""Whether a long CUDA graph delays its first kernel by its length, and whether replaying it as
several shorter graphs (chunks) gets that time back: a chain of N launches (an fp32 matmul and
an add, as a transformer's linear layers and residuals), timed per call with a sync after each,
launched directly, replayed as one graph, and replayed as graphs of CHUNK launches.

Usage (GPU machine):  python benchmarks/replay_chunks.py [--launches 800] [--chunks 16,64,200]
"""

import argparse
import statistics
import time

import torch


def chain(xs, w, count):
    """count launches: matmul / add alternating, each reading the previous result."""
    y = xs
    for i in range(count):
        y = y @ w if i % 2 == 0 else y + xs
    return y


def timed(fn, calls):
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def graphs(xs, w, launches, chunk):
    """launches split in graphs of chunk launches each, sharing one memory pool."""
    out = [xs]
    gs = []
    pool = None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain(xs, w, launches)  # warm-up
    torch.cuda.current_stream().wait_stream(s)
    done = 0
    while done < launches:
        n = min(chunk, launches - done)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            out.append(chain(out[-1], w, n))
        pool = g.pool()
        gs.append(g)
        done += n

    def run():
        for g in gs:
            g.replay()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=800)
    ap.add_argument("--chunks", default="8,32,100,200")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    xs = torch.randn(args.size, 768, device="cuda")
    w = torch.randn(768, 768, device="cuda") / 30
    rows = [("direct launches", timed(lambda: chain(xs, w, args.launches), args.calls))]
    rows.append(("one graph", timed(graphs(xs, w, args.launches, args.launches), args.calls)))
    for c in map(int, args.chunks.split(",")):
        rows.append((f"graphs of {c} launches", timed(graphs(xs, w, args.launches, c), args.calls)))
    print(f"{torch.cuda.get_device_name()}: {args.launches} launches ({args.size}x768 @ 768x768 fp32, + add), "
          f"median ms a call of {args.calls}, synchronized")
    for name, ms in rows:
        print(f"  {name:28s} {ms:8.3f}")


if __name__ == "__main__":
    main()
