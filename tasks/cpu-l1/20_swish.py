# pragma: category=activation
"""Swish / SiLU activation, y = x * sigmoid(x), written out by hand."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
DIM = 1048576


class Model(nn.Module):
    """Applies Swish elementwise as x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    x = torch.randn(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
