# pragma: category=pooling_reduction
"""Argmax over one dimension (int64 output)."""
import torch
import torch.nn as nn

BATCH = 64
DIM1 = 1024
DIM2 = 1024
REDUCE_DIM = 1


class Model(nn.Module):
    """Returns the int64 index of the maximum along dim REDUCE_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
