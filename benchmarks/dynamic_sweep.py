"""A transformers model called at several sequence lengths with PyTorch's automatic dynamic
shapes (the second length recompiles with symbolic sizes): what ran eagerly and why, how many
graphs were compiled, each length's error against eager, and the median time per call of
eager and mlir over the sweep (after one warm-up sweep).

    python benchmarks/dynamic_sweep.py [--model gpt2] [--layers 4] [--width 768] [--lengths 32,48,64,80]
        [--device cpu] [--repeats 5]
"""

import argparse
import os
import statistics
import time

import torch

import dynamo_mlir


def _model(name: str, layers: int, width: int, device: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers as t
    configs = {
        "gpt2": lambda: t.GPT2LMHeadModel(t.GPT2Config(n_layer=layers, n_embd=width, n_head=max(width // 64, 1),
                                                       use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                                       attn_pdrop=0.0)),
        "bert": lambda: t.BertForMaskedLM(t.BertConfig(num_hidden_layers=layers, hidden_size=width,
                                                       num_attention_heads=max(width // 64, 1),
                                                       intermediate_size=4 * width, hidden_dropout_prob=0.0,
                                                       attention_probs_dropout_prob=0.0)),
    }
    return configs[name]().to(device).eval()


def _time(fn, inputs, device) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for x in inputs:
        fn(x)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt2", choices=["gpt2", "bert"])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--lengths", default="32,48,64,80")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5, help="timed sweeps (median reported)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = _model(args.model, args.layers, args.width, args.device)
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, vocab, (args.batch, int(n)), generator=g).to(args.device)
              for n in args.lengths.split(",")]
    eager = lambda x: model(input_ids=x).logits  # noqa: E731
    compiled = torch.compile(eager, backend="mlir")
    with torch.no_grad():
        for x in inputs:
            err = (compiled(x) - eager(x)).abs().max().item()
            print(f"length {x.shape[1]}: max abs error against eager {err:.2e}")
        s = dynamo_mlir.stats()
        print(f"graphs {s['graphs']}, partitions {s['partitions']}, ops compiled {s['ops_compiled']}, "
              f"library {s['ops_library']}, eager {s['ops_fallback']}: {s['fallback_ops']}")
        for op, why in s["fallback_reasons"]:
            print(f"  eager: {op}: {why}")
        times = {"eager": [], "mlir": []}
        for _ in range(args.repeats):
            times["eager"].append(_time(eager, inputs, args.device))
            times["mlir"].append(_time(compiled, inputs, args.device))
    med = {k: statistics.median(v) / len(inputs) * 1e3 for k, v in times.items()}
    print(f"median per call over the sweep: eager {med['eager']:.1f} ms, mlir {med['mlir']:.1f} ms "
          f"(eager/mlir {med['eager'] / med['mlir']:.2f}); {torch.get_num_threads()} threads, {args.device}")


if __name__ == "__main__":
    main()
