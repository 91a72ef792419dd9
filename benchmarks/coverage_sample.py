"""Run one OpInfo entry's samples through torch.compile(backend="mlir") and eager; classify.

Used inside the coverage worker processes (benchmarks/op_coverage.py). A sample is:
  compiled    at least one op ran in our generated code (library calls do not count), nothing
              ran eagerly, and the output VALUES (and grads with --train) match eager;
  unverified  compiled as above, but only shapes and dtypes can be compared (random ops,
              uninitialized memory): the values are not checked, so it is not counted compiled;
  fallback    matched eager, but some node ran eagerly (a graph break, an unsupported op, a
              region that failed to compile or fell back at run time), or no op at all ran in
              generated code;
  mismatch    an input differs after the call from eager's input after its call (a compiled
              call wrote its caller's tensor), or
              outputs differ from eager beyond the OpInfo's tolerance, and are not accepted by
              a wider reference: a half result may match the float32 computation rounded once
              (what a careful kernel returns; eager's own half kernels round partial results,
              and which one runs depends on the device), and any result passes torch._dynamo's
              accuracy check against the float64 computation (the one inductor is held to: an
              RMSE at most 2-3x eager's own). The table lists the entries so accepted;
  error       compiled raised where eager did not.
Samples where eager itself raises are skipped. An op takes its worst sample's verdict.
"""

import copy
import logging
from dataclasses import dataclass, field

import torch
import torch.utils._pytree as pytree

import dynamo_mlir

log = logging.getLogger("dynamo_mlir.coverage")

# Worst first: an op's verdict is the worst of its samples'.
SEVERITY = ("error", "mismatch", "fallback", "unverified", "compiled", "skipped")

# Ops whose output depends on the RNG or on uninitialized memory: only metadata is compared
# (a compiled graph may draw random numbers in another order than eager).
NONDETERMINISTIC = {
    "bernoulli", "normal", "normal.number_mean", "normal.in_place", "multinomial", "rand_like", "randn_like",
    "randint_like", "randint", "randn", "rand", "uniform", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.feature_alpha_dropout.with_train", "nn.functional.feature_alpha_dropout.without_train",
    "nn.functional.rrelu", "empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
    "empty_permuted", "exponential", "geometric", "log_normal", "cauchy", "randn_like", "torch.ops.aten.empty",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d", "resize_", "resize_as_",
    "nn.functional.multi_head_attention_forward", "svd_lowrank", "pca_lowrank", "unique", "unique_consecutive",
}


# Outputs that hold uninitialized memory in eager: CUDA attention returns its dropout RNG seed
# and offset even without dropout, as empty tensors. Compared by shape and dtype only.
UNINITIALIZED_OUTPUTS = {
    "torch.ops.aten._efficient_attention_forward": {2, 3},
    "torch.ops.aten._flash_attention_forward": {2, 3},
}


@dataclass
class SampleResult:
    verdict: str
    reason: str = ""
    note: str = ""  # how a result that differs from eager was accepted (see _accepted_by_reference)


@dataclass
class OpResult:
    name: str
    verdict: str = "skipped"
    samples: int = 0
    counts: dict = field(default_factory=dict)
    reason: str = ""
    seconds: float = 0.0
    notes: list = field(default_factory=list)

    def add(self, r: SampleResult) -> None:
        self.samples += 1
        if r.note and r.note not in self.notes:
            self.notes.append(r.note)
        self.counts[r.verdict] = self.counts.get(r.verdict, 0) + 1
        if SEVERITY.index(r.verdict) < SEVERITY.index(self.verdict):
            self.verdict, self.reason = r.verdict, r.reason
        elif r.verdict == self.verdict and not self.reason:
            self.reason = r.reason


def tolerances(op, dtype: torch.dtype, device: str) -> tuple[float, float] | None:
    """(atol, rtol) from the OpInfo's own toleranceOverride decorators, the loosest that applies."""
    best = None
    for info in getattr(op, "decorators", ()) or ():
        if getattr(info, "device_type", None) not in (None, device):
            continue
        dtypes = getattr(info, "dtypes", None)
        if dtypes is not None and dtype not in dtypes:
            continue
        for dec in getattr(info, "decorators", ()) or ():
            tol = getattr(dec, "d", None)  # toleranceOverride keeps {dtype: tol(atol, rtol)}
            if isinstance(tol, dict) and dtype in tol:
                atol, rtol = _atol_rtol(tol[dtype], dtype)
                best = (max(best[0], atol), max(best[1], rtol)) if best else (atol, rtol)
    return best


