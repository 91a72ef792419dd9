"""Runs one program eagerly and through torch.compile(backend="mlir") and compares everything a
caller can see: the outputs (dtype, shape, values), every input tensor after the call, and (for
gradient programs) the gradients of a weighted sum of the outputs.

Float values are judged as PyTorch's benchmark suite judges a compiler's accuracy (`same()` in
benchmarks/dynamo/common.py): close to eager's (float32: rtol = atol = 1e-4, its default; the half
types: torch.testing's tolerances), or else no farther from a float64 run of the same program
than eager is, by RMSE: at most m times eager's error plus a small tolerance (m = 3 for the half
types, 2 for float32, 10 for tensors of at most 10 elements, whose errors are few and noisy).
Ill-conditioned results make the first test too strict: a layer_norm of a near-constant row
multiplies a one-ulp difference in its mean by 1/sqrt(eps) = 316. Where a discontinuity turns a
rounding difference into a different value (a comparison, sign(), 1/0 of a half-precision
intermediate that eager rounds and a fused chain does not; of a cancellation), eager's value is
rounding's choice too, and there compiled may differ: integers, booleans and NaN/inf are held to
eager's only where eager agrees with the float64 run.
"""

import contextlib
import inspect
import traceback
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import dynamo_mlir

# (rtol, atol) of "close to eager's"; other dtypes: torch.testing's defaults
CLOSE_TOL = {torch.float32: (1e-4, 1e-4)}
# RMSE against float64 allowed on top of m * eager's, relative to the result's magnitude
FALLBACK_TOL = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-12}
ERROR_MULTIPLIER = {torch.float16: 3.0, torch.bfloat16: 3.0}  # others: 2
SMALL_TENSOR, SMALL_TENSOR_MULTIPLIER = 10, 10.0
# how close eager's value must be to float64's to count as settled (not decided by rounding)
SETTLED_RTOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2}  # others: 1e-4


class Rejected(Exception):
    """Eager refused the program (an error it raises for these values): nothing to compare."""


class Mismatch(AssertionError):
    """The compiled program differs from eager: the message names what and shows the program."""


# One class per kind of finding: hypothesis tells failures apart by exception type, so it never
# shrinks a wrong output into, say, an empty program that compiles nothing.
class CompiledRaised(Mismatch): pass
class WrongOutput(Mismatch): pass
class InputChanged(Mismatch): pass
class WrongGradient(Mismatch): pass
class NothingCompiled(Mismatch): pass
class RegionFailed(Mismatch): pass


# a problem's first word -> its kind
KIND_OF = {"output": WrongOutput, "outputs": WrongOutput, "input": InputChanged, "gradient": WrongGradient,
           "gradients": WrongGradient, "nothing": NothingCompiled, "region(s)": RegionFailed}


