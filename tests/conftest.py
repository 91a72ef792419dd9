import os
import tempfile

import pytest
import torch

import dynamo_mlir

# The compile cache (codegen/cache.py) of the test run: never the user's.
os.environ["DYNAMO_MLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dynamo-mlir-test-cache-")


@pytest.fixture(autouse=True)
def fresh_compiler_state(tmp_path_factory, monkeypatch):
    """Every test starts with no cached Dynamo graphs, empty compile statistics and an empty
    compile cache of its own (a test that patches the compiler must not meet another test's
    code; tests/test_compile_cache.py tests the cache across processes)."""
    monkeypatch.setenv("DYNAMO_MLIR_CACHE_DIR", str(tmp_path_factory.mktemp("compile-cache")))
    torch._dynamo.reset()
    dynamo_mlir.reset()
    yield
    torch._dynamo.reset()