def _atol_rtol(tol, dtype: torch.dtype) -> tuple[float, float]:
    """toleranceOverride's tol(atol, rtol), or precisionOverride's bare atol (with the dtype's
    default rtol)."""
    if isinstance(tol, (int, float)):
        return float(tol), torch.testing._comparison.default_tolerances(dtype)[0]
    return tol.atol, tol.rtol


def _clone(tree):
    """Independent copies of every tensor (inputs may be mutated; grads must not leak)."""
    def one(x):
        if isinstance(x, torch.Tensor):
            c = x.detach().clone()
            c.requires_grad_(x.requires_grad)
            return c
        return copy.copy(x) if isinstance(x, (list, dict)) else x
    return pytree.tree_map(one, tree)


def _as_call(op, sample, convert=lambda x: x):
    """(fn, flat tensor args): fn(*tensors) calls op with the sample, tensors as graph inputs;
    `convert` maps its other arguments (dtype arguments, for the wider reference)."""
    tree = (sample.input, sample.args, sample.kwargs)
    leaves, spec = pytree.tree_flatten(tree)
    positions = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    consts = [x if isinstance(x, torch.Tensor) else convert(x) for x in leaves]

    def fn(*tensors):
        values = list(consts)
        for i, t in zip(positions, tensors):
            values[i] = t
        inp, args, kwargs = pytree.tree_unflatten(values, spec)
        return op.op(inp, *args, **kwargs)

    return fn, [leaves[i] for i in positions]


def _grads(outputs, inputs):
    """Gradients of sum(out * fixed weights) wrt every input that requires grad (None if none)."""
    outs = [o for o in pytree.tree_leaves(outputs)
            if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point]
    wrt = [t for t in inputs if t.requires_grad]
    if not outs or not wrt:
        return None
    weights = [torch.linspace(-1, 1, o.numel(), dtype=o.dtype, device=o.device).reshape(o.shape) for o in outs]
    return torch.autograd.grad(outs, wrt, weights, allow_unused=True)


def _call_unseeded(op, *args, **kwargs):
    return op(*args, **kwargs)


