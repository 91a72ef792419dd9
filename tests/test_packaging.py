"""What `pip install` puts in the wheel: every source folder of the package is listed in
pyproject.toml (setuptools installs only the packages named there; an editable install finds an
unlisted subfolder anyway, so nothing else would notice one missing: codegen/gpu was, and a
plain install's cuda target could not import)."""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ("frontend", "dialects", "lowering", "codegen", "tools")


def test_every_source_folder_is_an_installed_package():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {path for path in setuptools["package-dir"].values()}
    assert set(setuptools["packages"]) == set(setuptools["package-dir"]), "packages and package-dir differ"
    with_code = {str(p.parent.relative_to(ROOT)) for top in SOURCES for p in (ROOT / top).rglob("*.py")
                 if "__pycache__" not in p.parts}
    assert with_code <= folders, sorted(with_code - folders)
