"""Resolve `MODEL` (`path/to/file.py:name` or `package.module:name`) into a callable and inputs.

The convention, also in `dynamo-mlir dump --help` and docs/cli.md. `name` may be:

* a factory: a function taking no arguments that returns `(callable, example_inputs)`;
* an `nn.Module` instance, an `nn.Module` subclass constructible with no arguments, or a
  function taking tensors; its example inputs are, first found: `name.example_inputs`, a
  module-level `name_example_inputs`, a module-level `example_inputs`.

Example inputs are a tuple/list of positional arguments or a single tensor; any of them may
also be a no-argument function returning that.
"""

import importlib
import importlib.util
import inspect
import logging
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import torch

from .errors import UsageError

log = logging.getLogger("dynamo_mlir")

CONVENTION = ("MODEL is path/to/file.py:name, where name is a factory returning (callable, example_inputs), "
              "or an nn.Module/function with example inputs in name.example_inputs or a module-level "
              "name_example_inputs / example_inputs")


@dataclass
class LoadedModel:
    spec: str
    fn: Callable
    example_inputs: tuple
    source: str  # the file the model came from


def load_model(spec: str) -> LoadedModel:
    location, sep, name = spec.rpartition(":")
    if not sep or not name or not location:
        raise UsageError(f"MODEL '{spec}' has no ':name'; {CONVENTION}{_candidates_hint(spec)}")
    module = _import(location)
    if not hasattr(module, name):
        raise UsageError(f"'{location}' has no '{name}'; it defines: {', '.join(_candidates(module)) or 'nothing callable'}")
    fn, inputs = _resolve(module, name, getattr(module, name))
    inputs = _as_tuple(inputs, name)
    return LoadedModel(spec, fn, inputs, getattr(module, "__file__", location) or location)


def check_inputs(model: LoadedModel) -> None:
    """Run the model eagerly once: wrong example inputs fail here, not inside the compiler."""
    try:
        with torch.no_grad():
            model.fn(*model.example_inputs)
    except Exception as e:
        shapes = ", ".join(_describe(x) for x in model.example_inputs)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise UsageError(f"the example inputs of '{model.spec}' ({shapes}) do not fit it: "
                         f"{type(e).__name__}: {first}; fix the inputs the factory or example_inputs gives") from None


# ---- importing the file or module

def _import(location: str) -> ModuleType:
    if location.endswith(".py") or os.sep in location or "/" in location:
        return _import_file(location)
    try:
        return importlib.import_module(location)
    except ImportError as e:
        raise UsageError(f"cannot import module '{location}': {e}; give a file path (path/to/file.py:name) "
                         "or an importable module (package.module:name)") from None


def _import_file(path: str) -> ModuleType:
    if not os.path.isfile(path):
        raise UsageError(f"no such file '{path}'; {CONVENTION}")
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"dynamo_mlir_user_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Siblings of the file import as in `python file.py`.
    sys.path.insert(0, os.path.dirname(path))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(name, None)
        raise UsageError(f"importing '{path}' failed: {type(e).__name__}: {e}; fix the file "
                         "(it is run like `python file.py` without __main__)") from None
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def _candidates(module: ModuleType) -> list[str]:
    """Names in the module that could be a MODEL, for error messages."""
    own = getattr(module, "__name__", "")
    found = []
    for key, value in vars(module).items():
        if key.startswith("_") or isinstance(value, ModuleType):
            continue
        defined_here = getattr(value, "__module__", own) == own
        if isinstance(value, torch.nn.Module) or (callable(value) and defined_here):
            found.append(key)
    return found


def _candidates_hint(spec: str) -> str:
    if spec.endswith(".py") and os.path.isfile(spec):
        try:
            names = _candidates(_import_file(spec))
        except UsageError:
            return ""
        if names:
            return f"; e.g. {spec}:{names[0]} (names there: {', '.join(names)})"
    return ""


# ---- what `name` is: a table of (test, resolver), first match wins

def _is_module_class(obj) -> bool:
    return inspect.isclass(obj) and issubclass(obj, torch.nn.Module)


def _is_factory(obj) -> bool:
    if not inspect.isfunction(obj):
        return False
    params = inspect.signature(obj).parameters.values()
    return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _from_factory(module, name, obj):
    try:
        made = obj()
    except Exception as e:
        raise UsageError(f"factory '{name}' raised {type(e).__name__}: {e}; fix the factory") from None
    if callable(made) and not isinstance(made, (tuple, list)):  # a model builder: inputs by convention
        return made, _example_inputs(module, name, made)
    if not (isinstance(made, (tuple, list)) and len(made) == 2 and callable(made[0])):
        raise UsageError(f"factory '{name}' must return (callable, example_inputs), got {type(made).__name__}; "
                         "return e.g. (model, (torch.randn(8, 16),))")
    return made[0], made[1]


def _from_module_class(module, name, obj):
    try:
        instance = obj()
    except TypeError as e:
        raise UsageError(f"nn.Module class '{name}' cannot be built without arguments ({e}); "
                         "give an instance or a factory returning (model, example_inputs)") from None
    return instance, _example_inputs(module, name, instance)


def _from_callable(module, name, obj):
    return obj, _example_inputs(module, name, obj)


def _not_callable(module, name, obj):
    raise UsageError(f"'{name}' is of type {type(obj).__name__}, not a model; {CONVENTION}")


_RESOLVERS: list[tuple[Callable[[Any], bool], Callable]] = [
    (lambda o: isinstance(o, torch.nn.Module), _from_callable),
    (_is_module_class, _from_module_class),
    (_is_factory, _from_factory),
    (callable, _from_callable),
    (lambda o: True, _not_callable),
]


def _resolve(module, name, obj):
    resolver = next(r for test, r in _RESOLVERS if test(obj))
    return resolver(module, name, obj)


def _example_inputs(module, name, obj):
    for where, value in ((f"{name}.example_inputs", getattr(obj, "example_inputs", None)),
                         (f"{name}_example_inputs", getattr(module, f"{name}_example_inputs", None)),
                         ("example_inputs", getattr(module, "example_inputs", None))):
        if value is not None:
            log.debug("dynamo-mlir: example inputs of %s from %s", name, where)
            return value
    raise UsageError(f"no example inputs for '{name}': set {name}.example_inputs or a module-level "
                     f"{name}_example_inputs, or make a factory returning ({name}, example_inputs)")


def _as_tuple(inputs, name: str) -> tuple:
    if callable(inputs) and not isinstance(inputs, torch.Tensor):
        inputs = inputs()
    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs)
    raise UsageError(f"example inputs of '{name}' must be a tensor or a tuple of arguments, "
                     f"got {type(inputs).__name__}")


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"{str(x.dtype).replace('torch.', '')}{list(x.shape)}"
    return type(x).__name__
