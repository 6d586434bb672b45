# pragma: category=activation
"""Softmax over the last dimension of a (BATCH, DIM) tensor."""
import torch
import torch.nn as nn

BATCH = 4096
DIM = 16384


class Model(nn.Module):
    """Applies softmax along dim=1 (rows of length DIM)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
