# pragma: category=others
"""Exclusive cumulative sum along a dimension: y[0] = 0 and y[i] = sum_{j < i} x[j]."""
import torch
import torch.nn as nn

BATCH = 128
LENGTH = 131072
SCAN_DIM = 1


class Model(nn.Module):
    """Prepends a zero column, takes the inclusive cumsum, and drops the last column."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        zeros = torch.zeros_like(x.select(self.dim, 0).unsqueeze(self.dim))
        exclusive = torch.cat((zeros, x), dim=self.dim).narrow(self.dim, 0, x.size(self.dim))
        return torch.cumsum(exclusive, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, LENGTH)
    return [x]


def get_init_inputs():
    return [SCAN_DIM]
