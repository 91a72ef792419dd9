import pytest
import torch

import dynamo_mlir


@pytest.fixture(autouse=True)
def fresh_compiler_state():
    """Every test starts with no cached Dynamo graphs and empty compile statistics."""
    torch._dynamo.reset()
    dynamo_mlir.reset()
    yield
    torch._dynamo.reset()
