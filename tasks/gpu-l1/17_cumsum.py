# pragma: category=others
"""Inclusive prefix sum (cumulative sum) along a dimension."""
import torch
import torch.nn as nn

BATCH = 256
LENGTH = 262144
SCAN_DIM = 1


class Model(nn.Module):
    """Computes torch.cumsum along dim SCAN_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, LENGTH)
    return [x]


def get_init_inputs():
    return [SCAN_DIM]
