# pragma: category=others
"""Reverse cumulative sum (suffix sum) along a dimension, via flip / cumsum / flip."""
import torch
import torch.nn as nn

BATCH = 128
LENGTH = 131072
SCAN_DIM = 1


class Model(nn.Module):
    """Computes y[i] = sum_{j >= i} x[j] along dim SCAN_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)


def get_inputs():
    x = torch.randn(BATCH, LENGTH)
    return [x]


def get_init_inputs():
    return [SCAN_DIM]
