# Set-up and entry points. Every target installs what it needs into .venv on first use.
#   make demo    compile real models with backend="mlir" and show what happened
#   make test    run the test suite
# TORCH_VERSION overrides the torch pin (2.13.0 takes the local CPU build on the project's machines).
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup browser demo test bench clean

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

test: setup browser
	$(PY) -m pytest -q tests

bench: setup
	$(PY) benchmarks/bench_models.py

clean:
	rm -rf $(VENV)