def unwrap_seeding() -> None:
    """OpInfo calls its random ops through `wrapper_set_seed`, which seeds the global generator
    inside the call. Dynamo cannot trace that (it graph-breaks before any backend sees the op),
    so the sweep would measure the harness, not the backend. `_run` seeds before every call,
    eager and compiled alike; the wrapper becomes a plain call."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("torch.testing._internal") and hasattr(module, "wrapper_set_seed"):
            module.wrapper_set_seed = _call_unseeded


def _run(fn, tensors, train: bool, seed: int):
    torch.manual_seed(seed)
    out = fn(*tensors)
    grads = _grads(out, tensors) if train else None
    detach = lambda x: x.detach() if isinstance(x, torch.Tensor) else x
    return pytree.tree_map(detach, out), grads


def _compare(expected, actual, tol, metadata_only: bool, uninitialized=frozenset(), what: str = "output") -> str | None:
    """None if equal within tolerance, else a one-line reason naming the `what` (output, input)."""
    e_leaves, e_spec = pytree.tree_flatten(expected)
    a_leaves, a_spec = pytree.tree_flatten(actual)
    if len(e_leaves) != len(a_leaves):
        return f"{what} structure differs ({e_spec} vs {a_spec})"
    for i, (e, a) in enumerate(zip(e_leaves, a_leaves)):
        if isinstance(e, torch.Tensor) != isinstance(a, torch.Tensor):
            return f"{what} {i}: tensor vs {type(a).__name__}"
        if not isinstance(e, torch.Tensor):
            if e != a and not (e != e and a != a):
                return f"{what} {i}: {e!r} != {a!r}"
            continue
        if metadata_only or i in uninitialized:
            if (e.shape, e.dtype) != (a.shape, a.dtype):
                return f"{what} {i}: {e.shape}/{e.dtype} vs {a.shape}/{a.dtype}"
            continue
        kw = dict(atol=tol[0], rtol=tol[1]) if tol else {}
        try:
            torch.testing.assert_close(a, e, equal_nan=True, check_stride=False, **kw)
        except AssertionError as err:
            lines = [l.strip() for l in str(err).splitlines() if l.strip()]
            return f"{what} {i}: " + "; ".join(lines[:3])
    return None


def _fallback_reason(graph_breaks: int) -> str | None:
    """Why the sample did not run wholly in generated code (None if it did)."""
    s = dynamo_mlir.stats()
    if graph_breaks:
        return f"{graph_breaks} graph break(s)"
    if s["graphs"] == 0:
        return "no graph reached the backend"
    if s["fallback_reasons"]:
        op, why = s["fallback_reasons"][0]
        return f"{op}: {why}"[:300]
    if s["partitions_failed"]:
        return "a partition failed to compile"
    if s["runtime_fallback_calls"]:
        region, seen = next(iter(s["runtime_fallbacks"].items()))
        return f"{region} ran eagerly at run time: {next(iter(seen['reasons']))}"[:300]
    if s["ops_compiled"] == 0:
        return f"no op ran in generated code ({s['ops_library']} library call(s))"
    return None


HALF_TYPES = (torch.float16, torch.bfloat16)
# The reference types: half results are checked against float32 rounded once, any result against
# float64 for its accuracy.
FLOAT32 = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64}
FLOAT64 = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
           torch.complex32: torch.complex128, torch.complex64: torch.complex128}


def _mismatch(expected, actual, tol, metadata_only: bool, train: bool, uninitialized=frozenset()) -> str | None:
    why = _compare(expected[0], actual[0], tol, metadata_only, uninitialized)
    if why is None and train:
        why = _compare(expected[1], actual[1], tol, metadata_only)
        why = why and f"grad {why}"
    return why


def _complex_of(dtype: torch.dtype):
    return {torch.float16: torch.complex32, torch.float32: torch.complex64}.get(dtype)


def _reference(op, sample, train: bool, dtype, wider: dict):
    """The sample computed in wider types: its `dtype` tensors (and the complex ones of the same
    precision) and dtype arguments raised by `wider`. None if eager rejects the wider call."""
    wider = {d: w for d, w in wider.items() if d in (dtype, _complex_of(dtype))}

    def up(x):
        if isinstance(x, torch.dtype):
            return wider.get(x, x)
        if isinstance(x, torch.Tensor) and x.dtype in wider:
            return x.detach().to(wider[x.dtype]).requires_grad_(x.requires_grad)
        return x

    fn, tensors = _as_call(op, sample, up)
    try:
        return _run(fn, [up(t) for t in _clone(tensors)], train, seed=0)
    except Exception:
        return None


def _rounded(reference, dtype):
    """A float32 reference's results rounded once to the sample's own types."""
    narrow = {w: d for d, w in FLOAT32.items() if d in (dtype, _complex_of(dtype))}
    down = lambda x: x.to(narrow[x.dtype]) if isinstance(x, torch.Tensor) and x.dtype in narrow else x
    return pytree.tree_map(down, reference)


def _as_accurate_as_eager(expected, actual, reference, atol: float) -> bool:
    """torch._dynamo's accuracy check, the one inductor's results are held to: equal within atol,
    or a root-mean-square error against the float64 computation at most a small multiple of
    eager's own (2x; 3x for tensors under 1000 elements and for half types)."""
    def flat(tree):
        return [torch.view_as_real(x) if isinstance(x, torch.Tensor) and x.is_complex() else x
                for x in pytree.tree_leaves(tree)]

    return torch._dynamo.utils.same(flat(expected), flat(actual), fp64_ref=flat(reference), tol=atol,
                                    equal_nan=True, log_error=lambda *args, **kwargs: None)


