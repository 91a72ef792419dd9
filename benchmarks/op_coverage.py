"""Op coverage of backend="mlir" against PyTorch's OpInfo database.

    python benchmarks/op_coverage.py --dtype float32 --jobs 2 --out docs/coverage.md
    python benchmarks/op_coverage.py --ops '^(add|mul)$' --train
    python benchmarks/op_coverage.py --emulate-cpu Haswell   # a CPU without AVX-512, via qemu-user

Every OpInfo entry (op_db) runs its first --samples samples through torch.compile(backend="mlir")
and eager in a worker process; see coverage_sample.py for how samples and ops are classified.
Each worker reports a heartbeat per sample: a sample running past --timeout gets its worker
killed and the op marked `error`, so one bad op cannot stall the sweep. With --emulate-cpu the
workers run under qemu's user-mode emulation of that CPU model: torch and LLVM's JIT both read
the CPU from CPUID, so eager's kernels and our machine code are both chosen for it. `main(argv)` is the
entry point. (It needs a source checkout: benchmarks/ is not part of the installed package.)
"""

import argparse
import logging
import multiprocessing as mp
import os
import queue
import re
import sys
import time
from dataclasses import asdict

log = logging.getLogger("dynamo_mlir.coverage")

HERE = os.path.dirname(os.path.abspath(__file__))


def op_names(pattern: str | None) -> list[str]:
    """`name` or `name.variant` of every OpInfo entry matching the regex (search, not match)."""
    from torch.testing._internal.common_methods_invocations import op_db

    names = [_full_name(op) for op in op_db]
    rx = re.compile(pattern) if pattern else None
    return [n for n in names if rx is None or rx.search(n)]


def _full_name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


# ----------------------------------------------------------------------------- worker side


def _worker(wid: int, tasks, results, cfg: dict) -> None:
    sys.path.insert(0, HERE)
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    import coverage_sample

    coverage_sample.unwrap_seeding()
    logging.disable(logging.WARNING)  # fallbacks are expected; they are in the table
    torch.set_num_threads(1)  # the pool runs --jobs ops side by side
    dtype = getattr(torch, cfg["dtype"])
    by_name = {_full_name(op): op for op in op_db}
    results.put(("ready", wid, torch.backends.cpu.get_cpu_capability()))
    while True:
        name = tasks.get()
        if name is None:
            return
        t0 = time.perf_counter()
        beat = lambda i: results.put(("beat", wid, i))
        r = coverage_sample.run_op(by_name[name], dtype, cfg["device"], cfg["train"], cfg["samples"], beat)
        r.name, r.seconds = name, time.perf_counter() - t0
        results.put(("done", wid, asdict(r)))
        if _context_lost(r.reason):  # every later op in this process would fail too: start afresh
            results.close()
            results.join_thread()
            os._exit(3)


# A CUDA error that poisons the process's context: nothing after it can run in this worker.
_STICKY_CUDA_ERRORS = ("illegal memory access", "illegal address", "unspecified launch failure",
                       "misaligned address", "CUDA_ERROR_ILLEGAL", "CUDA_ERROR_LAUNCH_FAILED",
                       "device-side assert")


def _context_lost(reason: str) -> bool:
    return any(s in (reason or "") for s in _STICKY_CUDA_ERRORS)


class _Slot:
    """One worker process, the op it is running and when it last made progress."""

    def __init__(self, ctx, wid: int, results, cfg: dict):
        self.tasks = ctx.Queue()
        self.proc = ctx.Process(target=_worker, args=(wid, self.tasks, results, cfg), daemon=True)
        self.proc.start()
        self.op, self.since, self.sample, self.ready = None, time.monotonic(), -1, False

    def give(self, name: str) -> None:
        self.op, self.since, self.sample = name, time.monotonic(), -1
        self.tasks.put(name)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join(5)


def emulated_python(cpu_model: str) -> str:
    """An executable that runs this Python under `qemu-x86_64 -cpu <cpu_model>` (for spawn)."""
    import shutil
    import tempfile

    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        raise SystemExit("--emulate-cpu needs qemu-x86_64: apt-get install qemu-user (make toolchains)")
    fd, path = tempfile.mkstemp(prefix="emulated-python-", suffix=".sh")
    with os.fdopen(fd, "w") as f:
        f.write(f'#!/bin/sh\nexec {qemu} -cpu {cpu_model} {sys.executable} "$@"\n')
    os.chmod(path, 0o755)
    return path


