"""Training-step workloads for bench_models.py --train: forward + loss + backward + optimizer step.

Each backend gets its own copy of the model and optimizer, made from one seeded model, so every
backend runs the same sequence of steps from the same weights; the steps' losses are compared
against eager's (same step count, so the same trajectory) to say whether mlir matched.
"""

import copy

import torch

from dynamo_mlir.tools.models import mlp, transformer_block


def _adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def train_workloads(device: str):
    """name -> (model factory result, optimizer factory, inputs, target)."""
    torch.manual_seed(0)
    table = {
        "train_mlp_b256_adam": (mlp(), _adam, torch.randn(256, 10), torch.randn(256, 1)),
        "train_transformer_block_adam": (transformer_block(), _adam, torch.randn(8, 16, 64), torch.randn(8, 16, 64)),
    }
    return {name: (m.to(device), opt, x.to(device), y.to(device)) for name, (m, opt, x, y) in table.items()}


def make_step(model, make_optimizer):
    """A fresh copy of `model` and its optimizer, and the step function over them."""
    model = copy.deepcopy(model).train()
    opt = make_optimizer(model)
    loss_fn = torch.nn.MSELoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def losses_match(losses, reference, rtol: float = 1e-4) -> bool:
    """Step-by-step losses equal within rtol (fp32 reorderings grow slowly over steps)."""
    got, want = torch.stack([l.detach() for l in losses]), torch.stack([l.detach() for l in reference])
    return got.shape == want.shape and torch.allclose(got, want, rtol=rtol, atol=1e-6)
