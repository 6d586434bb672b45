# pragma: category=pooling_reduction
"""Mean reduction over one dimension."""
import torch
import torch.nn as nn

BATCH = 24
DIM1 = 1024
DIM2 = 1024
REDUCE_DIM = 1


class Model(nn.Module):
    """Averages a (BATCH, DIM1, DIM2) tensor over dim REDUCE_DIM (the dimension is removed)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


def get_inputs():
    x = torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