def run_pool(names: list[str], cfg: dict, jobs: int, timeout: float, progress=None,
             executable: str | None = None, capabilities: set | None = None) -> list[dict]:
    """Run every op in a pool of `jobs` workers; a stuck or crashed worker is replaced.
    `executable` replaces the workers' Python (--emulate-cpu); each worker's torch CPU
    capability is added to `capabilities`."""
    ctx = mp.get_context("spawn")
    if executable:
        ctx.set_executable(executable)
    results = ctx.Queue()
    slots = {w: _Slot(ctx, w, results, cfg) for w in range(jobs)}
    todo, done, next_id = list(reversed(names)), [], jobs
    while todo or any(s.op for s in slots.values()):
        for s in slots.values():
            if s.ready and s.op is None and todo:
                s.give(todo.pop())
        try:
            kind, wid, payload = results.get(timeout=1.0)
        except queue.Empty:
            kind, wid, payload = None, None, None
        slot = slots.get(wid)
        if slot is not None:
            _on_message(slot, kind, payload, done, progress)
            if kind == "ready" and capabilities is not None:
                capabilities.add(payload)
        for w, s in list(slots.items()):
            problem = _stuck(s, timeout)
            if problem:
                s.kill()
                if s.op:
                    done.append(dict(name=s.op, verdict="error", samples=max(s.sample, 0) + 1,
                                     counts={"error": 1}, reason=problem, seconds=timeout))
                    progress and progress(done[-1])
                del slots[w]
                slots[next_id] = _Slot(ctx, next_id, results, cfg)
                next_id += 1
    for s in slots.values():
        s.tasks.put(None)
        s.proc.join(10)
    return done


def _on_message(slot: _Slot, kind, payload, done: list, progress) -> None:
    if kind == "ready":
        slot.ready, slot.since = True, time.monotonic()
    elif kind == "beat":
        slot.sample, slot.since = payload, time.monotonic()
    elif kind == "done":
        done.append(payload)
        slot.op = None
        progress and progress(payload)


def _stuck(slot: _Slot, timeout: float) -> str | None:
    if not slot.proc.is_alive():
        return f"worker died (exit code {slot.proc.exitcode}) in sample {slot.sample}"
    waited = time.monotonic() - slot.since
    if slot.op and waited > timeout:
        return f"timeout: sample {slot.sample} ran over {timeout:.0f} s"
    if not slot.ready and waited > 300:
        return "worker did not start"
    return None


# ----------------------------------------------------------------------------- report

VERDICTS = ("compiled", "unverified", "fallback", "mismatch", "error", "skipped")

# The families issue 6 lets fall back, by OpInfo name (anchored regexes). They stay in the
# table and in the first figure; the second figure leaves them out.
ALLOWED_TO_FALL_BACK = {
    "random": r"bernoulli|cauchy|exponential|geometric|log_normal|multinomial|normal(\..*)?|uniform"
              r"|rand|randn|randint|rand_like|randn_like|randint_like|nn\.functional\.(|alpha_|feature_alpha_)dropout.*"
              r"|nn\.functional\.rrelu|nn\.functional\.fractional_max_pool[23]d|svd_lowrank|pca_lowrank",
    "sparse": r"sparse\..*|to_sparse.*",
    "complex": r"fft\.i?r?fft[2n]?|fft\.i?hfft[2n]?|stft|istft|view_as_complex|polar|complex|cfloat|cdouble|chalf",
    "linalg decomposition": r"(linalg\.)?(cholesky.*|eig.*|svd.*|svdvals|qr|lu.*|ldl_.*|inv(_ex)?|solve.*|det|slogdet"
                            r"|tensorinv|tensorsolve|pinv.*|lstsq.*|matrix_rank.*|cond|householder_product"
                            r"|matrix_exp)|pinverse|logdet|geqrf|ormqr|triangular_solve|norm\.nuc",
}
_ALLOWED = {family: re.compile(f"^(?:{rx})$") for family, rx in ALLOWED_TO_FALL_BACK.items()}


def allowed_family(name: str) -> str | None:
    return next((family for family, rx in _ALLOWED.items() if rx.match(name)), None)


def _counts(rows: list[dict]) -> tuple[dict, int]:
    n = {v: sum(1 for r in rows if r["verdict"] == v) for v in VERDICTS}
    return n, len(rows) - n["skipped"]


def summary(rows: list[dict], label: str) -> str:
    n, tested = _counts(rows)
    pct = lambda k: 100.0 * n[k] / tested if tested else 0.0
    return (f"{label}: {tested} ops tested ({n['skipped']} skipped of {len(rows)}): "
            f"compiled {n['compiled']} ({pct('compiled'):.1f}%), unverified {n['unverified']}, "
            f"fallback {n['fallback']} ({pct('fallback'):.1f}%), mismatch {n['mismatch']}, error {n['error']}")


def in_scope_summary(rows: list[dict]) -> str:
    """The same count without the families the issue allows to fall back."""
    tested = [r for r in rows if r["verdict"] != "skipped"]
    families = [allowed_family(r["name"]) for r in tested]
    left_out = {f: families.count(f) for f in ALLOWED_TO_FALL_BACK if families.count(f)}
    scope = [r for r, f in zip(tested, families) if f is None]
    n, total = _counts(scope)
    pct = 100.0 * n["compiled"] / total if total else 0.0
    out = ", ".join(f"{f} {k}" for f, k in left_out.items())
    return (f"without the families allowed to fall back ({out}): {total} ops, "
            f"compiled {n['compiled']} ({pct:.1f}%), fallback {n['fallback']}")