def check(fn, make_inputs, *, dynamic: bool, grad: bool, device: str = "cpu", no_grad: tuple = (),
          source: str | None = None, allow_failed_partitions: bool = False) -> dict:
    """Compare `fn` compiled with eager on `make_inputs(device)`; raise Mismatch on any
    difference, Rejected where eager itself fails. Returns dynamo_mlir.stats() of the compile."""
    names = list(inspect.signature(fn).parameters)
    takes_grad = [grad and n not in no_grad for n in names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # var with too few elements, and the like
        eager = _run(fn, make_inputs, device, takes_grad, "eager")
        try:
            compiled, stats = _compile_and_run(fn, make_inputs, device, takes_grad, dynamic)
        except Exception as error:  # noqa: BLE001 - any exception is the finding
            raise CompiledRaised(_report("compiled run raised", _exception_text(error), source)) from None
        problems = _compare_runs(fn, make_inputs, device, takes_grad, eager, compiled)
        if problems and device != "cpu":
            _reject_if_eager_device_differs(fn, make_inputs, device, takes_grad, compiled, problems)
        if problems and dynamic:
            _reject_if_aot_eager_differs_alike(fn, make_inputs, device, takes_grad, eager, compiled, problems)
        if problems:
            _reject_if_torch_decomposition_settles_it(fn, make_inputs, device, takes_grad, eager, compiled, problems)
    problems += _stats_problems(stats, allow_failed_partitions)
    if problems:
        kind = KIND_OF[problems[0].split()[0].rstrip(":")]
        raise kind(_report("compiled differs from eager", "\n".join(problems), source, stats))
    return stats


def _reject_if_eager_device_differs(fn, make_inputs, device, takes_grad, compiled, problems) -> None:
    """Where the compiled device run differs from eager's on that device but matches eager on
    the CPU (judged the same way, against a float64 run on the CPU), eager's device kernel is
    the one that differs: torch's CUDA batch_norm(training=False) without a weight gives its
    bias a zero gradient, for one. That is no finding against the compiler."""
    cpu = lambda run: Run([o.cpu() for o in run.outputs], [x.cpu() for x in run.inputs],  # noqa: E731
                          None if run.grads is None else [None if g is None else g.cpu() for g in run.grads])
    same_values = lambda _: [_on_cpu(x) for x in make_inputs(device)]  # noqa: E731 (the RNGs differ)
    eager_cpu = _run(fn, same_values, "cpu", takes_grad, "eager on cpu")
    if not _compare_runs(fn, same_values, "cpu", takes_grad, eager_cpu, cpu(compiled)):
        raise Rejected("eager on the device differs from eager on the CPU, where the compiled "
                       "result agrees:\n" + "\n".join(problems))


def _reject_if_aot_eager_differs_alike(fn, make_inputs, device, takes_grad, eager, compiled, problems) -> None:
    """Where torch.compile(backend="aot_eager"), which runs Dynamo's and AOTAutograd's graphs
    eagerly and compiles nothing, differs from eager too, and the compiled run matches it
    exactly, the difference is torch's, not the compiler's. With symbolic sizes AOTAutograd
    regenerates an output that is a view of an input by as_strided on that input; for an
    expanded (stride-0) input that requires grad, as_strided's backward spreads the gradient
    over the overlapping elements (seed 47 program 296: [1.5, 1.5] for eager's [1, 2]; inductor
    gives the same)."""
    torch._dynamo.reset()
    aot = _execute(torch.compile(fn, backend="aot_eager", dynamic=True), _prepare(make_inputs, device, takes_grad))
    torch._dynamo.reset()
    if _compare_runs(fn, make_inputs, device, takes_grad, eager, aot) and _exactly(aot, compiled):
        raise Rejected("torch.compile(backend=\"aot_eager\") differs from eager alike, and the compiled "
                       "run matches it exactly:\n" + "\n".join(problems))


def _exactly(a: "Run", b: "Run") -> bool:
    pairs = [*zip(a.outputs, b.outputs), *zip(a.inputs, b.inputs), *zip(a.grads or (), b.grads or ())]
    return len(a.outputs) == len(b.outputs) and all(
        (x is None) == (y is None) and (x is None or (x.dtype == y.dtype and x.shape == y.shape and torch.equal(x.detach(), y.detach())))
        for x, y in pairs)


def _on_cpu(x: torch.Tensor) -> torch.Tensor:
    """A CPU copy with the same storage layout (sizes, strides, offset: an expanded input stays
    expanded)."""
    storage = x.untyped_storage().cpu()
    return torch.empty(0, dtype=x.dtype).set_(storage, x.storage_offset(), x.size(), x.stride())


class Run:
    """One run of the program: outputs, the inputs afterwards, gradients (or None)."""

    def __init__(self, outputs, inputs, grads):
        self.outputs, self.inputs, self.grads = outputs, inputs, grads


def _prepare(make_inputs, device, takes_grad, dtype=None):
    inputs = make_inputs(device)
    if dtype is not None:  # the float64 reference: float inputs widened, strides kept
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    for x, g in zip(inputs, takes_grad):
        if g and x.is_floating_point():
            x.requires_grad_()
    return inputs


def _execute(fn, inputs) -> Run:
    outputs = fn(*inputs)
    wanted = [x for x in inputs if x.requires_grad]
    grads = None
    if wanted and any(o.requires_grad for o in outputs):
        grads = torch.autograd.grad(_loss(outputs), wanted, allow_unused=True)
    if any(x.is_cuda for x in inputs):  # a kernel's fault is raised here, in the run that made it
        torch.cuda.synchronize()
    return Run(outputs, [x.detach() for x in inputs], grads)


def _loss(outputs):
    """A weighted sum of the outputs: fixed random weights, so a gradient routed to the wrong
    element (a transposed one) shows, as it would not under a plain sum."""
    g = torch.Generator().manual_seed(0)
    terms = [(o * torch.randn(o.shape, generator=g).to(o.device, o.dtype)).sum()
             for o in outputs if o.requires_grad]
    return sum(terms)


def _run(fn, make_inputs, device, takes_grad, what, dtype=None, mode=contextlib.nullcontext) -> Run:
    try:
        inputs = _prepare(make_inputs, device, takes_grad, dtype)  # (outside the mode: the same random values)
        with mode():
            return _execute(fn, inputs)
    except Exception as error:  # noqa: BLE001
        raise Rejected(f"{what} raised: {_exception_text(error)}") from None


def _compile_and_run(fn, make_inputs, device, takes_grad, dynamic):
    torch._dynamo.reset()
    dynamo_mlir.reset()
    run = _execute(torch.compile(fn, backend="mlir", dynamic=dynamic), _prepare(make_inputs, device, takes_grad))
    return run, dynamo_mlir.stats()  # after the backward: its graph compiles when it first runs


def _reject_if_torch_decomposition_settles_it(fn, make_inputs, device, takes_grad, eager, compiled, problems) -> None:
    """Where the compiled run matches eager when judged against a float64 run of torch's own
    decompositions (inductor's table, applied op by op as the program runs: no tracing) instead
    of a float64 run of eager's kernels, the two float64 runs part where rounding decides:
    group_norm over groups of one element is x - mean(x) = 0 exactly as the decomposition
    computes it, but eager's kernel computes x * a - mean * a and gives 5.6e-6 in bfloat16,
    -4.7e-15 in float64, so a logical_and of it was True in both eager runs and False compiled
    (seed 101 program 90). That is no finding against the compiler."""
    try:
        differs = _compare_runs(fn, make_inputs, device, takes_grad, eager, compiled, reference_mode=Decomposing)
    except Rejected:  # the decompositions refused the program: the problems stand
        return
    if not differs:
        raise Rejected("judged against a float64 run of torch's decompositions, the compiled run matches eager: "
                       "eager's kernels and the decompositions part by rounding:\n" + "\n".join(problems))


class Decomposing(TorchDispatchMode):
    """Runs each op that inductor's decomposition table names as its decomposition (random ops
    excepted: they would draw other numbers)."""

    def __init__(self):
        super().__init__()
        from torch._inductor.decomposition import select_decomp_table
        self.table = select_decomp_table()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        decomposition = self.table.get(func)
        if decomposition is not None and torch.Tag.nondeterministic_seeded not in func.tags:
            with self:  # the ops it calls decompose in turn
                result = decomposition(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)


def _compare_runs(fn, make_inputs, device, takes_grad, eager: Run, compiled: Run,
                  reference_mode=contextlib.nullcontext) -> list[str]:
    """What differs between the compiled and eager runs, judged against a float64 run of fn
    (under `reference_mode`: eager's kernels by default)."""
    reference = Lazy(lambda: _run(fn, make_inputs, device, takes_grad, "float64 reference", torch.float64,
                                  reference_mode))
    problems = []
    if len(compiled.outputs) != len(eager.outputs):
        return [f"outputs: {len(compiled.outputs)}, eager {len(eager.outputs)}"]
    for i, (c, e) in enumerate(zip(compiled.outputs, eager.outputs)):
        problems += compare(f"output {i}", c.detach(), e.detach(), lambda i=i: reference().outputs[i])
    pristine = make_inputs(device)
    for i, (c, e, p) in enumerate(zip(compiled.inputs, eager.inputs, pristine)):
        if _same(e, p):  # eager left it alone: the compiled call must too, to the bit
            problems += [] if _same(c, p) else [f"input {i} changed by the call (eager leaves it): "
                                               f"{_difference(c, p)}"]
        else:
            problems += compare(f"input {i} after the call", c, e, lambda i=i: reference().inputs[i])
    problems += _compare_grads(eager, compiled, reference)
    return problems


def _compare_grads(eager: Run, compiled: Run, reference) -> list[str]:
    if (eager.grads is None) != (compiled.grads is None):
        return [f"gradients: compiled {compiled.grads is not None}, eager {eager.grads is not None}"]
    problems = []
    for i, (c, e) in enumerate(zip(compiled.grads or (), eager.grads or ())):
        if (c is None) != (e is None):
            which = lambda g: "none" if g is None else "one"  # noqa: E731
            problems.append(f"gradient {i}: compiled {which(c)}, eager {which(e)}")
        elif c is not None:
            problems += compare(f"gradient {i}", c, e, lambda i=i: reference().grads[i])
    return problems


class Lazy:
    """A value computed on first use (the float64 reference: most programs never need it)."""

    def __init__(self, make):
        self.make, self.value = make, None

    def __call__(self):
        if self.value is None:
            self.value = self.make()
        return self.value


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit (NaN equal to NaN)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


def compare(what: str, got: torch.Tensor, want: torch.Tensor, reference) -> list[str]:
    """[] if `got` matches eager's `want`, else what differs. `reference()`: the float64 value."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return [f"{what}: {got.dtype} {tuple(got.shape)}, eager {want.dtype} {tuple(want.shape)}"]
    if not got.is_floating_point():
        return [] if torch.equal(got, want) else _compare_discrete(what, got, want, reference)
    rtol, atol = CLOSE_TOL.get(got.dtype, (None, None))
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
        return []
    except AssertionError:
        pass
    return _compare_with_float64(what, got, want, reference().to(got.device))


def _settled(want, ref) -> torch.Tensor:
    """Per element: eager's value is the float64 run's (equal, or close for floats), so rounding
    did not decide it. Where eager and float64 part (a comparison or sign() of a value at a
    rounding boundary, 1/0 of a cancellation), any of the values is a right answer."""
    w, r = want.double(), ref.to(want.device).double()
    if not want.is_floating_point():
        return w == r
    rtol = SETTLED_RTOL.get(want.dtype, 1e-4)
    close = w.isfinite() & r.isfinite() & ((w - r).abs() <= rtol * (r.abs() + 1))
    return (w == r) | (w.isnan() & r.isnan()) | close


def _unsettled_only(got, want, ref, differs) -> bool:
    """Compiled parts from eager only where eager's own value was rounding's choice."""
    return not bool((differs & _settled(want, ref)).any())


def _compare_discrete(what, got, want, reference) -> list[str]:
    """Integers and booleans: equal to eager's, except where eager's is not settled."""
    if _unsettled_only(got, want, reference(), got != want):
        return []
    return [f"{what}: {_difference(got, want)}"]


def _compare_with_float64(what, got, want, ref) -> list[str]:
    g, w, r = got.double(), want.double(), ref.double()
    odd = (g.isnan() != w.isnan()) | (g.isinf() != w.isinf()) | (g.isinf() & w.isinf() & (g != w))
    if odd.any() and not _unsettled_only(got, want, ref, odd):
        return [f"{what}: NaN/inf in other places than eager: {_difference(got, want)}"]
    finite = g.isfinite() & w.isfinite() & r.isfinite()
    if not finite.any():
        return []
    scale = max(1.0, float(r[finite].abs().max()))
    error, eager_error = _rmse(g[finite], r[finite]), _rmse(w[finite], r[finite])
    multiplier = SMALL_TENSOR_MULTIPLIER if got.numel() <= SMALL_TENSOR else ERROR_MULTIPLIER.get(got.dtype, 2.0)
    allowed = multiplier * eager_error + FALLBACK_TOL[got.dtype] * scale
    if error <= allowed:
        return []
    return [f"{what}: RMSE vs float64 {error:.3g} > allowed {allowed:.3g} (eager's {eager_error:.3g}); "
            f"{_difference(got, want)}"]


def _rmse(a, b) -> float:
    return float(((a - b) ** 2).mean().sqrt())


def _difference(got, want) -> str:
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} vs {tuple(want.shape)}"
    g, w = got.detach().double(), want.detach().double()
    differs = ~((g == w) | (g.isnan() & w.isnan()))
    if not differs.any():
        return "equal"
    where = differs.nonzero()[0].tolist()
    delta = (g - w).abs()[differs]
    return (f"{int(differs.sum())} of {g.numel()} elements differ, max |diff| {float(delta.max()):.4g}; "
            f"first at {where}: {g[tuple(where)].item():.6g} vs eager {w[tuple(where)].item():.6g}")


def _stats_problems(stats: dict, allow_failed_partitions: bool) -> list[str]:
    """An op the partitioner declines (dynamic sizes its rule does not take yet) runs eagerly by
    design; a region that was accepted and then failed to compile is a compiler bug."""
    problems = []
    if stats["ops_compiled"] + stats["ops_library"] == 0:
        if stats["ops_fallback"]:  # declined, every one (dynamic sizes): a program with nothing to test
            raise Rejected(f"every op ran eagerly: {stats['fallback_reasons']}")
        problems.append("nothing was compiled (ops_compiled + ops_library == 0): the run tested nothing")
    if stats["partitions_failed"] and not allow_failed_partitions:
        problems.append(f"region(s) failed to compile and ran eagerly: {stats['partitions_failed']}")
    return problems


def _exception_text(error: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return text if len(text) < 3000 else text[:3000] + " ..."


def _report(title: str, details: str, source: str | None, stats: dict | None = None) -> str:
    parts = [f"{title}:\n{details}"]
    if stats is not None and stats["partitions_failed"]:
        parts.append(dynamo_mlir.explain())
    if source:
        parts.append("The program, as a regression test (tests/fuzz/test_regressions.py):\n\n" + source)
    return "\n\n".join(parts)


def check_program(program, device: str = "cpu", **kwargs) -> dict:
    """check() for a drawn Program (tests/fuzz/program.py), its source in any failure."""
    if not program.steps:  # every op drawn was refused (shrinking gets there): nothing to test
        raise Rejected("an empty program")
    no_grad = tuple(i.name for i in program.inputs if not i.grad)
    return check(program.function(), program.input_maker(), dynamic=program.dynamic, grad=program.grad,
                 device=device, no_grad=no_grad, source=program.source(), **kwargs)
