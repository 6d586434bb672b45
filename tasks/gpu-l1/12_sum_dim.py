# pragma: category=pooling_reduction
"""Sum reduction over one dimension, keeping it (size 1)."""
import torch
import torch.nn as nn

BATCH = 64
DIM1 = 1024
DIM2 = 1024
REDUCE_DIM = 1


class Model(nn.Module):
    """Sums over dim REDUCE_DIM with keepdim=True."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
