# pragma: category=activation
"""Tanh activation."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 1048576


class Model(nn.Module):
    """Applies the hyperbolic tangent elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
