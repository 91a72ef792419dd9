import pytest


@pytest.fixture(autouse=True)
def own_compile_cache(tmp_path_factory, monkeypatch):
    """Each example test compiles into an empty compile cache of its own, never the user's
    (~/.cache/dynamo-mlir): a test that swaps a lowering rule must not meet another's code."""
    monkeypatch.setenv("DYNAMO_MLIR_CACHE_DIR", str(tmp_path_factory.mktemp("compile-cache")))
