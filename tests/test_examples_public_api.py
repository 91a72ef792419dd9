"""The out-of-tree examples (examples/*) use nothing but the public plugin API, and the core
names none of them: new hardware and new ops are packages, not edits of the core."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*") if (p / "pyproject.toml").exists())
CORE = ("frontend", "dialects", "lowering", "codegen")
# What an example may import from dynamo_mlir: the plugin API and the top-level report functions.
PUBLIC = {"dynamo_mlir", "dynamo_mlir.plugin"}


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            if node.module == "dynamo_mlir":  # `from dynamo_mlir import plugin` is fine; `tools` is not
                found += [(node.lineno, f"dynamo_mlir.{alias.name}") for alias in node.names
                          if alias.name not in ("plugin", "explain", "stats", "reset")]
    return found


def test_there_are_examples():
    assert {p.name for p in EXAMPLES} >= {"edge_aarch64", "rocm_target", "fused_rmsnorm"}, EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_an_example_imports_only_the_public_api(example):
    private = [f"{path.relative_to(ROOT)}:{line}: {name}"
               for path in example.rglob("*.py") for line, name in _imports(path)
               if name.split(".")[0] == "dynamo_mlir" and name not in PUBLIC]
    assert not private, "examples may import only dynamo_mlir.plugin:\n" + "\n".join(private)


def _example_names(example: pathlib.Path) -> set[str]:
    """The target names an example registers (its dynamo_mlir.targets entry points) and its
    package names, read from the example's files."""
    names, section = set(), None
    for line in (example / "pyproject.toml").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == '[project.entry-points."dynamo_mlir.targets"]' and "=" in line:
            names.add(line.split("=")[0].strip().strip('"'))
    return names | {p.name for p in example.rglob("__init__.py") if "tests" not in p.parts for p in [p.parent]}


def _plugin_dialects() -> set[str]:
    """The dialect namespaces the installed examples register (importing their packages)."""
    import importlib

    from dynamo_mlir import dialects

    before = dialects.namespaces()
    for example in EXAMPLES:
        for init in example.rglob("__init__.py"):
            if "tests" not in init.parts and init.parent.parent == example:
                importlib.import_module(init.parent.name)
    return set(dialects.namespaces() - before) | (set(dialects.namespaces()) - {"dynamo"})


def test_the_core_names_no_example():
    """No file of the core mentions an example's target, package or dialect (ops are
    `<dialect>.<op>`) as a quoted name or an import."""
    names = set().union(*(_example_names(e) for e in EXAMPLES))
    dialect_prefixes = {f"{ns}." for ns in _plugin_dialects()}
    assert names and dialect_prefixes, (names, dialect_prefixes)
    hits = []
    for folder in CORE:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            hits += [f"{path.relative_to(ROOT)}: {n}" for n in names
                     if f'"{n}"' in text or f"'{n}'" in text or f"import {n}" in text or f"{n}." in text and "_" in n]
            hits += [f"{path.relative_to(ROOT)}: {p}" for p in dialect_prefixes if f'"{p}' in text or f"'{p}" in text]
    assert not hits, "the core names an example:\n" + "\n".join(hits)
