"""Models for the CLI tests (and the docs' examples), one per MODEL convention."""

import torch


class MLP(torch.nn.Module):
    def __init__(self, sizes=(16, 32, 4)):
        super().__init__()
        self.fc1 = torch.nn.Linear(sizes[0], sizes[1])
        self.fc2 = torch.nn.Linear(sizes[1], sizes[2])

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mlp():
    """A factory: returns (callable, example_inputs)."""
    torch.manual_seed(0)
    return MLP(), (torch.randn(8, 16),)


# An nn.Module instance with its example inputs in a module-level `<name>_example_inputs`.
mlp_instance = MLP()
mlp_instance_example_inputs = (torch.randn(4, 16),)


def gelu_add(x, y):
    """A function; its example inputs are an attribute of it."""
    return torch.nn.functional.gelu(x) + y


gelu_add.example_inputs = (torch.randn(8, 8), torch.randn(8))


def wrong_inputs():
    """A factory whose inputs do not fit the model (16 features expected)."""
    return MLP(), (torch.randn(8, 5),)


def no_inputs(x):
    return x + 1


def with_fallback():
    """A model with an op the compiler runs eagerly, so reports have a fallback to show."""

    def fn(x):
        return torch.linalg.svdvals(torch.sin(x)) * 2  # an SVD: a LAPACK routine we leave to eager

    return fn, (torch.randn(6, 4),)


not_a_model = 3