def table(rows: list[dict]) -> str:
    counted = VERDICTS[:-1]
    out = [f"| op | verdict | samples ({'/'.join(counted)}) | reason |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["name"]):
        c = r.get("counts", {})
        counts = "/".join(str(c.get(v, 0)) for v in counted)
        reason = r.get("reason", "").replace("|", "\\|").replace("\n", " ")[:160]
        out.append(f"| {r['name']} | {r['verdict']} | {counts} | {reason} |")
    return "\n".join(out)


def accepted_by_reference(rows: list[dict]) -> str:
    """The entries whose values differ from eager but were accepted by the wider reference."""
    by_note = {}
    for r in sorted(rows, key=lambda r: r["name"]):
        for note in r.get("notes", ()):
            by_note.setdefault(note, []).append(r["name"])
    if not by_note:
        return "No result was accepted by the wider reference: every compared value matched eager."
    return "Accepted by the wider reference instead of eager: " + "; ".join(
        f"{note} ({len(names)}): {', '.join(names)}" for note, names in by_note.items()) + "."


def markdown(rows: list[dict], label: str, command: str, seconds: float, samples: int) -> str:
    ran = sum(r.get("samples", 0) for r in rows)
    return "\n".join([
        f"# OpInfo coverage: {label}", "",
        f"Made by `{command}` in {seconds / 60:.1f} min.", "",
        f"Samples: each entry ran its first {samples} OpInfo sample(s) (fewer where it has fewer; "
        f"samples eager itself rejects are not counted): {ran} samples over {len(rows)} entries. "
        "An entry takes its worst sample's verdict.", "",
        "compiled: in every sample at least one op ran in code dynamo-mlir generated (library "
        "calls do not count), no node ran eagerly, and the output values matched eager (or a "
        "wider reference, as listed below the totals); "
        "unverified: compiled so, but only shapes and dtypes can be compared (random or "
        "uninitialized outputs), so not counted as compiled; "
        "fallback: matches eager, but some node ran eagerly (unsupported, failed region, run-time "
        "fallback, graph break) or nothing ran in generated code; mismatch: differs from eager "
        "and is not accepted by a wider reference (half types: the float32 computation rounded "
        "once; any type: as accurate as eager against the float64 computation by torch._dynamo's "
        "accuracy check; see benchmarks/coverage_sample.py); "
        "error: compiled raised where eager did not; skipped: the op has no sample for this dtype "
        "(or eager rejects every sample).", "",
        f"**{summary(rows, label)}**", "",
        f"**{in_scope_summary(rows)}**", "",
        accepted_by_reference(rows), "",
        "Allowed to fall back (issue 6), by OpInfo name: "
        + "; ".join(f"{f}: `{rx}`" for f, rx in ALLOWED_TO_FALL_BACK.items()) + ".", "",
        table(rows), "",
    ])


# ----------------------------------------------------------------------------- entry point


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python benchmarks/op_coverage.py", description=__doc__.splitlines()[0])
    p.add_argument("--ops", help="regex over OpInfo names (name or name.variant)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--train", action="store_true", help="compare gradients too")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--samples", type=int, default=8, help="first N samples of each op")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds one sample may run")
    p.add_argument("--out", help="write the markdown table here")
    p.add_argument("--quiet", action="store_true", help="no line per op")
    p.add_argument("--emulate-cpu", metavar="MODEL",
                   help="run the workers under qemu-x86_64 -cpu MODEL (e.g. Haswell: AVX2, no AVX-512)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    names = op_names(args.ops)
    cfg = dict(dtype=args.dtype, device=args.device, train=args.train, samples=args.samples)
    label = f"{args.dtype} {args.device}{' train' if args.train else ''}"
    t0 = time.perf_counter()

    def progress(r):
        if not args.quiet:
            log.info("%-45s %-10s %5.1fs %s", r["name"], r["verdict"], r.get("seconds", 0), r.get("reason", "")[:100])

    executable = emulated_python(args.emulate_cpu) if args.emulate_cpu else None
    capabilities = set()
    rows = run_pool(names, cfg, args.jobs, args.timeout, progress, executable, capabilities)
    seconds = time.perf_counter() - t0
    label += f" (torch CPU capability {'/'.join(sorted(c for c in capabilities if c))}"
    label += f", emulated {args.emulate_cpu})" if args.emulate_cpu else ")"
    if args.out:
        command = "python benchmarks/op_coverage.py " + " ".join(sys.argv[1:] if argv is None else argv)
        with open(args.out, "w") as f:
            f.write(markdown(rows, label, command, seconds, args.samples))
    log.info("%s", summary(rows, label))
    log.info("%s", in_scope_summary(rows))
    return 0 if not any(r["verdict"] in ("mismatch", "error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
