"""Compile a model exactly as a user would: `torch.compile(fn, backend="mlir", options=...)`,
run once on the example inputs (and backward with `train`), then collect what was compiled.

The CLI never calls the compiler any other way, so what it dumps and explains is what
`torch.compile` runs.
"""

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass, field

import torch

from ..codegen import CompileError, all_targets, config, get_target, register_target
from ..frontend.stats import REGISTRY, GraphReport
from .errors import UsageError
from .model_loader import LoadedModel

log = logging.getLogger("dynamo_mlir")


@dataclass
class CompileRequest:
    target: str = "cpu"
    dump_dir: str | None = None
    train: bool = False
    dynamic: bool = False
    print_after_all: bool = False
    options: dict = field(default_factory=dict)  # more torch.compile options (the CLI's -O)


@dataclass
class CompileResult:
    request: CompileRequest
    graphs: list[GraphReport]
    graph_breaks: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    started: float = 0.0  # time.time() when compiling began, to tell fresh dump files from old ones
    ran_on: str = "cpu"


def resolve_target(name: str):
    try:
        return get_target(name)
    except KeyError:
        raise UsageError(f"unknown target '{name}'; known targets: {', '.join(sorted(all_targets()))} "
                         "(see `dynamo-mlir targets`)") from None


def chosen_target(flag: str | None, options: dict) -> str:
    """--target, or -O target=NAME, or cpu; the two naming different targets is an error."""
    named = options.get("target")
    if flag and named and flag != named:
        raise UsageError(f"--target {flag} and -O target={named} name different targets: give one")
    return flag or named or "cpu"


def option_flags(pairs: list[str]) -> dict:
    """-O KEY=VALUE flags as typed options (each parsed by the type of the option it names)."""
    texts = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"-O takes KEY=VALUE, got '{pair}' (see `dynamo-mlir options`)")
        texts[key.strip()] = value
    try:
        return config.texts_to_options(texts, None)
    except ValueError as e:
        raise UsageError(str(e).removeprefix("dynamo-mlir: ")) from None


def compile_options(request: CompileRequest, target) -> dict:
    """The options={...} of this request, checked against `target` before anything compiles."""
    options = {**request.options, "target": target.name, "print_after_all": request.print_after_all}
    if request.dump_dir:
        options["dump_dir"] = request.dump_dir
    try:
        config.resolve(options)
    except ValueError as e:
        raise UsageError(str(e).removeprefix("dynamo-mlir: ")) from None
    return options


def compile_model(model: LoadedModel, request: CompileRequest) -> CompileResult:
    target = resolve_target(request.target)
    options = compile_options(request, target)
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    REGISTRY.reset()
    device = target.device_type if target.available() else "cpu"
    fn, inputs = _to_device(model, device, request.train)
    started, t0 = time.time(), time.perf_counter()
    compiled = torch.compile(fn, backend="mlir", options=options, dynamic=True if request.dynamic else None)
    with _stages_only(target, device):
        _run_once(compiled, inputs, request.train)
    return CompileResult(request, list(REGISTRY.graphs), _graph_breaks(), time.perf_counter() - t0,
                         started, device)


def _to_device(model: LoadedModel, device: str, train: bool):
    fn = model.fn.to(device) if isinstance(model.fn, torch.nn.Module) else model.fn
    inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in model.example_inputs)
    if train and not _has_trainable_parameters(fn):
        # A function has no parameters: differentiate with respect to its float inputs instead.
        inputs = tuple(x.detach().requires_grad_() if _is_float_tensor(x) else x for x in inputs)
    return fn, inputs


def _has_trainable_parameters(fn) -> bool:
    return isinstance(fn, torch.nn.Module) and any(p.requires_grad for p in fn.parameters())


def _is_float_tensor(x) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def _run_once(compiled, inputs, train: bool) -> None:
    grad_mode = contextlib.nullcontext() if train else torch.no_grad()
    with grad_mode:
        outputs = compiled(*inputs)
    if train:
        loss = sum(t.float().sum() for t in _tensors(outputs) if t.requires_grad)
        if not isinstance(loss, torch.Tensor):
            raise UsageError("--train: no output of the model requires grad; give a model with "
                             "trainable parameters or float inputs")
        loss.backward()


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _graph_breaks() -> dict[str, int]:
    return {str(reason): n for reason, n in torch._dynamo.utils.counters["graph_break"].items()}


@contextlib.contextmanager
def _stages_only(target, device: str):
    """A target this machine cannot run (cuda without a GPU) still generates every stage.

    Its loader is swapped for one that fails with a clear reason, so each region's stages are
    dumped and the region then runs eagerly (reported as a failed partition, not a crash).
    """
    if device == target.device_type:
        yield
        return

    def cannot_load(artifact, signature, options):
        raise CompileError("load", f"target '{target.name}' cannot run on this machine (no {target.device_type} "
                                   "device); every stage was generated, the region ran eagerly")

    register_target(dataclasses.replace(target, load=cannot_load), override=True)
    try:
        yield
    finally:
        register_target(target, override=True)
