# pragma: category=others
"""Masked cumulative sum, cumsum(x * mask) along dim 1, with a boolean mask input."""
import torch
import torch.nn as nn

BATCH = 128
LENGTH = 131072
SCAN_DIM = 1


class Model(nn.Module):
    """Zeroes the elements where mask is False, then takes the inclusive cumsum along dim SCAN_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * mask, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, LENGTH)
    mask = torch.randint(0, 2, (BATCH, LENGTH)).bool()
    return [x, mask]


def get_init_inputs():
    return [SCAN_DIM]
