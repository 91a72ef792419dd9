"""The one mechanism behind every option: declaring, naming, parsing, validating.

An option set is a frozen dataclass whose option fields are declared with `option(...)`. The
core's set is `config.Options`; each target declares its own `TargetOptions` subclass in its
own package (Triton's per-backend `CUDAOptions`), so adding a target option edits only that
target. Every option `name` is the `options={...}` key `name` and the environment variable
`DYNAMO_MLIR_<NAME>`; values from the environment (and the CLI's `-O`) are text, parsed by the
field's type. Precedence: explicit options > environment > defaults.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, Callable, Mapping


class OptionError(ValueError):
    """A wrong option (unknown key, bad value, a mode not supported): the user's to fix, so it
    is raised to the caller, never turned into a fallback to eager."""

ENV_PREFIX = "DYNAMO_MLIR_"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def option(default: Any, doc: str, check: Callable[[Any], str | None] | None = None,
           affects_code: bool | str = True) -> Any:
    """Declare an option field. `check(value)` returns why a value is invalid, or None.
    `affects_code=False`: the option changes nothing a compile generates (where dumps go, how
    failures are reported), so it is left out of the compile cache's key (codegen/cache.py).
    `affects_code="per graph"`: its value picks graphs by name (a debugging selection), so while
    it is set the key also holds the graph's name."""
    return field(default=default, metadata={"doc": doc, "check": check, "affects_code": affects_code})


def env_var(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _kind(f: Field) -> tuple[str, bool]:
    """(base type name, whether None is allowed) from the annotation, e.g. 'str | None'."""
    text = f.type.__name__ if isinstance(f.type, type) else str(f.type)  # annotations may be evaluated
    parts = [p.strip() for p in text.split("|")]
    return parts[0], "None" in parts[1:]


def _type_name(f: Field) -> str:
    kind, optional = _kind(f)
    return kind + (" | None" if optional else "")


def parse_text(f: Field, text: str) -> Any:
    """An option's value from text (environment variable, command line)."""
    kind, optional = _kind(f)
    if kind == "bool":
        word = text.strip().lower()
        if word not in _TRUE + _FALSE:
            raise OptionError(f"dynamo-mlir: option '{f.name}' takes a boolean (1/0, true/false), got {text!r}")
        return word in _TRUE
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise OptionError(f"dynamo-mlir: option '{f.name}' takes an integer, got {text!r}") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise OptionError(f"dynamo-mlir: option '{f.name}' takes a number, got {text!r}") from None
    if optional and text == "":
        return None
    return text


def _type_error(f: Field, value: Any) -> str | None:
    kind, optional = _kind(f)
    if value is None:
        return None if optional else "None is not allowed"
    python = {"bool": bool, "int": int, "str": str, "float": (int, float)}.get(kind)
    if python is None:
        return None
    ok = isinstance(value, bool) if python is bool else isinstance(value, python) and not isinstance(value, bool)
    if ok:
        return None
    return f"expected {kind}{' or None' if optional else ''}, got {type(value).__name__} {value!r}"


@dataclass(frozen=True)
class OptionSet:
    """Base of an option set: class methods that read its declared fields."""

    @classmethod
    def option_fields(cls) -> list[Field]:
        return [f for f in fields(cls) if "doc" in f.metadata]

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in cls.option_fields()]

    @classmethod
    def field_of(cls, name: str) -> Field | None:
        return next((f for f in cls.option_fields() if f.name == name), None)

    @classmethod
    def describe(cls) -> list[dict]:
        """One row per option (name, environment variable, type, default, doc): --help, docs."""
        return [{"name": f.name, "env": env_var(f.name), "type": _type_name(f),
                 "default": None if f.default is MISSING else f.default, "doc": f.metadata["doc"]}
                for f in cls.option_fields()]

    def fingerprint(self) -> str:
        """The values of the options that can change generated code, as stable text: part of the
        compile cache's key (Triton's `CUDAOptions.hash()`)."""
        return repr(sorted((f.name, repr(getattr(self, f.name))) for f in self.option_fields()
                           if f.metadata["affects_code"]))

    def names_graphs(self) -> bool:
        """Whether an option that picks graphs by name is set (see `option`)."""
        return any(f.metadata["affects_code"] == "per graph" and getattr(self, f.name) != f.default
                   for f in self.option_fields())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
        environ = os.environ if environ is None else environ
        return {f.name: parse_text(f, environ[env_var(f.name)])
                for f in cls.option_fields() if env_var(f.name) in environ}

    @classmethod
    def validate(cls, values: Mapping[str, Any], owner: str) -> None:
        """Raise ValueError naming the option and `owner` for a wrongly typed or invalid value."""
        for name, value in values.items():
            f = cls.field_of(name)
            why = _type_error(f, value)
            if why is None and f.metadata["check"] is not None and value is not None:
                why = f.metadata["check"](value)
            if why:
                raise OptionError(f"dynamo-mlir: invalid value for option '{name}' ({owner}): {why}")


@dataclass(frozen=True)
class TargetOptions(OptionSet):
    """A target's own options; a target declares a subclass as `Target.options_class`.

    Subclasses are frozen dataclasses of `option(...)` fields; override `parse` only to check
    options against each other."""

    @classmethod
    def parse(cls, explicit: Mapping[str, Any], target: str,
              environ: Mapping[str, str] | None = None) -> "TargetOptions":
        """Explicit options over `DYNAMO_MLIR_*` variables over defaults; unknown keys are an error."""
        unknown = sorted(set(explicit) - set(cls.names()))
        if unknown:
            raise OptionError(f"dynamo-mlir: unknown option(s) {unknown} for target '{target}'; "
                             f"its options: {cls.names()}")
        merged = {**cls.from_env(environ), **explicit}
        cls.validate(merged, f"target '{target}'")
        return cls(**merged)

    def keeps_fused_attention(self, symbolic: bool = False, half: bool = False, training: bool = False) -> bool:
        """Whether a graph for this target keeps F.scaled_dot_product_attention whole instead of
        its math form (frontend/backend.py's prepare_attention): for a target with a fused kernel
        of its own for dynamo.attention (and, in a `training` graph, dynamo.attention_grad): the
        cuda target's library calls, the cpu target's call of torch's CPU kernel. `symbolic`: the
        graph has symbolic sizes; `half`: a float16/bfloat16 input. Default: no, the math form."""
        return False

    def retakes_saved_views(self) -> bool:
        """Whether a training graph's saved views are taken again in the backward from what they
        view (frontend/recomputed_views.py), so the forward saves the viewed tensor instead of
        writing each view out. Default: no (the cpu target's saved activations keep the layouts
        its regions computed them in: frontend/saved_layouts.py; re-taken, its ResNet-50 step
        was 5% slower)."""
        return False

    def matmul_padding(self, dtype) -> tuple[int, int] | None:
        """(multiple, least) for a 2-D matmul of `dtype` (a torch dtype) operands: one with a dim
        of at least `least` that is not a multiple of `multiple` is computed on operands
        zero-padded to multiples of it (frontend/padded_matmuls.py: the vendor library's fast
        kernels need aligned dims). Default: None, never padded."""
        return None
