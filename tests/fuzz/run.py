"""A long fuzzing run outside pytest (a GPU host, an overnight run), from the repository root:

    .venv/bin/python -m tests.fuzz.run --device cuda --examples 2000 --seed 1
    .venv/bin/python -m tests.fuzz.run --seed 1 --only 417 --shrink     # one program again, minimised

Program i of seed s is drawn from random.Random(f"{s}:{i}"): the same on every machine. Each
failure is printed with its program as a regression test (minimised with --shrink); the summary
groups failures by their first line, and counts the ops the target left to eager. A failure that
leaves the CUDA context unusable (a device-side assert) ends the run: every later result would be
noise. The program about to run is written to --current first, so a crash leaves it behind.
"""

import argparse
import collections
import dataclasses
import logging
import re
import sys
import time

from .check import Mismatch, Rejected, check_program
from .generator import RandomDrawer, generate, unconsumed

FATAL = ("device-side assert", "CUDA_ERROR_ASSERT", "CUDA_ERROR_ILLEGAL_ADDRESS", "illegal memory access")


def draw(seed: int, index: int):
    return generate(RandomDrawer(f"{seed}:{index}"))


def outcome(program, device) -> tuple[str, str, dict]:
    """("ok" | "rejected" | "failed", message, stats)."""
    try:
        return "ok", "", check_program(program, device)
    except Rejected as error:
        return "rejected", str(error), {}
    except Mismatch as error:
        return "failed", str(error), {}


def first_line(message: str) -> str:
    lines = message.splitlines()
    return " ".join(lines[:2])[:200]


# --- minimising a failure: smaller variants kept while they fail the same way ----------------

def pruned(program, outputs):
    """`program` with only `outputs`, less the steps and inputs nothing reads any more (a step
    writing in place stays: it is what some failures are about)."""
    keep, steps = set(outputs), []
    for step in reversed(program.steps):
        if step.name in keep or step.op.endswith("_"):
            steps.insert(0, step)
            keep |= set(re.findall(r"\b[vx]\d+\b", step.expr))
    inputs = [i for i in program.inputs if i.name in keep]
    return dataclasses.replace(program, steps=steps, inputs=inputs, outputs=list(outputs))


def variants(program):
    """Simpler programs to try, simplest first."""
    for out in program.outputs:
        yield pruned(program, [out])
    for i, step in enumerate(program.steps):  # drop one step, its readers' outputs with it
        rest = program.steps[:i] + program.steps[i + 1:]
        if not any(re.search(rf"\b{step.name}\b", s.expr) for s in rest):
            yield pruned(dataclasses.replace(program, steps=rest), unconsumed(rest))
    yield dataclasses.replace(program, grad=False)
    yield dataclasses.replace(program, dynamic=False)
    for i, item in enumerate(program.inputs):
        if item.layout.kind != "contiguous":
            inputs = list(program.inputs)
            inputs[i] = dataclasses.replace(item, layout=type(item.layout)())
            yield dataclasses.replace(program, inputs=inputs)


def shrink(program, device, signature: str, budget_s: float = 300.0):
    """The smallest variant found (greedily) that still fails with the same first line."""
    deadline = time.time() + budget_s
    improved = True
    while improved and time.time() < deadline:
        improved = False
        for candidate in variants(program):
            if candidate.steps and candidate.outputs and candidate != program:
                status, message, _ = outcome(candidate, device)
                if status == "failed" and first_line(message) == signature:
                    program, improved = candidate, True
                    break
    return program


# --- the run ----------------------------------------------------------------------------------

def run(args) -> int:
    indices = [args.only] if args.only is not None else range(args.start, args.start + args.examples)
    counts, failures, eager_ops = collections.Counter(), [], collections.Counter()
    started = time.time()
    for index in indices:
        program = draw(args.seed, index)
        with open(args.current, "w") as f:
            f.write(f"# seed {args.seed}, program {index}\n{program.source()}")
        status, message, stats = outcome(program, args.device)
        counts[status] += 1
        eager_ops.update(stats.get("fallback_ops", {}))
        if status == "failed":
            failures.append(report_failure(args, index, program, message))
            if any(f in message for f in FATAL):
                print("the CUDA context is gone: stopping", flush=True)
                break
        if args.verbose or status == "failed":
            print(f"[{index}] {status} ({time.time() - started:.0f} s)", flush=True)
    summarize(counts, failures, eager_ops, time.time() - started)
    return 1 if failures else 0


def report_failure(args, index, program, message):
    signature = first_line(message)
    if args.shrink:
        program = shrink(program, args.device, signature)
        message = outcome(program, args.device)[1] or message
    print(f"\n=== FAILURE seed {args.seed} program {index}: {signature}\n{message}\n", flush=True)
    return index, signature, program


def summarize(counts, failures, eager_ops, seconds):
    print(f"\n{sum(counts.values())} programs in {seconds:.0f} s: {counts['ok']} passed, "
          f"{counts['failed']} failed, {counts['rejected']} rejected (eager refused them)")
    by_signature = collections.defaultdict(list)
    for index, signature, _ in failures:
        by_signature[signature].append(index)
    for signature, indices in sorted(by_signature.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(indices):4d} x {signature}  (programs {indices[:10]})")
    if eager_ops:
        print("ops the target declined (ran eagerly), in passing programs: "
              + ", ".join(f"{op} x{n}" for op, n in eager_ops.most_common()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--examples", type=int, default=200, help="how many programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first program index (to resume)")
    parser.add_argument("--only", type=int, help="run just this program index")
    parser.add_argument("--shrink", action="store_true", help="minimise each failure before printing it")
    parser.add_argument("--current", default="/tmp/dynamo_mlir_fuzz_current.py",
                        help="where the program about to run is written (left behind by a crash)")
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per program")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the backend's "runs eagerly" warnings: the summary counts them
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
