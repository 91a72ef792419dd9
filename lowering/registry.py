"""The lowering-rule registry: one rule per dynamo op and requirement set, optionally per target.

A rule is `rule(ctx, op) -> ir.Value | list[ir.Value]`, called with the insertion point and
location set just before `op`; it builds linalg/tensor/arith/math IR computing op's results.
`ctx` (a `LoweringContext`, JAX's LoweringRuleContext) says for which target and with which
options: a target decides its library and precision policy where it lowers (the cpu matmul rule
keeps a matmul MKL will take a named linalg.matmul when `library_matmul` is on).

Rules say what they need, not whom they are for: `register_lowering(dy.SortOp, rule,
requires={"serial_loops"})`. A target declares the capabilities it has (`Target.capabilities`),
and lookup takes, for a target, the most specific rule it can run: its own rules
(`target="cuda"`, kept in codegen/<target>/rules.py) before generic ones, then the rule that
requires the most. (JAX's `register_lowering`, with tinygrad's capabilities as data.)

Registration cannot silently lose: a second rule for a key that already has one raises
DuplicateLoweringRule unless it says `override=True` (import order must not decide which rule
runs), and capability and target names are checked, so a typo raises instead of registering a
rule nothing ever looks up.
"""

from dataclasses import dataclass
from typing import Any, Callable, Iterable

Rule = Callable[..., object]


@dataclass(frozen=True)
class LoweringContext:
    """What a rule may ask about where it lowers: the target's name (None: generic lowering),
    its capabilities, and the compile's options (core `Options` bound to the target, whose own
    options are `options.target_options`; None outside a compile, e.g. a unit test)."""

    target: str | None = None
    capabilities: frozenset = frozenset()
    options: Any = None

    def target_option(self, name: str, default=None):
        """The target's option `name`, or `default` without options (or without that option)."""
        own = getattr(self.options, "target_options", None)
        return getattr(own, name, default)

# What a rule may require of a target: capability name -> what the rule's IR contains that a
# target must be able to compile and run. Keep this small; a target declares the ones it has.
CAPABILITIES = {
    "serial_loops": "scf.for/scf.while nests outside any linalg op that walk whole tensors element "
                    "by element (tensor.extract/insert on loop-carried tensors): sort, LU/Cholesky/"
                    "triangular solves, scatters. A target that only maps linalg ops onto parallel "
                    "hardware has nowhere to run them.",
    "scalar_math": "scalar bodies from the math library (lowering/math/): special functions, "
                   "orthogonal polynomials, Bessel functions, nextafter. Inside one linalg.generic "
                   "body they loop (scf.while), branch (scf.if), call libm (erfc, ...), compute in "
                   "f64 and work on float bit patterns.",
    "dynamic_shapes": "sizes known only at run time (`?` dims in tensor types, sizes as SSA values): "
                      "the target's stages, calling convention and runtime take them. Without it "
                      "the partitioner leaves every node with symbolic sizes eager.",
    "written_inputs": "a region computes a mutated input's new value into the caller's tensor itself "
                      "(an optimizer step's parameters and state: the `<target>-write-inputs-in-place` "
                      "pass and a runtime that passes inputs by reference). Without it the new values "
                      "are results, copied into the inputs after the region.",
    "channels_last_results": "a region's runtime returns a result the code wrote NHWC as the NCHW tensor "
                             "with channels-last strides over those bytes (a training forward's saved "
                             "activations: frontend/saved_layouts.py). Without it every result is dense.",
}


def declare_capability(name: str, doc: str) -> str:
    """Add a capability a plugin's rules may require and its targets declare (e.g. a vendor's
    matrix instructions). Declaring an existing name with another meaning raises."""
    if CAPABILITIES.get(name, doc) != doc:
        raise ValueError(f"capability '{name}' is already declared as: {CAPABILITIES[name]}")
    CAPABILITIES[name] = doc
    return name


_Key = tuple[str | None, frozenset[str]]  # (target, requirements)
_RULES: dict[str, dict[_Key, Rule]] = {}  # op name -> its rules
_TARGETS: dict[str, frozenset[str]] = {}  # declared target name -> its capabilities
_FOUND: dict[tuple[str, str | None], Rule] = {}  # lookup's answers, until a registration changes
_GENERATION = [0]  # counts registrations: answers remembered elsewhere (partition.py) hold until it moves


def _changed() -> None:
    _FOUND.clear()
    _GENERATION[0] += 1


def generation() -> int:
    """Changes whenever a rule or target is registered or removed."""
    return _GENERATION[0]


class NoLoweringRule(NotImplementedError):
    def __init__(self, op_name: str, target: str | None, missing: list[str] = ()):
        where = f" for target '{target}'" if target else ""
        lacks = f" (its rules require {', '.join(missing)}, which the target lacks)" if missing else ""
        super().__init__(
            f"no lowering rule for '{op_name}'{where}{lacks}: register one with "
            f"dynamo_mlir.lowering.register_lowering('{op_name}', rule)"
        )


