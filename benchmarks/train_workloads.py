"""Training-step workloads of bench_models.py: forward + loss + backward + optimizer step.

The GPT-2 step is part of the default run; --train runs all of them. Each backend gets its own
copy of the model and optimizer, made from one seeded model, so every backend runs the same
sequence of steps from the same weights; the steps' losses are compared against eager's (same
step count, so the same trajectory) to say whether mlir matched.
"""

import copy
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from dynamo_mlir.tools.models import cnn, hf_model, mlp, transformer_block
from workloads import HAVE_TRANSFORMERS, TOKENS, VOCAB, WIDTH, Logits, tokens


@dataclass
class Training:
    model: nn.Module
    make_optimizer: Callable[[nn.Module], torch.optim.Optimizer]
    inputs: torch.Tensor
    target: torch.Tensor
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.mse_loss
    group: str = "models"  # the table it is reported in


def _adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def _adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3)


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)


def _token_loss(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


def _gpt2_step(g) -> Training:
    """GPT-2 (as in the inference table) predicting each next token (wrapping around), AdamW."""
    ids = tokens(g)
    model = Logits(hf_model("gpt2", width=WIDTH, vocab=VOCAB, positions=TOKENS[1]), "input_ids")
    return Training(model, _adamw, ids, ids.roll(-1, dims=1), _token_loss)


def _resnet50_step(g) -> Training:
    """ResNet-50 (transformers' default ResNetConfig, 1000 classes) at batch 2, SGD: issue 27's
    CPU training row (convolution and max-pool backward, batch norm in training mode)."""
    import transformers as t
    model = Logits(t.ResNetForImageClassification(t.ResNetConfig(num_labels=1000)), "pixel_values")
    return Training(model, _sgd, torch.randn(2, 3, 224, 224, generator=g), torch.randint(0, 1000, (2,), generator=g),
                    F.cross_entropy)


# name -> its builder, each run from seed 0; the GPT-2 step is the default run's (all: --train).
_BUILDERS = {
    "train_gpt2_adamw": lambda: _gpt2_step(torch.Generator().manual_seed(0)),
    "train_mlp_b256_adam": lambda: Training(mlp(), _adam, torch.randn(256, 10), torch.randn(256, 1)),
    "train_transformer_block_adam": lambda: Training(transformer_block(), _adam, torch.randn(8, 16, 64),
                                                     torch.randn(8, 16, 64)),
    # the demo's CNN at batch 32: convolution backward (input and weight gradients), batch
    # norm and max-pool backward. At a learning rate of 1e-2 it memorizes the batch in a
    # few steps and its loss trajectory is chaotic (eager's own at 1 and 2 threads parted
    # beyond the table's rtol in a one-off check); at 1e-3 they stay within it.
    "train_cnn_b32_sgd": lambda: Training(cnn(), _sgd, torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,)),
                                          F.cross_entropy),
    "train_resnet50_b2_sgd": lambda: _resnet50_step(torch.Generator().manual_seed(0)),
}
_NEED_TRANSFORMERS = ("train_gpt2_adamw", "train_resnet50_b2_sgd")


def training(name: str, device: str) -> Training:
    """The training workload `name` on `device`, built from seed 0."""
    torch.manual_seed(0)
    w = _BUILDERS[name]()
    w.model, w.inputs, w.target = w.model.to(device), w.inputs.to(device), w.target.to(device)
    return w


def train_workloads(device: str, everything: bool = True) -> dict[str, Training]:
    """name -> Training on `device`: all of them, or (everything=False) the GPT-2 step only
    (none without transformers). Each is built from seed 0."""
    names = [n for n in _BUILDERS if (everything or n == "train_gpt2_adamw")
             and (HAVE_TRANSFORMERS or n not in _NEED_TRANSFORMERS)]
    return {name: training(name, device) for name in names}


def make_step(w: Training):
    """A fresh copy of the workload's model and its optimizer, and the step function over them."""
    model = copy.deepcopy(w.model).train()
    opt = w.make_optimizer(model)

    def step(x, y):
        opt.zero_grad()
        loss = w.loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step.model = model  # its gradients after a call are that step's (bench_models --scale reads them)
    return step


def losses_match(losses, reference, rtol: float = 1e-4) -> bool:
    """Step-by-step losses equal within rtol (fp32 reorderings grow slowly over steps)."""
    got, want = torch.stack([l.detach() for l in losses]), torch.stack([l.detach() for l in reference])
    return got.shape == want.shape and torch.allclose(got, want, rtol=rtol, atol=1e-6)
