"""A long fuzzing run outside pytest (a GPU host, an overnight run), from the repository root:

    .venv/bin/python -m tests.fuzz.run --device cuda --examples 2000 --seed 1
    .venv/bin/python -m tests.fuzz.run --seed 1 --only 417 --shrink     # one program again, minimised

Program i of seed s is drawn from random.Random(f"{s}:{i}"): the same on every machine. Each
failure is printed with its program as a regression test (minimised with --shrink); the summary
groups failures by their first line, and counts the ops the target left to eager. A failure that
leaves the CUDA context unusable (a device-side assert) ends its process: every later result
there would be noise. The programs run in a child process (unless --in-process): a program that kills it (a
segfault) is reported as a crash with its program, and a new child goes on from the next one
(after a lost CUDA context, too).
"""

import argparse
import collections
import dataclasses
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time

from .check import Mismatch, Rejected, check_program
from .generator import RandomDrawer, generate, unconsumed

CONTEXT_LOST = 3  # a child's exit code: go on in a new process after the current program
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

class Tally:
    """What a run found; saved as JSON after every program, so a supervisor can merge the
    part a crashed child finished."""

    def __init__(self, data=None):
        data = data or {}
        self.counts = collections.Counter(data.get("counts", {}))
        self.failures = [tuple(f) for f in data.get("failures", [])]   # (index, signature)
        self.eager_ops = collections.Counter(data.get("eager_ops", {}))  # "op: reason" -> programs
        self.context_lost = False  # a CUDA error made every later call fail

    def merge(self, other: "Tally") -> None:
        self.counts.update(other.counts)
        self.failures += other.failures
        self.eager_ops.update(other.eager_ops)

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump({"counts": self.counts, "failures": self.failures, "eager_ops": self.eager_ops}, f)


def run_programs(args, indices) -> Tally:
    tally, started = Tally(), time.time()
    for index in indices:
        program = draw(args.seed, index)
        with open(args.current, "w") as f:
            f.write(f"# seed {args.seed}, program {index}\n{program.source()}")
        status, message, stats = outcome(program, args.device)
        tally.counts[status] += 1
        tally.eager_ops.update(f"{op}: {reason[:100]}" for op, reason in stats.get("fallback_reasons", []))
        if status == "failed":
            tally.failures.append((index, report_failure(args, index, program, message)))
        if args.tally:
            tally.save(args.tally)
        if args.verbose or status == "failed":
            print(f"[{index}] {status} ({time.time() - started:.0f} s)", flush=True)
        if status == "rejected" and message.startswith(("eager on the device differs", "torch.compile(backend=")):  # torch's
            print(f"[{index}] rejected: {first_line(message)}", flush=True)
        if any(f in message for f in FATAL):  # ours (failed) or eager's own kernel (rejected)
            print(f"[{index}] {status}: {first_line(message)}\nthe CUDA context is gone: stopping this process",
                  flush=True)
            tally.context_lost = True
            break
    return tally


def supervise(args, indices) -> Tally:
    """The programs run in a child process; one that kills it (a segfault in generated code or in
    MLIR) is recorded as a crash with its program, and a new child goes on after it."""
    tally, todo = Tally(), list(indices)
    with tempfile.TemporaryDirectory() as tmp:
        part = os.path.join(tmp, "tally.json")
        while todo:
            code = subprocess.run(child_command(args, todo, part)).returncode
            if os.path.exists(part):
                tally.merge(Tally(json.load(open(part))))
                os.remove(part)
            if code in (0, 1):
                break
            index = crashed_index(args.current)
            if code != CONTEXT_LOST:  # a lost CUDA context the child reported itself
                record_crash(args, tally, index, code)
            todo = [i for i in todo if i > index]  # a new process: a new CUDA context too
    return tally


def child_command(args, todo: list[int], tally_path: str) -> list[str]:
    """This script again, in process, over the programs left (a contiguous range)."""
    return [sys.executable, "-m", "tests.fuzz.run", "--in-process", "--tally", tally_path,
            "--seed", str(args.seed), "--device", args.device, "--start", str(todo[0]),
            "--examples", str(len(todo)), "--current", args.current,
            *(["--shrink"] if args.shrink else []), *(["-v"] if args.verbose else [])]


def record_crash(args, tally: Tally, index: int, code: int) -> None:
    print(f"\n=== CRASH (exit {code}) seed {args.seed} program {index}:\n{open(args.current).read()}", flush=True)
    tally.counts["crashed"] += 1
    tally.failures.append((index, f"the process died (exit {code})"))


def crashed_index(current: str) -> int:
    return int(re.search(r"program (\d+)", open(current).readline()).group(1))


def report_failure(args, index, program, message) -> str:
    signature = first_line(message)
    if args.shrink:
        program = shrink(program, args.device, signature)
        message = outcome(program, args.device)[1] or message
    print(f"\n=== FAILURE seed {args.seed} program {index}: {signature}\n{message}\n", flush=True)
    return signature


def summarize(tally: Tally, seconds: float) -> None:
    c = tally.counts
    print(f"\n{sum(c.values())} programs in {seconds:.0f} s: {c['ok']} passed, {c['failed']} failed, "
          f"{c['crashed']} crashed the process, {c['rejected']} rejected (eager refused them, or torch differs from itself)")
    by_signature = collections.defaultdict(list)
    for index, signature in tally.failures:
        by_signature[signature].append(index)
    for signature, indices in sorted(by_signature.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(indices):4d} x {signature}  (programs {indices[:10]})")
    if tally.eager_ops:
        print("ops the target declined (ran eagerly), in how many passing programs, and why:")
        for what, n in tally.eager_ops.most_common():
            print(f"  {n:4d} x {what}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--examples", type=int, default=200, help="how many programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="first program index (to resume)")
    parser.add_argument("--only", type=int, help="run just this program index")
    parser.add_argument("--shrink", action="store_true", help="minimise each failure before printing it")
    parser.add_argument("--in-process", action="store_true",
                        help="no child process: faster to start, but a crash ends the run")
    parser.add_argument("--current", default="/tmp/dynamo_mlir_fuzz_current.py",
                        help="where the program about to run is written (left behind by a crash)")
    parser.add_argument("--tally", help=argparse.SUPPRESS)  # a child's results, for its supervisor
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per program")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the backend's "runs eagerly" warnings: the summary counts them
    indices = [args.only] if args.only is not None else range(args.start, args.start + args.examples)
    started = time.time()
    tally = run_programs(args, indices) if args.in_process else supervise(args, indices)
    if args.tally:  # a child leaves the summary to its supervisor
        return CONTEXT_LOST if tally.context_lost else int(bool(tally.failures))
    summarize(tally, time.time() - started)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
