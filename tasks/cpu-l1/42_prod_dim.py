# pragma: category=pooling_reduction
"""Product reduction over one dimension, on inputs close to 1 so the result stays finite."""
import torch
import torch.nn as nn

BATCH = 24
DIM1 = 256
DIM2 = 4096
REDUCE_DIM = 1


class Model(nn.Module):
    """Multiplies the elements of a (BATCH, DIM1, DIM2) tensor along dim REDUCE_DIM."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


def get_inputs():
    x = 1.0 + 0.05 * torch.randn(BATCH, DIM1, DIM2)
    return [x]


def get_init_inputs():
    return [REDUCE_DIM]
