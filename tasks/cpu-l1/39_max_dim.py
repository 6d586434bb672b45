# pragma: category=pooling_reduction
"""Max over one dimension, returning both the values and their int64 indices (tuple output)."""
import torch
import torch.nn as nn

BATCH = 16
DIM1 = 1024
DIM2 = 1024
REDUCE_DIM = 1


class Model(nn.Module):
    """Returns (values, indices) of torch.max over dim REDUCE_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor):
        values, indices = torch.max(x, dim=self.dim)
        return values, indices


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
