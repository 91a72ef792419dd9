# Set-up and entry points. Every target installs what it needs into .venv on first use.
#   make demo    compile real models with backend="mlir" and show what happened
#   make test    run the test suite
# TORCH_VERSION overrides the torch pin (2.13.0 takes the local CPU build on the project's machines).
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup browser toolchains demo test bench clean

# The out-of-tree examples (examples/*: a dialect extension and two targets) are installed as
# the plugins they are, and tested with the suite.
EXAMPLES := $(patsubst %/pyproject.toml,%,$(wildcard examples/*/pyproject.toml))

$(VENV)/.installed: pyproject.toml $(addsuffix /pyproject.toml,$(EXAMPLES))
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==$(TORCH_VERSION)"
	$(PY) -m pip install -q -e ".[test]"
	for example in $(EXAMPLES); do $(PY) -m pip install -q --no-deps -e $$example || exit 1; done
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(PY) -m dynamo_mlir.tools.demo

# The HTML report is tested in headless Chromium (Debian's package), installed here where missing.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	    else echo "chromium missing and not root: the browser tests will be skipped"; fi; }

# The examples' tests need cross tools: qemu-user and an AArch64 gcc (the edge target runs its
# shared libraries under qemu), LLVM 19's lld, objdump and readelf (the rocm target links and
# disassembles gfx90a/gfx942 code objects; Debian's unversioned lld is LLVM 14, too old to link
# them). Exact Debian package names, each checked by the versioned command it provides. Installed
# as root where missing; else those tests skip.
TOOLCHAIN_PACKAGES := qemu-user gcc-aarch64-linux-gnu lld-19 llvm-19
toolchains:
	@missing=""; \
	  command -v qemu-aarch64 >/dev/null 2>&1 || missing="$$missing qemu-user"; \
	  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing="$$missing gcc-aarch64-linux-gnu"; \
	  command -v ld.lld-19 >/dev/null 2>&1 || missing="$$missing lld-19"; \
	  command -v llvm-objdump-19 >/dev/null 2>&1 || missing="$$missing llvm-19"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	    else echo "missing$$missing and not root: the examples' tests that need them will be skipped"; fi; fi

# One pytest worker per core (pytest-xdist); TEST_JOBS=0 runs in one process.
TEST_JOBS ?= $(shell nproc)
test: setup browser toolchains
	$(PY) -m pytest -q -n $(TEST_JOBS) tests examples

bench: setup
	$(PY) benchmarks/bench_models.py

clean:
	rm -rf $(VENV)