def _accepted_by_reference(op, sample, dtype, expected, actual, tol, train: bool, uninitialized) -> str | None:
    """Why a result that differs from eager is still right (None if it is not):
    - half types: it matches the float32 computation rounded once (what a careful kernel returns;
      eager's own half kernels round partial results, and which one runs depends on the device);
    - any type: it is as accurate as eager against the float64 computation (_as_accurate_as_eager)."""
    if dtype in HALF_TYPES:
        reference = _reference(op, sample, train, dtype, FLOAT32)
        if reference is not None and _mismatch(_rounded(reference, dtype), actual, tol, False, train, uninitialized) is None:
            return "rounded-once"
    reference = _reference(op, sample, train, dtype, FLOAT64)
    if reference is None:
        return None
    atol = tol[0] if tol else torch.testing._comparison.default_tolerances(dtype)[1]
    pick = (lambda t: t) if train else (lambda t: t[0])
    drop = lambda tree: _without(tree, uninitialized)
    if _as_accurate_as_eager(drop(pick(expected)), drop(pick(actual)), drop(pick(reference)), atol):
        return "as accurate as eager"
    return None


def _without(tree, positions):
    """`tree`'s leaves without those at `positions` (outputs holding uninitialized memory)."""
    return [x for i, x in enumerate(pytree.tree_leaves(tree)) if i not in positions]


def _inputs_after(expected_inputs, actual_inputs, tol, metadata_only: bool) -> str | None:
    """Whether the compiled call left every input as eager's call left it (a compiler must not
    write its caller's tensors unless eager does). Not open to the wider references: an input
    written where eager writes none is wrong whatever its values."""
    detach = lambda ts: [t.detach() for t in ts]
    why = _compare(detach(expected_inputs), detach(actual_inputs), tol, metadata_only, what="input")
    return why and f"{why} (after the call)"


def run_sample(op, sample, dtype, device, train: bool) -> SampleResult | None:
    fn, tensors = _as_call(op, sample)
    expected_inputs, actual_inputs = _clone(tensors), _clone(tensors)
    try:
        expected = _run(fn, expected_inputs, train, seed=0)
    except Exception:
        return None  # eager rejects this sample: nothing to compare
    torch._dynamo.reset()
    dynamo_mlir.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(fn, backend="mlir", dynamic=False)
    try:
        actual = _run(compiled, actual_inputs, train, seed=0)
    except Exception as e:
        return SampleResult("error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    tol = tolerances(op, dtype, device)
    metadata_only = op.name in NONDETERMINISTIC
    uninitialized = UNINITIALIZED_OUTPUTS.get(op.name, frozenset())
    written = _inputs_after(expected_inputs, actual_inputs, tol, metadata_only)
    if written:
        return SampleResult("mismatch", written[:300])
    why = _mismatch(expected, actual, tol, metadata_only, train, uninitialized)
    accepted = why and _accepted_by_reference(op, sample, dtype, expected, actual, tol, train, uninitialized)
    if why is not None and not accepted:
        return SampleResult("mismatch", why[:300])
    fallback = _fallback_reason(breaks)
    if fallback:
        return SampleResult("fallback", fallback)
    if metadata_only:
        return SampleResult("unverified", "values not compared (random or uninitialized output): shapes and dtypes only")
    return SampleResult("compiled", note=accepted or "")


def run_op(op, dtype: torch.dtype, device: str, train: bool, max_samples: int, heartbeat=None) -> OpResult:
    result = OpResult(op.full_name if hasattr(op, "full_name") else op.name)
    if dtype not in op.supported_dtypes(device):
        result.reason = f"{dtype} not supported by the op"
        return result
    torch.manual_seed(0)
    try:
        samples = op.sample_inputs(device, dtype, requires_grad=train and op.supports_autograd)
        for i, sample in enumerate(samples):
            if i >= max_samples:
                break
            if heartbeat:
                heartbeat(i)
            r = run_sample(op, sample, dtype, device, train)
            if r is not None:
                result.add(r)
    except Exception as e:  # sample generation itself failed: not our backend's doing
        if not result.samples:
            result.reason = f"sample generation failed: {type(e).__name__}: {e}"[:300]
    if not result.samples and not result.reason:
        result.reason = "no sample ran in eager"
    return result