class DuplicateLoweringRule(ValueError):
    def __init__(self, op_name: str, key: _Key):
        target, requires = key
        where = (f" for target '{target}'" if target else "") + (f" requiring {sorted(requires)}" if requires else "")
        super().__init__(f"'{op_name}' already has a lowering rule{where}; pass override=True to replace it")


def declare_target(name: str, capabilities: Iterable[str] = ()) -> None:
    """Make a target known to the registry (codegen's Target does this when it is built): its
    name, which target-specific rules are checked against, and the capabilities rules may need."""
    _TARGETS[name] = _checked_capabilities(capabilities)
    _changed()


def _checked_capabilities(names: Iterable[str]) -> frozenset[str]:
    names = frozenset([names] if isinstance(names, str) else names)
    unknown = names - CAPABILITIES.keys()
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")
    return names


def _checked_target(target: str | None) -> str | None:
    if target is not None and target not in _TARGETS:
        raise ValueError(f"unknown target '{target}' (declared targets: {sorted(_TARGETS)}); build the "
                         f"target's Target before importing its rules")
    return target


def _op_name(op) -> str:
    return op if isinstance(op, str) else op.OPERATION_NAME


def _op_names(op) -> list[str]:
    return [_op_name(o) for o in (op if isinstance(op, (list, tuple)) else [op])]


def register_lowering(op, rule: Rule | None = None, *, requires: Iterable[str] = (), target: str | None = None,
                      override: bool = False):
    """Register `rule` for `op` (an op class or its name, or a list of them); usable as a decorator.

    requires: capability names (CAPABILITIES) a target must have for this rule to apply.
    target: a declared target's name, for a rule only that target uses (it wins over generic ones).
    override: replace the rule registered under the same (op, target, requires) key."""
    names, key = _op_names(op), (_checked_target(target), _checked_capabilities(requires))

    def add(fn: Rule) -> Rule:
        for name in names:
            if key in _RULES.get(name, {}) and not override:
                raise DuplicateLoweringRule(name, key)
        for name in names:
            _RULES.setdefault(name, {})[key] = fn
        _changed()
        return fn

    return add(rule) if rule is not None else add


def remove_lowering(op, *, requires: Iterable[str] = (), target: str | None = None) -> Rule:
    """Unregister and return the rule under that exact key (tests, plugins replacing a rule)."""
    _changed()
    return _RULES[_op_name(op)].pop((target, _checked_capabilities(requires)))


def context_for(target: str | None, options=None) -> LoweringContext:
    """The context rules get when lowering for `target` (declared) with `options`."""
    return LoweringContext(target, _capabilities(target), options)


def _capabilities(target: str | None) -> frozenset[str]:
    if target is None:
        return frozenset()
    if target not in _TARGETS:
        raise KeyError(f"unknown target '{target}'; declared targets: {sorted(_TARGETS)}")
    return _TARGETS[target]


def _usable(op_name: str, target: str | None) -> list[tuple[tuple[bool, int], Rule]]:
    """(specificity, rule) of the rules for op_name that target can run, most specific first."""
    have = _capabilities(target)
    found = [((t is not None, len(requires)), rule) for (t, requires), rule in _RULES.get(op_name, {}).items()
             if t in (None, target) and requires <= have]
    return sorted(found, key=lambda pair: pair[0], reverse=True)


def lookup(op_name: str, target: str | None) -> Rule:
    """The rule for op_name on `target` (None: generic rules that require nothing)."""
    found = _FOUND.get((op_name, target))
    if found is None:
        found = _FOUND[(op_name, target)] = _most_specific(op_name, target)
    return found


def _most_specific(op_name: str, target: str | None) -> Rule:
    usable = _usable(op_name, target)
    if not usable:
        missing = {str(sorted(r)) for t, r in _RULES.get(op_name, {}) if t in (None, target) and r}
        raise NoLoweringRule(op_name, target, sorted(missing))
    if len(usable) > 1 and usable[0][0] == usable[1][0]:
        raise LookupError(f"two lowering rules for '{op_name}' on target '{target}' are equally specific")
    return usable[0][1]


def lowered_ops(target: str | None = None) -> list[str]:
    """The op names that have a rule `target` can run."""
    return sorted(name for name in _RULES if _usable(name, target))


def rules_for(target: str | None) -> list[tuple[str, str, str]]:
    """(op, requirements, the rule's module.qualname) of every rule `target` may use, sorted:
    part of the compile cache's key, so a rule registered, removed or replaced (a plugin, a test)
    never meets code another rule made."""
    return sorted((name, ",".join(sorted(requires)), f"{rule.__module__}.{getattr(rule, '__qualname__', '')}")
                  for name, rules in _RULES.items() for (t, requires), rule in rules.items() if t in (None, target))
