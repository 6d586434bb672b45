# pragma: category=activation
"""ReLU activation, y = max(x, 0)."""
import torch
import torch.nn as nn

BATCH = 8192
DIM = 8192


class Model(nn.Module):
    """Applies ReLU elementwise to a (BATCH, DIM) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
